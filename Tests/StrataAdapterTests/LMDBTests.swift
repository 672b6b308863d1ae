import Foundation
@testable import StrataConformance
import StrataEngine
import CLMDB
@testable import StrataLMDB
import StrataRecords
import Testing

@Suite("LMDB adapter")
struct LMDBTests {
    static func key(_ i: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(i).bigEndian) { Array($0) } }

    @Test("relaxed durability skips only the meta page's sync (MDB_NOMETASYNC), never the data pages' (MDB_NOSYNC)")
    func relaxedIsNoMetaSync() throws {
        for durability in [Durability.full, .relaxed] {
            let dir = TemporaryDirectory()
            defer { dir.cleanup() }
            let store = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .create, durability: durability))
            defer { try? store.close() }
            let flags = store.environmentFlags
            #expect(flags & UInt32(MDB_NOSYNC) == 0, "\(durability): MDB_NOSYNC set")
            #expect((flags & UInt32(MDB_NOMETASYNC) != 0) == (durability == .relaxed), "\(durability): flags \(String(flags, radix: 16))")
            #expect(flags & UInt32(MDB_NOTLS) != 0)
        }
    }

    @Test("a full map grows and the transaction commits without the caller seeing an error")
    func mapGrowth() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let initial = 1 << 20
        let store = try LMDBEngine(path: dir.path, lmdb: LMDBOptions(mapSize: initial))
        let value = [UInt8](repeating: 0xAB, count: 1_000)
        // One transaction larger than the whole initial map (3 MiB of values).
        var bodyRuns = 0
        try store.write { (tx: any KeyValueWriter) throws in
            bodyRuns += 1
            for i in 0..<3_000 { try tx.put(value, forKey: Self.key(i)) }
        }
        #expect(bodyRuns == 1, "the closure ran \(bodyRuns) times")
        // Then many small transactions, well past the map again, with a clear and reads in them.
        for batch in 0..<20 {
            try store.write { (tx: any KeyValueWriter) throws in
                for i in 0..<500 { try tx.put(value, forKey: Self.key(10_000 + batch * 500 + i)) }
                try tx.clear(.halfOpen(Self.key(10_000 + batch * 500), Self.key(10_000 + batch * 500 + 10)))
                #expect(try tx.get(Self.key(10_000 + batch * 500 + 10)) == value)
            }
        }
        #expect(store.mapSize > initial, "the map did not grow")
        try store.read { (tx: any KeyValueReader) throws in
            #expect(try tx.keys(.halfOpen(Self.key(0), Self.key(3_000))).count == 3_000)
            #expect(try tx.keys(KeyRange(lower: .inclusive(Self.key(10_000)))).count == 20 * 490)
            #expect(try tx.get(Self.key(2_999)) == value)
        }
        try store.close()
        // Everything is there after reopening with the small configured map.
        let reopened = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting), lmdb: LMDBOptions(mapSize: initial))
        try reopened.read { (tx: any KeyValueReader) throws in #expect(try tx.keys().count == 3_000 + 20 * 490) }
        try reopened.close()
    }

    @Test("a transaction that nears the map's end midway logs its changes so far: puts, overwrites, deletes and clears all land",
          arguments: [1, 2, 3])
    func logStartedMidway(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let initial = 1 << 20
        let store = try LMDBEngine(path: dir.path, lmdb: LMDBOptions(mapSize: initial))
        var model: [[UInt8]: [UInt8]] = [:]
        var random = SeededRandom(seed: seed)
        func value() -> [UInt8] { [UInt8](repeating: UInt8.random(in: 0...255, using: &random), count: Int.random(in: 1...3_000, using: &random)) }
        for batch in 0..<4 {
            try store.write { tx in
                for i in 0..<50 {
                    let v = value()
                    try tx.put(v, forKey: Self.key(batch * 50 + i))
                    model[Self.key(batch * 50 + i)] = v
                }
            }
        }
        let before = store.writeLogStarts, mapBefore = store.mapSize
        var bodyRuns = 0
        var loggingFrom: Int?
        // One transaction of several times the map: first every kind of write on the keys that
        // exist (only the capture of the changes so far can carry those into the replay, as
        // nothing touches them again), then new keys until the map fills and is grown.
        try store.write { tx in
            bodyRuns += 1
            for step in 0..<5_000 {
                let phaseOne = step < 400
                // Past phase one, mostly new keys, and one in eight an earlier one of them again.
                let again = !phaseOne && step > 400 && Int.random(in: 0..<8, using: &random) == 0
                let key = Self.key(phaseOne ? Int.random(in: 0..<200, using: &random) : 1_000 + (again ? Int.random(in: 400..<step, using: &random) : step))
                switch Int.random(in: 0..<20, using: &random) {
                case 0..<3 where phaseOne:
                    try tx.delete(key)
                    model[key] = nil
                case 3 where phaseOne:
                    let other = Self.key(Int.random(in: 0..<200, using: &random))
                    let (low, high) = key.lexicographicallyPrecedes(other) ? (key, other) : (other, key)
                    try tx.clear(.halfOpen(low, high))
                    for k in model.keys where !k.lexicographicallyPrecedes(low) && k.lexicographicallyPrecedes(high) { model[k] = nil }
                default:
                    // Half through the put that tells whether it replaced (LMDB's `MDB_NOOVERWRITE`,
                    // then a plain put): both reach the full map and its replay.
                    let v = value()
                    if Bool.random(using: &random) {
                        let replaced = try key.withUnsafeBytes { k in try v.withUnsafeBytes { try tx.putReportingReplaced($0, forKey: k) } }
                        #expect(replaced == (model[key] != nil), "write \(step): putReportingReplaced")
                    } else {
                        try tx.put(v, forKey: key)
                    }
                    model[key] = v
                }
                if loggingFrom == nil && store.writeLogStarts.midway > before.midway { loggingFrom = step }
            }
        }
        #expect(bodyRuns == 1)
        let from = try #require(loggingFrom, "the transaction never neared the map's end: \(store.writeLogStarts)")
        #expect(from > 400 && from < 4_000, "logging started at write \(from)")
        #expect(store.mapSize > mapBefore, "the map was not grown during the transaction: nothing was replayed")
        #expect(store.mapSize > initial)
        func contents(_ engine: LMDBEngine) throws -> [[UInt8]: [UInt8]] {
            try engine.read { tx in
                var found: [[UInt8]: [UInt8]] = [:]
                try tx.scan(.all, reverse: false, limit: nil) { k, v in found[Array(k)] = Array(v); return true }
                return found
            }
        }
        #expect(try contents(store) == model)
        try store.close()
        let reopened = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        #expect(try contents(reopened) == model)
        try reopened.close()
    }

    @Test("with room in the map, writes are not logged: the map grows before a write transaction begins")
    func noLogWithRoom() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LMDBEngine(path: dir.path, lmdb: LMDBOptions(mapSize: 1 << 20))
        defer { try? store.close() }
        let value = [UInt8](repeating: 7, count: 1_000)
        // Small transactions filling the store to 16 times the initial map.
        for batch in 0..<160 {
            try store.write { tx in for i in 0..<100 { try tx.put(value, forKey: Self.key(batch * 100 + i)) } }
        }
        #expect(store.mapSize >= 32 << 20, "map \(store.mapSize)")
        #expect(store.writeLogStarts == (0, 0), "\(store.writeLogStarts)")
    }

    @Test("a write that needs the map grown while a record-layer reader holds its snapshot for 30 s completes when the reader ends")
    func growthWaitsForLongReader() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Store(.lmdb(path: dir.path, options: LMDBOptions(mapSize: 1 << 20)))
        defer { try? store.close() }
        let payload = [UInt8](repeating: 3, count: 1_000)
        try store.withTransaction { ctx in for i in 0..<100 { try ctx.insert(Blob(id: i, payload: payload)) } }
        let reading = DispatchSemaphore(value: 0)
        let readerEnded = Flag()
        nonisolated(unsafe) var seen: (first: Int, last: Int) = (0, 0)  // written by the reader, read after join
        let reader = BackgroundThread {
            try store.withReadTransaction { ctx in
                seen.first = try Blob.select(in: ctx).count
                reading.signal()
                Thread.sleep(forTimeInterval: 30)
                seen.last = try Blob.select(in: ctx).count
            }
            readerEnded.set()
        }
        reading.wait()
        let start = Date()
        // 3 MB in one transaction: more than the map holds, so it must grow the map.
        try store.withTransaction { ctx in for i in 100..<3_100 { try ctx.insert(Blob(id: i, payload: payload)) } }
        let waited = Date().timeIntervalSince(start)
        #expect(readerEnded.isSet, "the write remapped the file while the reader was inside its snapshot")
        try reader.join()
        #expect(waited > 25, "the write did not wait for the reader (\(waited) s): it did not need the map grown")
        #expect(seen.first == 100 && seen.last == 100, "the reader's snapshot changed: \(seen)")
        #expect(try store.withReadTransaction { ctx in try Blob.select(in: ctx).count } == 3_100)
    }

    // `make sanitize` sets STRATA_SANITIZER: AddressSanitizer reserves terabytes of address space
    // for its shadow memory, so no instrumented process starts under a 4 GB `ulimit -v`.
    @Test("with 4 GB of address space (ulimit -v), the default 64 GiB map falls back to a smaller one: the store opens and writes",
          .disabled(if: sanitizer != nil, "an instrumented process cannot start under ulimit -v"))
    func mapFitsAddressSpace() throws {
        let run = try runProgram("/bin/sh", ["-c", "ulimit -v 4000000 && exec \"$0\" demo", strataTool])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("lmdb     last three people, descending: Zorg, Ruby, Leeloo"), "\(run.output)")
    }

    @Test("the map grows while readers of this process are open")
    func mapGrowthWithReaders() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LMDBEngine(path: dir.path, lmdb: LMDBOptions(mapSize: 1 << 20))
        let value = [UInt8](repeating: 1, count: 2_000)
        let stop = Flag()
        let readers = (0..<2).map { _ in
            BackgroundThread {
                while !stop.isSet {
                    try store.read { (tx: any KeyValueReader) throws in
                        let keys = try tx.keys()
                        // Each commit writes a whole batch of 100: a snapshot never sees part of one.
                        #expect(keys.count % 100 == 0)
                    }
                }
            }
        }
        for batch in 0..<30 {
            try store.write { tx in for i in 0..<100 { try tx.put(value, forKey: Self.key(batch * 100 + i)) } }
        }
        stop.set()
        for reader in readers { try reader.join() }
        #expect(store.mapSize > 1 << 20)
        try store.read { (tx: any KeyValueReader) throws in #expect(try tx.keys().count == 3_000) }
        try store.close()
    }

    @Test("past the last reader slot, a read throws readersFull and works again once a slot frees")
    func readersFull() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LMDBEngine(path: dir.path, lmdb: LMDBOptions(maxReaders: 2))
        let inside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let holders = (0..<2).map { _ in
            BackgroundThread {
                try store.read { _ in
                    inside.signal()
                    release.wait()
                }
            }
        }
        inside.wait()
        inside.wait()
        #expect(throws: EngineError.readersFull(limit: 2)) { try store.read { _ in } }
        release.signal()
        release.signal()
        for holder in holders { try holder.join() }
        try store.read { (tx: any KeyValueReader) throws in #expect(try tx.keys() == []) }
        try store.close()
    }

    @Test("a main database mdb_load made with a flag is refused naming the flag, files untouched",
          arguments: [("reversekey", "MDB_REVERSEKEY"), ("dupsort", "MDB_DUPSORT"), ("integerkey", "MDB_INTEGERKEY")])
    func foreignFlags(option: String, flag: String) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        // mdb_dump's text format: the header names the flag, then key and value lines in hex.
        let input = dir.path + "-input"
        defer { try? FileManager.default.removeItem(atPath: input) }
        try "VERSION=3\nformat=bytevalue\ntype=btree\n\(option)=1\nHEADER=END\n 0100000000000000\n 76\n 0200000000000000\n 77\nDATA=END\n"
            .write(toFile: input, atomically: true, encoding: .utf8)
        let load = try runProgram(try tool("mdb_load", package: "lmdb-utils"), ["-f", input, dir.path])
        #expect(load.status == 0, "\(load.output)")
        let before = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/data.mdb"))
        for mode in [OpenMode.openExisting, .readOnly, .create] {
            #expect(throws: EngineError.notAStore(path: dir.path, reason: "data.mdb's main database was made with \(flag) (keys not in bytewise order, or several values per key)")) {
                try LMDBEngine(path: dir.path, options: EngineOptions(mode: mode))
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/data.mdb")) == before)
        // The same file without the flag opens: the refusal is the flag's, not mdb_load's.
        try FileManager.default.removeItem(atPath: dir.path + "/data.mdb")
        try? FileManager.default.removeItem(atPath: dir.path + "/lock.mdb")
        try String(contentsOfFile: input, encoding: .utf8).replacingOccurrences(of: "\(option)=1\n", with: "").write(toFile: input, atomically: true, encoding: .utf8)
        #expect(try runProgram(try tool("mdb_load", package: "lmdb-utils"), ["-f", input, dir.path]).status == 0)
        let plain = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        #expect(try plain.read { try $0.keys() }.count == 2)
        try plain.close()
    }

    @Test("a store written through the adapter opens with mdb_stat")
    func mdbStat() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LMDBEngine(path: dir.path)
        try store.write { tx in for i in 0..<1_234 { try tx.put([1], forKey: Self.key(i)) } }
        try store.close()
        let stat = try runProgram(try tool("mdb_stat", package: "lmdb-utils"), [dir.path])
        #expect(stat.status == 0, "\(stat.output)")
        #expect(stat.output.contains("Entries: 1234"), "\(stat.output)")
    }
}

@Suite("LMDB files")
struct LMDBFileTests {
    /// mm_last_pg of the newest meta page, and the page size, read straight from data.mdb.
    static func lastPage(_ file: String) throws -> (last: UInt64, pageSize: UInt64) {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        func load(_ offset: Int) -> UInt64 { data[offset..<(offset + 8)].reversed().reduce(0) { $0 << 8 | UInt64($1) } }
        let pageSize = UInt64(data[40]) | UInt64(data[41]) << 8 | UInt64(data[42]) << 16
        let second = Int(pageSize)
        let newest = load(second + 144) > load(144) ? second : 0
        return (load(newest + 136), pageSize)
    }

    /// Found by the ThreadSanitizer run: `String(contentsOfFile:)` read only the first 4 KiB of
    /// `/proc/self/maps`, so in a process with many mappings the map of a short file was not found
    /// and the store was refused ("its map cannot be located").
    @Test("the map of data.mdb is found however many mappings the process has")
    func mapFoundAmongManyMappings() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let file = dir.path + "/data.mdb"
        try Data(repeating: 7, count: 8192).write(to: URL(fileURLWithPath: file))
        // 400 one-page mappings, readable and not in turn so that none merge: over 20 KiB of lines.
        let page = Int(getpagesize())
        let region = try #require(mmap(nil, 800 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        defer { munmap(region, 800 * page) }
        for i in stride(from: 0, to: 800, by: 2) { mprotect(region + i * page, page, PROT_READ) }
        let fd = open(file, O_RDONLY)
        defer { close(fd) }
        let mapped = try #require(mmap(nil, 8192, PROT_READ, MAP_SHARED, fd, 0))
        defer { munmap(mapped, 8192) }
        let maps = try #require(try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/maps")).readToEnd())
        #expect(maps.count > 16_384, "the scenario: a list of mappings longer than a few reads")
        #expect(LMDBFileBounds.mapAddress(of: file) == UInt(bitPattern: mapped))
    }

    @Test("a healthy file shorter than its last page number reopens (pages freed in their own transaction are never written)")
    func shorterThanLastPage() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        var rng = SystemRandomNumberGenerator()
        var sawShortFile = false
        var expected: [UInt32: Int] = [:]
        for round in 0..<120 {
            let store = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .create, durability: .relaxed))
            try store.write { tx in
                for _ in 0..<20 {
                    let k = UInt32.random(in: 0..<200, using: &rng)
                    let key = withUnsafeBytes(of: k.bigEndian) { Array($0) }
                    if Bool.random(using: &rng) {
                        let size = Int.random(in: 5_000...20_000, using: &rng)
                        try tx.put([UInt8](repeating: UInt8(round & 0xFF), count: size), forKey: key)
                        expected[k] = size
                    } else {
                        try tx.delete(key)
                        expected[k] = nil
                    }
                }
                // Overflow pages allocated and freed in one transaction ("loose" pages) are never
                // written, yet they count in mm_last_pg: this is what leaves the file short.
                try tx.put([UInt8](repeating: 1, count: 40_000), forKey: [0xFF, 0xFF])
                try tx.delete([0xFF, 0xFF])
            }
            try store.close()
            let file = dir.path + "/data.mdb"
            let (last, pageSize) = try Self.lastPage(file)
            let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as! UInt64
            if size < (last + 1) * pageSize { sawShortFile = true }
            let reopened = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
            // Every value reads: a short but healthy file passes the checks of values against
            // the file's end (LMDBFileBounds), which are on in a short file.
            let sizes = try reopened.read { tx in try tx.pairs().map(\.value.count) }
            #expect(sizes.sorted() == expected.values.sorted())
            try reopened.close()
        }
        #expect(sawShortFile, "the scenario (file shorter than (last_pg + 1) pages) never occurred")
    }

    @Test("a truncated data file is refused with a typed error, not SIGBUS, and left as it is")
    func truncated() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LMDBEngine(path: dir.path)
        try store.write { tx in for i in 0..<5_000 { try tx.put([UInt8](repeating: 7, count: 200), forKey: withUnsafeBytes(of: UInt32(i).bigEndian) { Array($0) }) } }
        try store.close()
        let file = dir.path + "/data.mdb"
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        try handle.truncate(atOffset: 3 * 4096)
        try handle.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect {
            try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        } throws: { error in
            if case EngineError.corrupt = error { return true }
            return false
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
    }
}

extension LMDBTests {
    /// Found by the `files` fuzz target: LMDB asserts `root > 1` and aborts the process.
    @Test("a meta page whose tree root is a meta page is refused with a typed error, not LMDB's abort", arguments: [UInt64(0), 1])
    func treeRootOnMetaPage(root: UInt64) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LMDBEngine(path: dir.path)
        try store.write { tx in for i in 0..<2_000 { try tx.put([UInt8](repeating: 7, count: 100), forKey: withUnsafeBytes(of: UInt32(i).bigEndian) { Array($0) }) } }
        try store.close()
        // Both meta pages' main tree root (mm_dbs[MAIN_DBI].md_root, offset 128 in each).
        let file = dir.path + "/data.mdb"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        let pageSize = Int(getpagesize())
        for meta in [0, pageSize] { withUnsafeBytes(of: root.littleEndian) { bytes.replaceSubrange((meta + 128)..<(meta + 136), with: $0) } }
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        #expect {
            try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        } throws: { error in
            if case EngineError.corrupt(_, let detail) = error { return detail.contains("a meta page") }
            return false
        }
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: file))) == bytes, "the file is left as it was")
    }

    /// Found by the `files` fuzz target: a second meta page declaring another page size made
    /// LMDB read past the file (SIGBUS in mdb_env_open); a meta page counting 2^52 + 2 pages (LMDB
    /// multiplies by the page size and wraps to a small map size, so it opens) made an
    /// overflow trap in the bounds check; a first meta page holding an odd transaction id larger
    /// than the second's (LMDB opened with the first but read the second's trees, past the end of
    /// a cut file: SIGBUS in `mdb_cursor_get`); a main tree of two levels said to have none or
    /// one (LMDB descends by the pages' flags, so the check left branch pages unread that LMDB
    /// followed past the end of a cut file).
    @Test("a damaged meta page (another page size, an absurd page count, a transaction id on the wrong page, a wrong depth) is refused with a typed error",
          arguments: [(40, UInt64(0x0009_0302), [1], 4, "second meta page is damaged"), (136, (UInt64(1) << 52) + 1, [0, 1], 8, "pages (damaged)"),
                      (144, UInt64(0x6B5F_6574_696C_7173), [0], 8, "which LMDB reads from meta page 1 (damaged)"),
                      (94, UInt64(0), [0, 1], 2, "a depth of 0 (damaged)"), (94, UInt64(1), [0, 1], 2, "deeper than its meta page says")])
    func damagedMetaPage(offset: Int, value: UInt64, metas: [Int], width: Int, refusal: String) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LMDBEngine(path: dir.path)
        try store.write { tx in for i in 0..<500 { try tx.put([UInt8](repeating: 7, count: 100), forKey: withUnsafeBytes(of: UInt32(i).bigEndian) { Array($0) }) } }
        try store.close()
        let file = dir.path + "/data.mdb"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        let pageSize = Int(getpagesize())
        for meta in metas.map({ $0 * pageSize }) {
            withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange((meta + offset)..<(meta + offset + width), with: $0.prefix(width)) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        #expect {
            let engine = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
            try engine.read { tx in _ = try tx.keys(.all, limit: nil) }
        } throws: { error in
            if case EngineError.corrupt(_, let detail) = error { return detail.contains(refusal) }
            return false
        }
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: file))) == bytes, "the file is left as it was")
    }
}

@Suite("LMDB named sub-databases")
struct LMDBSubDatabaseTests {
    /// Writes an environment through LMDB's C API, as a program using named databases does:
    /// `main` pairs in the main database, then a sub-database per name in `subDatabases`.
    static func makeEnvironment(at path: String, main: [(String, [UInt8])], subDatabases: [String]) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var env: OpaquePointer?
        #expect(mdb_env_create(&env) == 0)
        defer { mdb_env_close(env) }
        #expect(mdb_env_set_maxdbs(env, 8) == 0)
        #expect(mdb_env_open(env, path, 0, 0o644) == 0)
        var txn: OpaquePointer?
        #expect(mdb_txn_begin(env, nil, 0, &txn) == 0)
        var mainDBI: MDB_dbi = 0
        #expect(mdb_dbi_open(txn, nil, 0, &mainDBI) == 0)
        func put(_ dbi: MDB_dbi, _ key: String, _ value: [UInt8]) {
            var key = Array(key.utf8), value = value
            key.withUnsafeMutableBytes { k in
                value.withUnsafeMutableBytes { v in
                    var mk = MDB_val(mv_size: k.count, mv_data: k.baseAddress), mv = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
                    #expect(mdb_put(txn, dbi, &mk, &mv, 0) == 0)
                }
            }
        }
        for (key, value) in main { put(mainDBI, key, value) }
        for name in subDatabases {
            var dbi: MDB_dbi = 0
            #expect(mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi) == 0)
            put(dbi, "inside \(name)", [1, 2, 3])
        }
        #expect(mdb_txn_commit(txn) == 0)
    }

    static func refusal(_ path: String, _ name: String) -> EngineError {
        .notAStore(path: path, reason: "data.mdb holds named sub-databases (\"\(name)\" is one): the environment of a program using LMDB's named databases; Strata stores use the main database only")
    }

    @Test("an environment holding only named sub-databases is refused at open, in every mode, files untouched")
    func onlySubDatabases() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try Self.makeEnvironment(at: dir.path, main: [], subDatabases: ["notes", "users"])
        let before = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/data.mdb"))
        for mode in [OpenMode.openExisting, .readOnly, .create] {
            #expect(throws: Self.refusal(dir.path, "notes")) { try LMDBEngine(path: dir.path, options: EngineOptions(mode: mode)) }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/data.mdb")) == before)
    }

    @Test("a sub-database between ordinary keys is refused at the read or write that reaches it; nothing is written")
    func subDatabaseBetweenKeys() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        // A 48-byte ordinary value (the size of a sub-database's record) must read as a value.
        let plain48 = [UInt8](repeating: 0x30, count: 48)
        try Self.makeEnvironment(at: dir.path, main: [("a", [1]), ("b", plain48), ("z", [26])], subDatabases: ["m"])
        let store = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        let refusal = Self.refusal(dir.path, "m")
        try store.read { (tx: any KeyValueReader) throws in
            #expect(try tx.get(Array("a".utf8)) == [1])
            #expect(try tx.get(Array("b".utf8)) == plain48)
            #expect(try tx.get(Array("z".utf8)) == [26])
            #expect(throws: refusal) { try tx.get(Array("m".utf8)) }
            #expect(throws: refusal) { try tx.keys() }
            #expect(try tx.keys(.halfOpen(Array("a".utf8), Array("c".utf8))) == [Array("a".utf8), Array("b".utf8)])
        }
        #expect(throws: refusal) { try store.write { (tx: any KeyValueWriter) throws in try tx.put([9], forKey: Array("m".utf8)) } }
        #expect(throws: refusal) { try store.write { (tx: any KeyValueWriter) throws in try tx.delete(Array("m".utf8)) } }
        #expect(throws: refusal) { try store.write { (tx: any KeyValueWriter) throws in try tx.put([9], forKey: Array("c".utf8)); _ = try tx.clear(.halfOpen(Array("c".utf8), Array("y".utf8))) } }
        // Ordinary writes around it still work.
        try store.write { (tx: any KeyValueWriter) throws in try tx.put([2], forKey: Array("a".utf8)) }
        try store.close()
        // Nothing of the refused transactions was written, and the sub-database is whole.
        var env: OpaquePointer?
        #expect(mdb_env_create(&env) == 0)
        defer { mdb_env_close(env) }
        #expect(mdb_env_set_maxdbs(env, 8) == 0)
        #expect(mdb_env_open(env, dir.path, UInt32(MDB_RDONLY), 0o644) == 0)
        var txn: OpaquePointer?
        #expect(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn) == 0)
        defer { mdb_txn_abort(txn) }
        var dbi: MDB_dbi = 0
        #expect(mdb_dbi_open(txn, "m", 0, &dbi) == 0)
        var stat = MDB_stat()
        #expect(mdb_stat(txn, dbi, &stat) == 0)
        #expect(stat.ms_entries == 1)
        var main: MDB_dbi = 0
        #expect(mdb_dbi_open(txn, nil, 0, &main) == 0)
        #expect(mdb_stat(txn, main, &stat) == 0)
        #expect(stat.ms_entries == 4, "a, b, m and z; c was never committed")
    }
}

@Suite("LMDB values in a truncated file")
struct LMDBTruncatedValueTests {
    static func key(_ i: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(i).bigEndian) { Array($0) } }
    static let bigKey = key(1_000_000)
    static let bigValue = [UInt8](repeating: 0xB2, count: 200_000)
    /// The pages of the big value's overflow run: a 16-byte header, then the value.
    static let bigPages: UInt64 = (16 + 200_000 + 4_095) / 4_096

    /// Where the file is cut: inside the big value (its first overflow page, whose header LMDB
    /// reads to free the run, is kept) or at the start of its run (that page is gone too).
    enum Cut { case insideValue, atValueStart }

    /// A store whose last pages are the overflow pages of one 200 KB value, written last in the
    /// one transaction that made the store (so its pages are allocated last), then cut. Returns
    /// the size of the cut file.
    static func makeTruncatedStore(_ path: String, cut: Cut) throws -> UInt64 {
        let store = try LMDBEngine(path: path)
        try store.write { (tx: any KeyValueWriter) throws in
            for i in 0..<2_000 { try tx.put([UInt8](repeating: 7, count: 100), forKey: key(i)) }
            try tx.put([UInt8](repeating: 0xB1, count: 20_000), forKey: key(10))  // overflow pages, kept whole
            try tx.put(bigValue, forKey: bigKey)
        }
        try store.close()
        let file = path + "/data.mdb"
        let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as! UInt64
        let cutSize = size - (cut == .insideValue ? 100 * 1024 : bigPages * 4_096)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        try handle.truncate(atOffset: cutSize)
        try handle.close()
        return cutSize
    }

    static func isTruncationError(_ error: any Error, fileSize: UInt64) -> Bool {
        guard case let EngineError.corrupt(_, detail) = error else { return false }
        return detail.contains("reaches past the file's end (\(fileSize) bytes): the file was truncated")
    }

    static let writes: [@Sendable (any KeyValueWriter) throws -> Void] = [
        { try $0.put([1], forKey: bigKey) },
        { try $0.delete(bigKey) },
        { _ = try $0.clear(KeyRange(lower: .inclusive(key(1_999)))) },
    ]

    @Test("reading a value whose overflow pages were cut off is a typed error, not SIGBUS; the rest reads; files untouched",
          arguments: [Cut.insideValue, .atValueStart])
    func readingIt(cut: Cut) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let size = try Self.makeTruncatedStore(dir.path, cut: cut)
        let before = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/data.mdb"))
        for mode in [OpenMode.readOnly, .openExisting] {
            let store = try LMDBEngine(path: dir.path, options: EngineOptions(mode: mode))
            try store.read { (tx: any KeyValueReader) throws in
                #expect(try tx.get(Self.key(5)) == [UInt8](repeating: 7, count: 100))
                #expect(try tx.get(Self.key(10)) == [UInt8](repeating: 0xB1, count: 20_000))
                #expect { try tx.get(Self.bigKey) } throws: { Self.isTruncationError($0, fileSize: size) }
                #expect { try tx.keys() } throws: { Self.isTruncationError($0, fileSize: size) }
                #expect(try tx.keys(.halfOpen(Self.key(0), Self.key(2_000))).count == 2_000)
            }
            try store.close()
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/data.mdb")) == before)
    }

    @Test("with the value's first page cut off, replacing, deleting or clearing it is a typed error before LMDB reads that page")
    func writingItsMissingPage() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let size = try Self.makeTruncatedStore(dir.path, cut: .atValueStart)
        let store = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        for write in Self.writes {
            #expect { try store.write { (tx: any KeyValueWriter) throws in try write(tx) } } throws: { Self.isTruncationError($0, fileSize: size) }
        }
        try store.write { (tx: any KeyValueWriter) throws in try tx.put([3], forKey: Self.key(3)) }
        try store.read { (tx: any KeyValueReader) throws in
            #expect(try tx.get(Self.key(3)) == [3])
            #expect(try tx.get(Self.key(1_999)) == [UInt8](repeating: 7, count: 100))
        }
        try store.close()
    }

    @Test("with its first page kept, the cut value can be replaced or deleted: the store is whole again", arguments: [0, 1, 2])
    func repairingIt(write: Int) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        _ = try Self.makeTruncatedStore(dir.path, cut: .insideValue)
        let store = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        try store.write { (tx: any KeyValueWriter) throws in try Self.writes[write](tx) }
        // Pages allocated from now on may be the freed ones past the end: writing them extends the file.
        try store.write { (tx: any KeyValueWriter) throws in
            for i in 5_000..<5_020 { try tx.put([UInt8](repeating: 9, count: 30_000), forKey: Self.key(i)) }
        }
        try store.close()
        let reopened = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        try reopened.read { (tx: any KeyValueReader) throws in
            let pairs = try tx.pairs()
            #expect(pairs.count == (write == 2 ? 1_999 : write == 1 ? 2_000 : 2_001) + 20)
            #expect(try tx.get(Self.bigKey) == (write == 0 ? [1] : nil))
            #expect(try tx.get(Self.key(5_019)) == [UInt8](repeating: 9, count: 30_000))
        }
        try reopened.close()
    }

    @Test("the same store, not cut, reads and rewrites every value")
    func wholeFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try LMDBEngine(path: dir.path)
        try store.write { (tx: any KeyValueWriter) throws in
            for i in 0..<2_000 { try tx.put([UInt8](repeating: 7, count: 100), forKey: Self.key(i)) }
            try tx.put(Self.bigValue, forKey: Self.bigKey)
        }
        try store.close()
        let reopened = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        try reopened.read { (tx: any KeyValueReader) throws in
            #expect(try tx.get(Self.bigKey) == Self.bigValue)
            #expect(try tx.pairs().count == 2_001)
        }
        try reopened.write { (tx: any KeyValueWriter) throws in try tx.delete(Self.bigKey) }
        try reopened.close()
    }
}

/// A record of an integer key and a byte payload, for the map growth tests.
private struct Blob: Record {
    var id: Int
    var payload: [UInt8]

    static let recordType = RecordType(keyspace: "Blob", version: 1, key: [("id", Int.self)])

    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(payload) }

    init(id: Int, payload: [UInt8]) {
        self.id = id
        self.payload = payload
    }

    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        payload = try fields.read()
    }
}
