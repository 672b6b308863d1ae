import Foundation
import StrataEngine

/// Two processes on one store, for engines that declare ``EngineCapabilities/multiProcess``:
/// the second one is the engine's peer process (``ConformancePeer``).
enum MultiProcessCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("multiprocess", "each process reads the other's commits", requires: .multiProcess) { ctx in
            let store = try ctx.store(with: [(b("mine"), b("1"))])
            let peer = try ctx.peer()
            try expectEqual(try peer.ask("get " + hexString(b("mine"))), "value " + hexString(b("1")), "the peer reads this process's commit")
            try peer.ask("put " + hexString(b("theirs")) + " " + hexString(b("2")))
            try store.read { tx in try expectEqual(try tx.get(b("theirs")), b("2"), "this process reads the peer's commit") }
        },
        ConformanceCase("multiprocess", "writers in two processes serialize: one waits for the other's commit", requires: .multiProcess) { ctx in
            let store: SharedEngine = try ctx.store(with: [(b("k"), b("0"))])
            let peer = try ctx.peer()
            try expectEqual(try peer.ask("begin"), "began", "the peer's write transaction")
            try peer.ask("tx-put " + hexString(b("k")) + " " + hexString(b("peer")))
            let committed = Flag()
            let writer = BackgroundThread {
                try store.write { tx in
                    // Runs only after the peer committed: it reads the peer's value.
                    try expectEqual(try tx.get(b("k")), b("peer"), "this writer, after waiting, sees the peer's commit")
                    try tx.put(b("mine"), forKey: b("k"))
                }
                committed.set()
            }
            Thread.sleep(forTimeInterval: 0.3)
            try expectTrue(!committed.isSet, "this process's writer committed while the peer's transaction was open")
            try expectEqual(try peer.ask("commit"), "committed", "the peer's commit")
            try writer.join()
            try store.read { tx in try expectEqual(try tx.get(b("k")), b("mine"), "the later writer's value") }
            try expectEqual(try peer.ask("get " + hexString(b("k"))), "value " + hexString(b("mine")), "the peer reads the later value")
        },
        ConformanceCase("multiprocess", "a reader sees the other process's writes only once committed, and keeps its snapshot", requires: .multiProcess) { ctx in
            let store: SharedEngine = try ctx.store(with: [(b("a"), b("1"))])
            let peer = try ctx.peer()
            try peer.ask("begin")
            try peer.ask("tx-put " + hexString(b("b")) + " " + hexString(b("2")))
            try store.read { tx in try expectEqual(try tx.get(b("b")), nil, "an uncommitted write of the peer") }
            let snapshotTaken = Signal(), peerCommitted = Signal()
            let reader = BackgroundThread {
                try store.read { tx in
                    try expectEqual(try tx.get(b("b")), nil, "before the peer's commit")
                    snapshotTaken.fire()
                    try peerCommitted.wait("the peer's commit")
                    try expectEqual(try tx.get(b("b")), nil, "a snapshot taken before the peer's commit, read after it")
                    try expectEqual(try tx.keys(), [b("a")], "the snapshot's keys")
                }
            }
            try snapshotTaken.wait("the reader's snapshot")
            try expectEqual(try peer.ask("commit"), "committed", "the peer's commit")
            peerCommitted.fire()
            try reader.join()
            try store.read { tx in try expectEqual(try tx.get(b("b")), b("2"), "a read begun after the peer's commit") }
        },
    ]
}
