import CSQLite
import Foundation
import StrataEngine

/// A Strata engine on SQLite (libsqlite3): one `WITHOUT ROWID` table whose primary key is a
/// BLOB, so rows are stored and scanned in bytewise key order.
///
/// The store is a directory holding `data.sqlite` (plus SQLite's `-wal` and `-shm` files):
///
///     CREATE TABLE kv(k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID
///
/// WAL mode. Writers use one connection and `BEGIN IMMEDIATE`; each reader uses a connection of
/// its own and pins its snapshot as it begins (a deferred `BEGIN` would take it only at the first
/// read). Several processes may share the store; a busy database is waited on (60 s).
public final class SQLiteEngine: KeyValueEngine, @unchecked Sendable {
    public let engineName = "sqlite"
    public let capabilities: EngineCapabilities = [.persistent, .multiProcess]
    public let path: String
    public let options: EngineOptions
    /// The database file inside the store directory.
    public let file: String

    let gate = TransactionGate()
    private var writer: SQLiteConnection?
    private var idleReaders: [SQLiteConnection] = []
    private let readersLock = NSLock()
    private let canonicalPath: String

    static let schema = "CREATE TABLE kv(k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID"

    public init(path: String, options: EngineOptions = EngineOptions()) throws {
        self.path = path
        self.options = options
        file = (path as NSString).appendingPathComponent("data.sqlite")
        try StoreDirectory.prepare(path, marker: "data.sqlite", mode: options.mode)
        canonicalPath = try OpenPathRegistry.claim(path)
        do {
            if options.mode == .readOnly {
                let reader = try SQLiteConnection(file: file, storePath: path, readOnly: true, create: false)
                guard try Self.inspect(reader, path: path) == .strata else {
                    throw EngineError.notAStore(path: path, reason: "data.sqlite has no kv table")
                }
                idleReaders.append(reader)
            } else {
                let connection = try SQLiteConnection(file: file, storePath: path, readOnly: false, create: options.mode == .create)
                // Inspect before writing anything: another application's database is left as it was.
                let state = try Self.inspect(connection, path: path)
                if state == .empty && options.mode != .create {
                    throw EngineError.notAStore(path: path, reason: "data.sqlite has no kv table")
                }
                try connection.execute("PRAGMA journal_mode=WAL")
                try connection.execute(options.durability == .full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
                if state == .empty { try connection.execute(Self.schema) }
                writer = connection
            }
        } catch {
            idleReaders.removeAll()
            OpenPathRegistry.release(canonicalPath)
            throw error
        }
    }

    deinit {
        if writer != nil || !idleReaders.isEmpty { OpenPathRegistry.release(canonicalPath) }
    }

    private enum Contents { case empty, strata }

    /// What the database holds: nothing yet, or exactly Strata's table. Anything else (another
    /// application's tables, a different `kv`) is refused.
    private static func inspect(_ connection: SQLiteConnection, path: String) throws -> Contents {
        var tables: [String: String] = [:]
        try connection.withStatement("SELECT name, sql FROM sqlite_master WHERE type = 'table'") { s in
            while true {
                let rc = sqlite3_step(s)
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else { throw sqliteError(rc, connection.handle, "reading the schema", path: path) }
                tables[String(cString: sqlite3_column_text(s, 0))] = String(cString: sqlite3_column_text(s, 1))
            }
        }
        if tables.isEmpty { return .empty }
        if tables == ["kv": schema] { return .strata }
        if let kv = tables["kv"] {
            throw EngineError.notAStore(path: path, reason: "data.sqlite has a different kv table: \(kv)")
        }
        throw EngineError.notAStore(path: path, reason: "data.sqlite holds other tables (\(tables.keys.sorted().joined(separator: ", "))) and no kv table")
    }

    public func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R {
        try gate.withRead {
            let connection = try checkOutReader()
            defer { checkIn(connection) }
            let transaction = try SQLiteTransaction(engine: self, connection: connection, writable: false)
            defer { transaction.end(commit: false) }
            return try body(transaction)
        }
    }

    public func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R {
        guard options.mode != .readOnly else { throw EngineError.readOnly(path: path) }
        return try gate.withWrite {
            guard let writer else { throw EngineError.closed }
            let transaction = try SQLiteTransaction(engine: self, connection: writer, writable: true)
            let result: R
            do {
                result = try body(transaction)
            } catch {
                transaction.end(commit: false)
                throw error
            }
            try transaction.commit()
            return result
        }
    }

    public func close() throws {
        try gate.close {
            writer = nil
            readersLock.withLock { idleReaders.removeAll() }
            OpenPathRegistry.release(canonicalPath)
        }
    }

    private func checkOutReader() throws -> SQLiteConnection {
        if let idle = readersLock.withLock({ idleReaders.popLast() }) { return idle }
        return try SQLiteConnection(file: file, storePath: path, readOnly: true, create: false)
    }

    private func checkIn(_ connection: SQLiteConnection) {
        readersLock.withLock { idleReaders.append(connection) }
    }
}
