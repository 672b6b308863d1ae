import CLevelDB
import Foundation
@testable import StrataEngine
import StrataLevelDB
import Testing

@Suite("LevelDB adapter")
struct LevelDBTests {
    @Test("a store made through LevelDB's C API with another comparator is refused as not a store, files untouched")
    func otherComparator() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        // Reverse bytewise order, under a name of its own: what another program may have used.
        let comparator = leveldb_comparator_create(
            nil, { _ in },
            { _, a, alen, b, blen in
                let x = UnsafeRawBufferPointer(start: a, count: alen), y = UnsafeRawBufferPointer(start: b, count: blen)
                return y.lexicographicallyPrecedes(x) ? -1 : (x.lexicographicallyPrecedes(y) ? 1 : 0)
            },
            // A literal's bytes are static and end in NUL: LevelDB asks for the name often and
            // frees none (strdup here leaked a copy per call, which make sanitize reported).
            { _ in UnsafeRawPointer(("example.ReverseComparator" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self) })
        let options = leveldb_options_create()
        leveldb_options_set_create_if_missing(options, 1)
        leveldb_options_set_comparator(options, comparator)
        var err: UnsafeMutablePointer<CChar>?
        let db = leveldb_open(options, dir.path, &err)
        #expect(err == nil)
        let write = leveldb_writeoptions_create()
        leveldb_put(db, write, "a", 1, "1", 1, &err)
        leveldb_close(db)
        leveldb_writeoptions_destroy(write)
        leveldb_options_destroy(options)
        leveldb_comparator_destroy(comparator)

        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        let sizes = files.map { (try? FileManager.default.attributesOfItem(atPath: dir.path + "/" + $0)[.size] as? Int) ?? -1 }
        for mode in [OpenMode.openExisting, .readOnly] {
            do {
                _ = try LevelDBEngine(path: dir.path, options: EngineOptions(mode: mode))
                Issue.record("opened a store made with another comparator")
            } catch let EngineError.notAStore(path, reason) {
                #expect(path == dir.path)
                #expect(reason.hasPrefix("a LevelDB store made with another comparator") && reason.contains("example.ReverseComparator"), "\(reason)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == files)
        #expect(files.map { (try? FileManager.default.attributesOfItem(atPath: dir.path + "/" + $0)[.size] as? Int) ?? -1 } == sizes)
    }

    @Test("a write transaction indexes its WriteBatch only when a read needs it: a bulk load after a read keeps no second copy, and reads still see every write")
    func overlayIndexedOnDemand() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try LevelDBEngine(path: dir.path, options: EngineOptions())
        defer { try? engine.close() }
        func key(_ i: Int) -> [UInt8] { Array("k\(100_000 + i)".utf8) }
        func value(_ i: Int, _ round: Int) -> [UInt8] { Array("v\(i)-\(round)".utf8) }
        try engine.write { tx in
            let core = tx as! CoreTransaction
            #expect(try tx.get(key(0)) == nil)                     // a read before any write
            for i in 0..<1_000 { try tx.put(value(i, 1), forKey: key(i)) }
            #expect(core.overlayKeyCount == 0, "written only into the WriteBatch")
            #expect(try tx.get(key(500)) == value(500, 1))         // first rebuild
            #expect(core.overlayKeyCount == 1_000)
            for i in 500..<1_500 { try tx.put(value(i, 2), forKey: key(i)) }
            try tx.delete(key(3))
            #expect(core.overlayKeyCount == 1_000, "not indexed until read")
            let seen = try tx.pairs(KeyRange(lower: .inclusive(key(0)), upper: .exclusive(key(2_000))))  // second rebuild
            #expect(seen.count == 1_499)
            #expect(seen.allSatisfy { pair in
                let i = Int(String(decoding: pair.key.dropFirst(), as: UTF8.self))! - 100_000
                return pair.value == value(i, i < 500 ? 1 : 2)
            })
            // From now on every write is indexed as it is made.
            try tx.put(value(7, 3), forKey: key(7))
            try tx.delete(key(1_400))
            #expect(core.overlayKeyCount == 1_500)
            #expect(try tx.get(key(7)) == value(7, 3) && tx.get(key(1_400)) == nil && tx.get(key(3)) == nil)
        }
        let stored = try engine.read { tx in try tx.pairs(.all) }
        #expect(stored.count == 1_498)
        #expect(try engine.read { tx in try tx.get(key(7)) } == value(7, 3))
    }
}

@Suite("LevelDB log torn by a power loss")
struct LevelDBTornLogTests {
    /// A store of three synced commits (one key each) whose log is then damaged: `inRecord` 0 is
    /// the first commit's record, 2 the last; 40 bytes in its middle are flipped, its length kept.
    static func damagedStore(_ path: String, inRecord: Int) throws {
        let store = try LevelDBEngine(path: path)
        for i in 0..<3 { try store.write { (tx: any KeyValueWriter) throws in try tx.put([UInt8](repeating: UInt8(i), count: 200), forKey: [UInt8(i)]) } }
        try store.close()
        let logName = try #require(try FileManager.default.contentsOfDirectory(atPath: path).first { $0.hasSuffix(".log") })
        let log = path + "/" + logName
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: log)))
        // Each commit is one record: a 7-byte header, then a write batch holding the pair.
        var offset = 0
        for _ in 0..<inRecord { offset += 7 + (Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8) }
        for i in (offset + 60)..<(offset + 100) { bytes[i] ^= 0xFF }
        try Data(bytes).write(to: URL(fileURLWithPath: log))
    }

    @Test("a torn last record (a commit whose sync never returned) is dropped at open; earlier commits read")
    func tornTail() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try Self.damagedStore(dir.path, inRecord: 2)
        let store = try LevelDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        try store.read { (tx: any KeyValueReader) throws in
            #expect(try tx.keys() == [[0], [1]])
            #expect(try tx.get([1]) == [UInt8](repeating: 1, count: 200))
        }
        try store.write { (tx: any KeyValueWriter) throws in try tx.put([9], forKey: [9]) }
        try store.close()
        // Paranoid checks are back on: the store reopens and holds the new commit.
        let again = try LevelDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        #expect(try again.read { try $0.keys() } == [[0], [1], [9]])
        try again.close()
    }

    /// Found by the `files` fuzz target: recovery replays the log whose number equals the
    /// manifest's previous log number (usually 0), and making the name of log 0 fails an assertion
    /// in libleveldb (abort).
    @Test("a log file named as number 0 is refused as corrupt, not LevelDB's abort, in every open mode", arguments: ["000000.log", "0.log"])
    func logNumberZero(name: String) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LevelDBEngine(path: dir.path)
        try store.write { (tx: any KeyValueWriter) throws in try tx.put([1], forKey: [1]) }
        try store.close()
        let log = try #require(try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasSuffix(".log") })
        try FileManager.default.moveItem(atPath: dir.path + "/" + log, toPath: dir.path + "/" + name)
        let before = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        for mode in [OpenMode.openExisting, .create, .readOnly] {
            #expect { try LevelDBEngine(path: dir.path, options: EngineOptions(mode: mode)) } throws: { error in
                if case EngineError.corrupt(_, let detail) = error { return detail.contains(name) }
                return false
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == before, "no file made or removed")
    }

    @Test("damage followed by valid records is refused as corrupt, files left for repair")
    func damageInside() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try Self.damagedStore(dir.path, inRecord: 0)
        #expect { try LevelDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting)) } throws: { error in
            if case EngineError.corrupt = error { return true }
            return false
        }
    }
}
