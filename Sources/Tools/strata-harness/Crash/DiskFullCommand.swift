import ArgumentParser
import Foundation
import StrataEngine
import StrataToolSupport

/// `strata-harness disk-full`: run on a small filesystem (the test mounts a tmpfs). Fills the disk through
/// the engine, then checks: the failing transaction reports `diskFull`, earlier commits are intact,
/// and the store works again once space returns (a filler file is deleted).
struct DiskFull: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Fill the disk under a store (test helper).", shouldDisplay: false)

    @Option var engine: EngineChoice
    @Option var path: String
    @Option(help: "A file to create first and delete to give space back.") var filler: String
    @Option(help: "Bytes of the filler.") var fillerSize = 1 << 20

    func run() throws {
        try Data(count: fillerSize).write(to: URL(fileURLWithPath: filler))
        var store = try engine.open(path, EngineOptions(mode: .create, durability: .full))
        let value = [UInt8](repeating: 0x5A, count: 4_000)
        func key(_ txn: Int, _ i: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(txn).bigEndian) { Array($0) } + [UInt8(i)] }
        func commit(_ txn: Int) throws { try store.write { tx in for i in 0..<16 { try tx.put(value, forKey: key(txn, i)) } } }
        func verify(_ count: Int, _ when: String) throws {
            let keys = try store.read { tx in try tx.keys() }
            let expected = (0..<count).flatMap { t in (0..<16).map { key(t, $0) } }
            guard keys == expected else { throw ValidationError("\(when): \(keys.count) keys, expected \(expected.count)") }
            for k in keys.prefix(50) { guard try store.read({ try $0.get(k) }) == value else { throw ValidationError("\(when): a value changed") } }
        }
        var committed = 0
        var failure: EngineError?
        while committed < 100_000 {
            do {
                try commit(committed)
                committed += 1
            } catch let error as EngineError {
                failure = error
                break
            }
        }
        guard case .diskFull = failure else { throw ValidationError("expected diskFull, got \(failure.map { "\($0)" } ?? "no error")") }
        say("disk full after \(committed) transactions: \(failure!)")
        try verify(committed, "after the disk filled")
        // A retry while the disk is still full fails the same way (LevelDB's reopen needs space,
        // so its reads fail too until space returns).
        do {
            try commit(committed)
            throw ValidationError("a write succeeded on a full disk")
        } catch let error as EngineError {
            guard case .diskFull = error else { throw ValidationError("retry on a full disk: expected diskFull, got \(error)") }
        }
        // A compaction needs room for what it writes (LMDB's copy, SQLite's log, LevelDB's
        // tables): on a full disk it fails the same way and loses nothing (checked below, once
        // space is back: LevelDB reads nothing until then).
        do {
            let report = try store.compact()
            say("compaction on a full disk: \(report)")
        } catch let error as EngineError {
            guard case .diskFull = error else { throw ValidationError("compaction on a full disk: expected diskFull, got \(error)") }
            say("compaction on a full disk: \(error)")
        }
        try FileManager.default.removeItem(atPath: filler)
        // Space is back: the same store instance writes again.
        var after = 0
        for _ in 0..<5 {
            try commit(committed)
            committed += 1
            after += 1
        }
        try verify(committed, "after space returned")
        // On a 3 MiB disk the room given back may still be too little for a copy of the store.
        do {
            say("compaction once space returned: \(try store.compact())")
        } catch let error as EngineError {
            guard case .diskFull = error else { throw ValidationError("compaction once space returned: expected a report or diskFull, got \(error)") }
            say("compaction once space returned: \(error)")
        }
        try verify(committed, "after that compaction")
        try commit(committed)
        committed += 1
        try store.close()
        store = try engine.open(path, EngineOptions(mode: .openExisting))
        try verify(committed, "after reopening")
        try store.close()
        say("ok: \(after) transactions committed after space returned, 1 after the compaction; \(committed) intact after reopening")
    }
}
