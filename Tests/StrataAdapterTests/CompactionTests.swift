import Foundation
import StrataConformance
import StrataEngine
import StrataLMDB
import Testing

/// What `compact()` gives back on the engines with files, and that a crash during it loses
/// nothing. (Every engine's contract of compaction is in the conformance group `compaction`.)
@Suite("Compaction")
struct CompactionTests {
    /// 20,000 pairs of 16-byte random keys and 100-byte values.
    static func fill(_ store: any KeyValueEngine, count: Int = 20_000, seed: UInt64 = 7) throws -> [[UInt8]] {
        var random = SeededRandom(seed: seed)
        var keys: [[UInt8]] = []
        for start in stride(from: 0, to: count, by: 1_000) {
            try store.write { tx in
                for _ in start..<min(start + 1_000, count) {
                    let key = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
                    try tx.put((0..<100).map { _ in UInt8.random(in: 0...255, using: &random) }, forKey: key)
                    keys.append(key)
                }
            }
        }
        return keys
    }

    static func pairs(_ store: any KeyValueEngine) throws -> [([UInt8], [UInt8])] {
        try store.read { tx in try tx.pairs(.all) }
    }

    @Test("a store with a random half of its records deleted shrinks to at most 0.6 of its size, every pair kept",
          arguments: Engines.onDisk)
    func halfDeletedShrinks(engine: EngineUnderTest) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try engine.open(dir.path, EngineOptions(durability: .relaxed))
        var keys = try Self.fill(store)
        var random = SeededRandom(seed: 8)
        keys.shuffle(using: &random)
        try store.write { tx in for key in keys.prefix(keys.count / 2) { try tx.delete(key) } }
        let before = try Self.pairs(store)
        let report = try store.compact()
        #expect(report.ratio <= 0.6, "\(engine.name): \(report)")
        // LevelDB's own text log (LOG) may still grow a little after the report.
        #expect(abs(report.bytesAfter - directorySize(dir.path)) <= 4_096, "the report's size after is the files' size")
        let after = try Self.pairs(store)
        #expect(after.map(\.0) == before.map(\.0) && after.map(\.1) == before.map(\.1), "\(engine.name): the pairs after the compaction")
        try store.close()
    }

    @Test("LMDB: compaction needs the store alone: refused as locked while another process has it open, done once it closed it")
    func lmdbRefusedWhileShared() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LMDBEngine(path: dir.path)
        _ = try Self.fill(store, count: 2_000)
        let holder = try BackgroundProcess(harnessTool, ["probe", "--engine", "lmdb", "--path", dir.path, "--hold", "3"])
        #expect(holder.waitFor("opened"))
        #expect(throws: EngineError.locked(path: dir.path)) { try store.compact() }
        #expect(FileManager.default.fileExists(atPath: dir.path + "/data.mdb.compact") == false, "no copy left by a refused compaction")
        // Writes go on after the refusal.
        try store.write { tx in try tx.put([1], forKey: [1]) }
        #expect(holder.wait() == 0, "\(holder.output)")
        // This process holds its share of the store again: another process's compaction is refused.
        let other = try runProgram(strataTool, ["compact", "--engine", "lmdb", dir.path])
        #expect(other.status == 2 && other.output.contains("another process has the store open"), "\(other.output)")
        _ = try store.compact()
        try store.read { (tx: any KeyValueReader) throws in #expect(try tx.get([1]) == [1]) }
        // After its compaction this process shares the store again: another process opens it at once.
        let reader = try runProgram(harnessTool, ["probe", "--engine", "lmdb", "--path", dir.path, "--get", "01"])
        #expect(reader.status == 0, "\(reader.output)")
        try store.close()
    }

    @Test("LMDB: a program other than Strata with the environment open (py-lmdb) makes the compaction refuse, as locked")
    func lmdbRefusedWhileForeignProgramHasIt() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LMDBEngine(path: dir.path)
        _ = try Self.fill(store, count: 1_000)
        let script = "import lmdb, sys, time\nenv = lmdb.open(sys.argv[1], readonly=True, lock=True)\nprint('opened', flush=True)\ntime.sleep(3)\n"
        // Debian's python3, where python3-lmdb (make deps) installs the module; another python3 on PATH lacks it.
        let interpreter = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : try tool("python3", package: "python3-lmdb")
        let python = try BackgroundProcess(interpreter, ["-c", script, dir.path])
        #expect(python.waitFor("opened"), "\(python.output)")
        #expect(throws: EngineError.locked(path: dir.path)) { try store.compact() }
        #expect(python.wait() == 0, "\(python.output)")
        _ = try store.compact()
        try store.close()
    }

    @Test("SQLite: compaction while another process has the store open; that process reads every pair and writes on")
    func sqliteWhileShared() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Engines.sqlite.open(dir.path, EngineOptions())
        let keys = try Self.fill(store, count: 4_000)
        try store.write { tx in for key in keys.prefix(3_000) { try tx.delete(key) } }
        try store.write { tx in try tx.put(Array("mine".utf8), forKey: Array("a".utf8)) }
        let holder = try BackgroundProcess(harnessTool, ["probe", "--engine", "sqlite", "--path", dir.path, "--hold", "2"])
        #expect(holder.waitFor("opened"))
        let report = try store.compact()
        #expect(report.ratio < 0.6, "\(report)")
        #expect(holder.wait() == 0, "\(holder.output)")
        let after = try runProgram(harnessTool, ["probe", "--engine", "sqlite", "--path", dir.path, "--put", "b=theirs", "--get", "a"])
        #expect(after.output.contains("value: mine"), "\(after.output)")
        try store.read { (tx: any KeyValueReader) throws in
            #expect(try tx.get(Array("b".utf8)) == Array("theirs".utf8))
            #expect(try tx.keys().count == 1_000 + 2)
        }
        try store.close()
    }

    @Test("LMDB: a copy left by a compaction that died is removed at the next open")
    func lmdbLeftoverCopyRemoved() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try LMDBEngine(path: dir.path).close()
        let leftover = dir.path + "/data.mdb.compact"
        #expect(FileManager.default.createFile(atPath: leftover, contents: Data(repeating: 7, count: 4096)))
        let store = try LMDBEngine(path: dir.path)
        #expect(!FileManager.default.fileExists(atPath: leftover))
        try store.close()
    }

    @Test("kill -9 during `strata compact` leaves the store whole, as before or after: 12 kills per engine, pairs compared after each",
          arguments: Engines.onDisk)
    func killedDuringCompaction(engine: EngineUnderTest) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        var random = SeededRandom(seed: 11)
        var store = try engine.open(dir.path, EngineOptions(durability: .relaxed))
        _ = try Self.fill(store, seed: 12)
        try store.close()
        // How long a whole compaction takes here, from the line the tool prints before it starts.
        let timed = try BackgroundProcess(strataTool, ["compact", "--engine", engine.name, dir.path])
        #expect(timed.waitFor("compacting"))
        let start = Date()
        #expect(timed.wait() == 0, "\(timed.output)")
        let duration = max(Date().timeIntervalSince(start), 0.01)
        var copiesLeft = 0
        for round in 0..<12 {
            // Changes since the last round, so that each compaction has room to give back.
            store = try engine.open(dir.path, EngineOptions(mode: .openExisting, durability: .relaxed))
            let added = try Self.fill(store, count: 2_000, seed: 100 + UInt64(round))
            try store.write { tx in for key in added.prefix(1_000) { try tx.delete(key) } }
            let expected = try Self.pairs(store)
            try store.close()
            let child = try BackgroundProcess(strataTool, ["compact", "--engine", engine.name, dir.path])
            #expect(child.waitFor("compacting"), "\(child.output)")
            Thread.sleep(forTimeInterval: Double.random(in: 0...(duration * 0.7), using: &random))
            kill(child.process.processIdentifier, SIGKILL)
            _ = child.wait()
            if FileManager.default.fileExists(atPath: dir.path + "/data.mdb.compact") { copiesLeft += 1 }
            store = try engine.open(dir.path, EngineOptions(mode: .openExisting, durability: .relaxed))
            let found = try Self.pairs(store)
            #expect(found.map(\.0) == expected.map(\.0) && found.map(\.1) == expected.map(\.1),
                    "\(engine.name) round \(round): \(found.count) pairs after the kill, \(expected.count) before")
            try store.close()
        }
        if engine.name == "lmdb" {
            // Most kills land while the copy is written: the test would not show much otherwise.
            #expect(copiesLeft >= 1, "no kill landed while LMDB's copy was being written (\(copiesLeft) of 12)")
            #expect(!FileManager.default.fileExists(atPath: dir.path + "/data.mdb.compact"), "the last copy left was removed at the open")
        }
    }
}

/// The bytes of the regular files directly in `path`.
func directorySize(_ path: String) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    return names.reduce(0) { total, name in
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + name)
        guard attributes?[.type] as? FileAttributeType == .typeRegular else { return total }
        return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
    }
}
