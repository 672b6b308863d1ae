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
        #expect(schema.output.contains("CREATE TABLE kv(k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID"), "\(schema.output)")
        let rows = try runProgram(try tool("sqlite3", package: "sqlite3"), [store.file, "SELECT hex(k), typeof(k), length(v) FROM kv ORDER BY k"])
        #expect(rows.output == "44616C6C6173|blob|6\nFF00|blob|0\n", "\(rows.output)")
        let mode = try runProgram(try tool("sqlite3", package: "sqlite3"), [store.file, "PRAGMA journal_mode"])
        #expect(mode.output == "wal\n")
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
}
