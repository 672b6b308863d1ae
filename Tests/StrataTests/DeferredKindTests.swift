import Foundation
import StrataBundledEngines
@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// A record without indexes: its puts are the ones whose kinds are told as the body returns on
/// storage that buffers its writes (`DeferredKinds`).
private struct Tallied: Record, Equatable {
    var id: Int
    var count: Int
    static let recordType = RecordType(keyspace: "Tallied", key: [("id", Int.self)], fields: [("count", Int.fieldFormat)])
    init(id: Int, count: Int) { (self.id, self.count) = (id, count) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(count) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); count = try fields.read() }
}

/// Inserts and updates told apart without a read per put on LevelDB and etcd: the engine's walk
/// of the state a transaction began from (`StartStateReading`), and the record layer's kinds
/// decided from it as the body returns, against a model, on every engine.
@Suite("Kinds told as the body returns")
struct DeferredKindTests {
    private static func key(_ i: Int) -> [UInt8] { [0x40, UInt8(i >> 8), UInt8(i & 0xFF)] }

    @Test("keysHeld(atStart:) answers from the state the transaction began in, whatever it wrote since; storage that reads its own writes refuses it",
          arguments: TestEngines.all)
    func keysHeldAtStart(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try kind.open(dir.path)
        defer { try? engine.close() }
        var rng = SeededGenerator(seed: 0x57A7)
        // Stored: dense runs (more than the walk passes over before it seeks again) and sparse keys.
        let stored = Set((0..<3_000).filter { $0 % 500 < 40 || Int.random(in: 0..<9, using: &rng) == 0 })
        try engine.write { tx in
            for i in stored { try Self.key(i).withUnsafeBytes { k in try [UInt8(1)].withUnsafeBytes { try tx.put($0, forKey: k) } } }
            try [UInt8(1)].withUnsafeBytes { v in try [UInt8(0x41)].withUnsafeBytes { try tx.put(v, forKey: $0) } }  // a key above every asked one
        }
        struct Rollback: Error {}
        for round in 0..<20 {
            // Half the rounds with a stored key above every asked one (the walk meets it), half
            // without (the walk reaches the end of the store).
            if round == 10 {
                try engine.write { tx in try [UInt8(0x41)].withUnsafeBytes { try tx.delete($0) } }
            }
            do {
                try engine.write { tx in
                    guard let start = tx as? any StartStateReading, start.readsStartState else {
                        #expect(kind.declaration.readsOwnWrites, "\(kind): storage that buffers its writes reads its start")
                        if let start = tx as? any StartStateReading {
                            #expect(throws: EngineError.self) { try start.keysHeld(atStart: PackedKeys()) }
                        }
                        return
                    }
                    #expect(!kind.declaration.readsOwnWrites)
                    // The transaction's own writes first: puts and deletes, of stored keys and others.
                    for _ in 0..<200 {
                        let i = Int.random(in: 0..<3_000, using: &rng)
                        try Self.key(i).withUnsafeBytes { k in
                            if Bool.random(using: &rng) { try [UInt8(2)].withUnsafeBytes { try tx.put($0, forKey: k) } } else { try tx.delete(k) }
                        }
                    }
                    // Every third key, or every fortieth, and keys above every stored one.
                    let asked = (0..<3_000).filter { _ in Int.random(in: 0..<(round % 2 == 0 ? 3 : 40), using: &rng) == 0 } + [3_100, 3_200]
                    var packed = PackedKeys()
                    for i in asked { Self.key(i).withUnsafeBytes { packed.append($0) } }
                    let held = try start.keysHeld(atStart: packed)
                    let wrong = zip(asked, held).filter { stored.contains($0.0) != $0.1 }
                    #expect(wrong.isEmpty, "\(kind) round \(round): \(wrong.count) of \(asked.count) wrong, first \(wrong.prefix(3))")
                    // Keys out of order are refused, and the transaction goes on.
                    var unordered = PackedKeys()
                    for i in [5, 4] { Self.key(i).withUnsafeBytes { unordered.append($0) } }
                    #expect(throws: EngineError.self) { try start.keysHeld(atStart: unordered) }
                    #expect(try start.keysHeld(atStart: PackedKeys()) == [])
                    throw Rollback()
                }
            } catch is Rollback {}
        }
        // Every round rolled back: the stored keys are as written.
        try engine.read { tx in
            var seen = Set<Int>()
            try tx.scan(.prefix([0x40]), reverse: false, limit: nil) { key, _ in
                seen.insert(Int(key[1]) << 8 | Int(key[2]))
                return true
            }
            #expect(seen == stored)
        }
    }

    @Test("the change feed tells inserts from updates as a model does: fills in order and out of it, keys written twice, deleted and written again, beside an indexed type",
          arguments: TestEngines.all)
    func feedKindsAgainstModel(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.enableChangeFeed()
            var rng = SeededGenerator(seed: 0xD1F7)
            var present = Set<Int>(), members = Set<Int>()
            var expected: [RecordChange] = []
            func change(_ id: Int, _ kind: RecordChange.Kind, _ keyspace: String = "Tallied") -> RecordChange {
                RecordChange(keyspace: keyspace, key: EncodedIndexKey(bytes: KeyCodec.encode(id)), kind: kind)
            }
            struct Abort: Error {}
            for step in 0..<150 {
                var working = present, workingMembers = members
                var made: [RecordChange] = []
                let abort = step % 11 == 5
                do {
                    try store.withTransaction { ctx in
                        switch step % 5 {
                        case 0:  // a fill in key order: new keys, and some stored ones among them
                            let from = Int.random(in: 0..<2_000, using: &rng)
                            for id in from..<(from + Int.random(in: 1...300, using: &rng)) {
                                try ctx.insert(Tallied(id: id, count: step))
                                made.append(change(id, working.insert(id).inserted ? .insert : .update))
                            }
                        default:  // random writes of few keys: repeats, deletes and writes again, an indexed type between
                            for _ in 0..<Int.random(in: 1...40, using: &rng) {
                                let id = Int.random(in: 0..<60, using: &rng) * (step % 2 == 0 ? 1 : 37)
                                switch Int.random(in: 0..<10, using: &rng) {
                                case 0..<5:
                                    try ctx.insert(Tallied(id: id, count: step))
                                    made.append(change(id, working.insert(id).inserted ? .insert : .update))
                                case 5, 6:
                                    #expect(try ctx.delete(Tallied(id: id, count: 0)) == working.contains(id))
                                    if working.remove(id) != nil { made.append(change(id, .delete)) }
                                case 7:
                                    if try ctx.insertIfAbsent(Tallied(id: id, count: -step)) {
                                        #expect(working.insert(id).inserted)
                                        made.append(change(id, .insert))
                                    }
                                case 8:
                                    let gone = working.filter { (id..<(id + 40)).contains($0) }.sorted()
                                    #expect(try ctx.delete(Tallied.self, .all.then(Comparison.range(id..<(id + 40)))) == gone.count)
                                    working.subtract(gone)
                                    made += gone.map { change($0, .delete) }
                                default:
                                    try ctx.insert(Member(id: id, email: "m\(id).\(step)@x", city: "A", age: 1))
                                    made.append(change(id, workingMembers.insert(id).inserted ? .insert : .update, "Member"))
                                }
                            }
                        }
                        // Every transaction's changes were listed from its first, on storage that buffers its writes.
                        #expect(ctx.defersKinds == !kind.declaration.readsOwnWrites, "\(kind) step \(step)")
                        if abort { throw Abort() }
                    }
                    (present, members) = (working, workingMembers)
                    expected += made
                } catch is Abort {}
            }
            var told: [RecordChange] = []
            var token: ChangeToken?
            repeat {
                let page = try store.changes(since: token)
                told += page.entries.map(\.change)
                token = page.next
                if page.isAtEnd { break }
            } while true
            #expect(told.count == expected.count, "\(kind): \(told.count) changes told, \(expected.count) made")
            if let first = zip(told, expected).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
                Issue.record("\(kind): change \(first) told as \(told[first]), made as \(expected[first])")
            }
        }
    }
}
