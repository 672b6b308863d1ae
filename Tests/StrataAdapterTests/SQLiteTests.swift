import Foundation
import StrataEngine
import StrataSQLite
import Testing

@Suite("SQLite adapter")
struct SQLiteTests {
    @Test("a store written through the adapter opens in the sqlite3 shell")
    func sqlite3Shell() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try SQLiteEngine(path: dir.path)
        try store.write { (tx: any KeyValueWriter) throws in
            try tx.put(Array("Korben".utf8), forKey: Array("Dallas".utf8))
            try tx.put([], forKey: [0xFF, 0x00])
        }
        try store.close()
        let schema = try runProgram(try tool("sqlite3", package: "sqlite3"), [store.file, ".schema kv"])
        #expect(schema.output.contains("CREATE TABLE kv(k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID"), "\(schema.output)")
        let rows = try runProgram(try tool("sqlite3", package: "sqlite3"), [store.file, "SELECT hex(k), typeof(k), length(v) FROM kv ORDER BY k"])
        #expect(rows.output == "44616C6C6173|blob|6\nFF00|blob|0\n", "\(rows.output)")
        let mode = try runProgram(try tool("sqlite3", package: "sqlite3"), [store.file, "PRAGMA journal_mode"])
        #expect(mode.output == "wal\n")
    }

    @Test("a clean close leaves no -wal or -shm beside the store: the data is checkpointed into data.sqlite")
    func noWalAfterClose() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try SQLiteEngine(path: dir.path)
        try store.write { tx in for i in 0..<2_000 { try tx.put([UInt8](repeating: 7, count: 100), forKey: Array("key\(i)".utf8)) } }
        // Readers leave idle read-only connections in the pool: one of them must not be the last to close.
        let held = try store.read { tx in try tx.keys(limit: 3).count }
        #expect(held == 3)
        #expect(FileManager.default.fileExists(atPath: store.file + "-wal"), "the store runs in WAL mode while open")
        try store.close()
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(!left.contains { $0.hasSuffix("-wal") || $0.hasSuffix("-shm") }, "files after close: \(left)")
        // The main file alone holds every row.
        let count = try runProgram(try tool("sqlite3", package: "sqlite3"), ["-readonly", store.file, "SELECT count(*) FROM kv"])
        #expect(count.output == "2000\n", "\(count.output)")
    }

    @Test("a SQLite database of another application is refused and left untouched")
    func foreignDatabase() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let file = dir.path + "/data.sqlite"
        try runProgram(try tool("sqlite3", package: "sqlite3"), [file, "CREATE TABLE kv(a INTEGER, b TEXT); INSERT INTO kv VALUES (1, 'x');"])
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect(throws: EngineError.notAStore(path: dir.path, reason: "data.sqlite has a different kv table: CREATE TABLE kv(a INTEGER, b TEXT)")) {
            try SQLiteEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
    }

    @Test("a database holding Strata's kv table beside other tables is refused, saying what was found")
    func extraTable() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let file = dir.path + "/data.sqlite"
        try runProgram(try tool("sqlite3", package: "sqlite3"),
                       [file, "CREATE TABLE kv(k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID; CREATE TABLE notes(t TEXT);"])
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect(throws: EngineError.notAStore(path: dir.path, reason: "data.sqlite holds Strata's kv table and other tables (notes): another program's database")) {
            try SQLiteEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
    }

    static let looseTable = "CREATE TABLE kv(k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID"

    @Test("the sqlite3 shell cannot put a TEXT key or an INTEGER value into a store's table")
    func strictTable() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try SQLiteEngine(path: dir.path)
        try store.write { tx in try tx.put([1], forKey: [1]) }
        try store.close()
        let sqlite3 = try tool("sqlite3", package: "sqlite3")
        let text = try runProgram(sqlite3, [store.file, "INSERT INTO kv VALUES ('b', x'01')"])
        #expect(text.status != 0 && text.output.contains("cannot store TEXT value in BLOB column kv.k"), "\(text.output)")
        let integer = try runProgram(sqlite3, [store.file, "INSERT INTO kv VALUES (x'02', 5)"])
        #expect(integer.status != 0 && integer.output.contains("cannot store INT value in BLOB column kv.v"), "\(integer.output)")
    }

    @Test("a table without STRICT holding TEXT keys from the sqlite3 shell is refused, naming them, and left untouched")
    func looseTableWithTextKeys() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let file = dir.path + "/data.sqlite"
        try runProgram(try tool("sqlite3", package: "sqlite3"), [file, Self.looseTable + "; PRAGMA journal_mode=WAL;"
            + "INSERT INTO kv VALUES (x'61', x'01'), ('b', x'02'), ('c', x'03'), (x'64', 7);"])
        let reason = "data.sqlite's kv table holds 2 keys of type text, 1 value of type integer; Strata keys and values are BLOBs "
            + "(SQLite orders INTEGER < TEXT < BLOB, so other keys would be scanned out of byte order)"
        let before = try runProgram(try tool("sqlite3", package: "sqlite3"), [file, ".schema kv", "SELECT hex(k), typeof(k) FROM kv ORDER BY k"]).output
        for mode in [OpenMode.openExisting, .readOnly] {
            #expect(throws: EngineError.notAStore(path: dir.path, reason: reason)) {
                try SQLiteEngine(path: dir.path, options: EngineOptions(mode: mode))
            }
        }
        let after = try runProgram(try tool("sqlite3", package: "sqlite3"), [file, ".schema kv", "SELECT hex(k), typeof(k) FROM kv ORDER BY k"]).output
        #expect(after == before && before.contains("WITHOUT ROWID;"), "\(after)")
    }

    @Test("a table without STRICT holding only BLOBs (another tool's or an older store's) is rebuilt STRICT at the first writable open, rows kept")
    func looseTableConverted() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let file = dir.path + "/data.sqlite"
        let sqlite3 = try tool("sqlite3", package: "sqlite3")
        try runProgram(sqlite3, [file, Self.looseTable + "; INSERT INTO kv VALUES (x'62', x'02'), (x'61', x''), (x'00FF', x'03');"])
        // Read-only: checked, not converted.
        let reader = try SQLiteEngine(path: dir.path, options: EngineOptions(mode: .readOnly))
        #expect(try reader.read { tx in try tx.keys() } == [[0x00, 0xFF], [0x61], [0x62]])
        try reader.close()
        #expect(try runProgram(sqlite3, [file, ".schema kv"]).output.contains("WITHOUT ROWID;"))

        let store = try SQLiteEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        #expect(try store.read { tx in try tx.pairs() }.map { [$0.key, $0.value] } == [[[0x00, 0xFF], [0x03]], [[0x61], []], [[0x62], [0x02]]])
        try store.write { tx in try tx.put([9], forKey: [0x63]) }
        try store.close()
        let schema = try runProgram(sqlite3, [file, ".schema"]).output
        #expect(schema.contains("STRICT, WITHOUT ROWID") && !schema.contains("kv_strict"), "\(schema)")
        let text = try runProgram(sqlite3, [file, "INSERT INTO kv VALUES ('z', x'01')"])
        #expect(text.status != 0, "the rebuilt table refuses TEXT keys")
        // And it opens again as Strata's own table.
        let again = try SQLiteEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        #expect(try again.read { tx in try tx.keys() }.count == 4)
        try again.close()
    }
}
