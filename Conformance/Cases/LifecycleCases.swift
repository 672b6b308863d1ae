import Foundation
import StrataEngine

/// Opening, closing and reopening stores.
enum LifecycleCases {
    static let all: [ConformanceCase] = closing + opening

    static let closing: [ConformanceCase] = [
        ConformanceCase("lifecycle", "data survives close and reopen", requires: .persistent) { ctx in
            let pairs = (0..<1_000).map { ([UInt8](counter: UInt64($0 * 7)), [UInt8](counter: UInt64($0))) }
            let store = try ctx.store(with: pairs)
            try store.write { tx in try tx.delete(pairs[0].0) }
            try store.close()
            let reopened = try ctx.open(EngineOptions(mode: .openExisting))
            try reopened.read { tx in
                try expectEqual(try tx.keys().count, 999, "key count after reopen")
                try expectEqual(try tx.get(pairs[1].0), pairs[1].1, "get after reopen")
                try expectEqual(try tx.get(pairs[0].0), nil, "deleted key after reopen")
            }
        },
        ConformanceCase("lifecycle", "relaxed durability keeps data across close and reopen", requires: .persistent) { ctx in
            let store = try ctx.open(EngineOptions(mode: .create, durability: .relaxed))
            try store.write { tx in for i in 0..<100 { try tx.put([UInt8(i)], forKey: [1, UInt8(i)]) } }
            try store.close()
            let reopened = try ctx.open(EngineOptions(mode: .openExisting))
            try reopened.read { tx in try expectEqual(try tx.keys().count, 100, "key count after reopen") }
        },
        ConformanceCase("lifecycle", "read and write after close are refused") { ctx in
            let store = try ctx.store(with: [(b("a"), b("1"))])
            try store.close()
            try expectError(.closed, "read after close") { try store.read { _ in } }
            try expectError(.closed, "write after close") { try store.write { _ in } }
        },
        ConformanceCase("lifecycle", "closing twice is harmless") { ctx in
            let store = try ctx.open()
            try store.close()
            try store.close()
        },
        ConformanceCase("lifecycle", "close waits for a running transaction") { ctx in
            let store: SharedEngine = try ctx.store(with: [(b("a"), b("1"))])
            let inside = Signal()
            let ended = Flag()
            let reader = BackgroundThread {
                try store.read { tx in
                    inside.fire()
                    Thread.sleep(forTimeInterval: 0.2)
                    try expectEqual(try tx.get(b("a")), b("1"), "read while close waits")
                    ended.set()
                }
            }
            try inside.wait()
            try store.close()
            try expectTrue(ended.isSet, "close returned before the running read ended")
            try reader.join()
        },
        ConformanceCase("lifecycle", "a writer waiting when close begins gets closed, not a crash") { ctx in
            let store: SharedEngine = try ctx.open()
            let inside = Signal(), release = Signal()
            let first = BackgroundThread {
                try store.write { tx in
                    try tx.put([], forKey: b("first"))
                    inside.fire()
                    try release.wait()
                }
            }
            try inside.wait()
            let waiting = BackgroundThread {
                do {
                    try store.write { tx in try tx.put([], forKey: b("second")) }
                } catch EngineError.closed {}  // refused as the store closed; committing first is fine too
            }
            Thread.sleep(forTimeInterval: 0.05)
            let closer = BackgroundThread { try store.close() }
            Thread.sleep(forTimeInterval: 0.05)
            release.fire()
            try first.join()
            try waiting.join()
            try closer.join()
            try expectError(.closed, "read after close") { try store.read { _ in } }
        },
    ]

    static let opening: [ConformanceCase] = [
        ConformanceCase("lifecycle", "opening a missing path without create fails and creates nothing", requires: .persistent) { ctx in
            let missing = ctx.directory + "/missing"
            try expectError(.notFound(path: missing), "open existing") { try ctx.open(EngineOptions(mode: .openExisting), at: missing) }
            try expectError(.notFound(path: missing), "open read-only") { try ctx.open(EngineOptions(mode: .readOnly), at: missing) }
            try expectEqual(try ctx.locations.entries(at: missing), nil, "what is at the path afterwards")
        },
        ConformanceCase("lifecycle", "opening an empty directory without create fails and writes nothing", requires: .persistent) { ctx in
            try expectError(.notFound(path: ctx.directory), "open existing") { try ctx.open(EngineOptions(mode: .openExisting)) }
            try expectEqual(try ctx.locations.entries(at: ctx.directory) ?? [], [], "entries at the location")
        },
        ConformanceCase("lifecycle", "opening a directory of foreign files fails and leaves them untouched", requires: .persistent) { ctx in
            try ctx.locations.writeEntry(Array("mine".utf8), named: "notes.txt", at: ctx.directory)
            for mode in [OpenMode.create, .openExisting] {
                try expectError("open \(mode) on a foreign directory", matching: {
                    if case .notAStore = $0 { return true }; if case .notFound = $0 { return true }; return false
                }) { try ctx.open(EngineOptions(mode: mode)) }
            }
            try expectEqual(try ctx.locations.entries(at: ctx.directory), ["notes.txt"], "entries at the location")
            try expectEqual(try ctx.locations.readEntry(named: "notes.txt", at: ctx.directory), Array("mine".utf8), "the foreign entry")
        },
        ConformanceCase("lifecycle", "opening a regular file fails and leaves it untouched", requires: .persistent) { ctx in
            let file = ctx.directory + "/file"
            try ctx.locations.writeObject(Array("plain file".utf8), at: file)
            try expectError("open a regular file", matching: { if case .notAStore = $0 { return true }; return false }) {
                try ctx.open(EngineOptions(mode: .create), at: file)
            }
            try expectEqual(try ctx.locations.readObject(at: file), Array("plain file".utf8), "the file")
        },
        ConformanceCase("lifecycle", "a read-only store reads and refuses writes", requires: .persistent) { ctx in
            let store = try ctx.store(with: [(b("a"), b("1"))])
            try store.close()
            let readOnly = try ctx.open(EngineOptions(mode: .readOnly))
            try readOnly.read { tx in try expectEqual(try tx.get(b("a")), b("1"), "get(a)") }
            try expectError(.readOnly(path: ctx.directory), "write") { try readOnly.write { tx in try tx.put([], forKey: b("b")) } }
            try readOnly.close()
            let again = try ctx.open(EngineOptions(mode: .openExisting))
            try again.read { tx in try expectEqual(try tx.keys(), [b("a")], "keys") }
        },
        ConformanceCase("lifecycle", "opening an open path again in the same process is refused", requires: .persistent) { ctx in
            let store = try ctx.store(with: [(b("a"), b("1"))])
            try expectError(.alreadyOpen(path: ctx.directory), "second open") { try ctx.open(EngineOptions(mode: .openExisting)) }
            try store.read { tx in try expectEqual(try tx.get(b("a")), b("1"), "the first instance still reads") }
            try store.close()
            let reopened = try ctx.open(EngineOptions(mode: .openExisting))
            try reopened.read { tx in try expectEqual(try tx.get(b("a")), b("1"), "reopened after close") }
        },
        ConformanceCase("lifecycle", "create on an existing store opens it with its data", requires: .persistent) { ctx in
            let store = try ctx.store(with: [(b("a"), b("1"))])
            try store.close()
            let again = try ctx.open(EngineOptions(mode: .create))
            try again.read { tx in try expectEqual(try tx.keys(), [b("a")], "keys") }
        },
    ]
}
