import Foundation
import StrataEngine

/// `compact()`: the room of deleted pairs given back, every pair kept, the store usable after it.
/// How much room comes back is each engine's (the adapters' tests measure it); what stays is the
/// contract's.
enum CompactionCases {
    /// Pairs of every shape: keys of 1 to 511 bytes (the ends of the key space among them),
    /// values from empty to larger than a page.
    static let fixture: [([UInt8], [UInt8])] = {
        var random = SeededRandom(seed: 41)
        var pairs: [[UInt8]: [UInt8]] = [[0x00]: [], [UInt8](repeating: 0xFF, count: KeyLimits.maxKeyLength): [7],
                                         [0x00, 0x00]: [UInt8](repeating: 1, count: 70_000)]
        while pairs.count < 3_000 {
            let key = (0..<(1 + Int(random.next() % 40))).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let length = random.next() % 50 == 0 ? 9_000 : Int(random.next() % 300)
            pairs[key] = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        }
        return pairs.sorted { referenceLess($0.key, $1.key) }.map { ($0.key, $0.value) }
    }()

    /// A store holding `fixture` with about half of it deleted (a range cleared and every third
    /// pair of the rest), in transactions small enough for every engine's limits.
    static func halfDeleted(_ ctx: CaseContext) throws -> any KeyValueEngine {
        let store = try ctx.open()
        for start in stride(from: 0, to: fixture.count, by: 100) {
            try store.write { tx in for (k, v) in fixture[start..<min(start + 100, fixture.count)] { try tx.put(v, forKey: k) } }
        }
        _ = try store.write { tx in try tx.clear(.halfOpen([0x40], [0x80])) }
        for start in stride(from: 0, to: fixture.count, by: 300) {
            try store.write { tx in
                for i in stride(from: start, to: min(start + 300, fixture.count), by: 3) { try tx.delete(fixture[i].0) }
            }
        }
        return store
    }

    /// What ``halfDeleted(_:)`` leaves, by the reference model.
    static let survivors: [Pair] = fixture.enumerated()
        .filter { i, pair in i % 3 != 0 && !referenceContains(.halfOpen([0x40], [0x80]), pair.0) }
        .map { Pair($0.1.0, $0.1.1) }

    static let all: [ConformanceCase] = [
        ConformanceCase("compaction", "keeps every pair, in both directions, and the store goes on") { ctx in
            let store = try halfDeleted(ctx)
            let before = try store.read { tx in try tx.collect() }
            try expectSameList(before, survivors, "pairs before the compaction")
            _ = try store.compact()
            try store.read { tx in
                try expectSameList(try tx.collect(), before, "pairs after the compaction")
                try expectSameList(try tx.collect(reverse: true), before.reversed(), "pairs after the compaction, reverse")
            }
            try store.write { tx in
                try tx.put(b("after"), forKey: [0x40, 0x01])
                try tx.delete(before[0].key)
            }
            let changed = (before.dropFirst() + [Pair([0x40, 0x01], b("after"))]).sorted { referenceLess($0.key, $1.key) }
            try store.read { tx in try expectSameList(try tx.collect(), changed, "pairs after writes that follow the compaction") }
            // A second compaction of a compacted store changes nothing either.
            _ = try store.compact()
            try store.read { tx in try expectSameList(try tx.collect(), changed, "pairs after a second compaction") }
            guard ctx.engine.capabilities.contains(.persistent) else { return }
            try store.close()
            let reopened = try ctx.open(EngineOptions(mode: .openExisting))
            try reopened.read { tx in try expectSameList(try tx.collect(), changed, "pairs after a reopen") }
        },
        ConformanceCase("compaction", "of an empty store leaves it empty and usable") { ctx in
            let store = try ctx.open()
            _ = try store.compact()
            try store.read { tx in try expectEqual(try tx.keys(), [], "keys") }
            try store.write { tx in try tx.put(b("1"), forKey: b("a")) }
            try store.read { tx in try expectEqual(try tx.get(b("a")), b("1"), "get(a)") }
        },
        ConformanceCase("compaction", "inside a transaction of the same store is refused as nested") { ctx in
            let store = try ctx.store(with: [(b("a"), b("1"))])
            try expectError(.nestedTransaction, "compact inside a write") { try store.write { _ in try store.compact() } }
            try expectError(.nestedTransaction, "compact inside a read") { try store.read { _ in try store.compact() } }
            try store.read { tx in try expectEqual(try tx.get(b("a")), b("1"), "get(a)") }
        },
        ConformanceCase("compaction", "of a closed store is refused") { ctx in
            let store = try ctx.store(with: [(b("a"), b("1"))])
            try store.close()
            try expectError(.closed, "compact after close") { try store.compact() }
        },
        ConformanceCase("compaction", "of a store opened read-only is refused", requires: .persistent) { ctx in
            let store = try ctx.store(with: [(b("a"), b("1"))])
            try store.close()
            let readOnly = try ctx.open(EngineOptions(mode: .readOnly))
            try expectError(.readOnly(path: ctx.directory), "compact read-only") { try readOnly.compact() }
            try readOnly.read { tx in try expectEqual(try tx.get(b("a")), b("1"), "get(a)") }
        },
        ConformanceCase("compaction", "while another process has the store open: done, and both processes read every pair; or refused as locked, and nothing changed",
                        requires: .multiProcess) { ctx in
            let store = try halfDeleted(ctx)
            let peer = try ctx.peer()
            try peer.ask("put " + hexString(b("peer")) + " " + hexString(b("1")))
            let before = try store.read { tx in try tx.collect() }
            do {
                _ = try store.compact()
            } catch EngineError.locked(let path) {
                try expectEqual(path, ctx.directory, "the locked store's path")
            }
            try store.read { tx in try expectSameList(try tx.collect(), before, "pairs after the compaction") }
            let sample = before[before.count / 2]
            try expectEqual(try peer.ask("get " + hexString(sample.key)), "value " + hexString(sample.value), "the peer reads a pair after the compaction")
            try peer.ask("put " + hexString(b("peer")) + " " + hexString(b("2")))
            try store.read { tx in try expectEqual(try tx.get(b("peer")), b("2"), "the peer's write after the compaction") }
        },
    ]
}
