import CSQLite
import StrataEngine

/// A read or write transaction of SQLite storage on one connection.
final class SQLiteTransaction: StorageWriteTransaction {
    private unowned let storage: SQLiteStorage
    private let connection: SQLiteConnection
    private let writable: Bool
    /// Whether COMMIT or ROLLBACK ran.
    private var finished = false

    init(storage: SQLiteStorage, connection: SQLiteConnection, writable: Bool) throws {
        self.storage = storage
        self.connection = connection
        self.writable = writable
        if writable {
            try connection.execute("BEGIN IMMEDIATE")
        } else {
            try connection.execute("BEGIN")
            // A deferred BEGIN takes its snapshot at the first read: read now, so the snapshot
            // is the state at the start of the transaction, not at the caller's first read.
            do {
                try connection.execute("SELECT 1 FROM kv LIMIT 1")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    func commit() throws {
        try checkStillOpen()
        try connection.execute("COMMIT")
        finished = true
    }

    /// Rolls back (a read transaction ends the same way), unless committed; a reader's
    /// connection goes back to the pool.
    func end() {
        if !finished {
            finished = true
            try? connection.execute("ROLLBACK")
        }
        if !writable { storage.checkIn(connection) }
    }

    // MARK: Reads

    func get<R>(_ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try connection.withHotStatement(.get) { statement in
            key.bindBlob(to: statement, at: 1)
            let rc = sqlite3_step(statement)
            guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw sqliteError(rc, connection.handle, "reading a key", path: storage.path) }
            return try body(rc == SQLITE_ROW ? UnsafeRawBufferPointer(column: 0, of: statement) : nil)
        }
    }

    func scan(
        _ range: ResolvedRange, reverse: Bool, limit: Int?, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try connection.withHotStatement(.scan(range, reverse: reverse)) { statement in
            try Self.bind(range, to: statement) {
                sqlite3_bind_int64(statement, 3, Int64(limit ?? -1))  // a negative LIMIT is none
                while true {
                    let rc = sqlite3_step(statement)
                    if rc == SQLITE_DONE { return }
                    guard rc == SQLITE_ROW else { throw sqliteError(rc, connection.handle, "scanning", path: storage.path) }
                    if try !visit(UnsafeRawBufferPointer(column: 0, of: statement), UnsafeRawBufferPointer(column: 1, of: statement)) { return }
                }
            }
        }
    }

    /// Binds a range's bounds as BLOBs while `body` runs.
    private static func bind<R>(_ range: ResolvedRange, to statement: OpaquePointer, _ body: () throws -> R) throws -> R {
        let lower = range.lower?.key ?? []
        let upper = range.upper?.key ?? []
        return try lower.withUnsafeBytes { lo in
            try upper.withUnsafeBytes { hi in
                if range.lower != nil { lo.bindBlob(to: statement, at: 1) }
                if range.upper != nil { hi.bindBlob(to: statement, at: 2) }
                return try body()
            }
        }
    }

    // MARK: Writes

    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
        try checkStillOpen()
        try connection.withHotStatement(.put) { statement in
            key.bindBlob(to: statement, at: 1)
            value.bindBlob(to: statement, at: 2)
            try step(statement, "writing a key")
        }
    }

    /// A new key is stored by one statement that leaves an existing key alone (no row changed),
    /// which the put then replaces: no read for a new key.
    func putReportingReplaced(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws -> Bool {
        try checkStillOpen()
        let stored = try connection.withHotStatement(.putNew) { statement in
            key.bindBlob(to: statement, at: 1)
            value.bindBlob(to: statement, at: 2)
            try step(statement, "writing a key")
            return sqlite3_changes(connection.handle) == 1
        }
        if stored { return false }
        try put(value, forKey: key)
        return true
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        try checkStillOpen()
        try connection.withHotStatement(.delete) { statement in
            key.bindBlob(to: statement, at: 1)
            try step(statement, "deleting a key")
        }
    }

    func clear(_ range: ResolvedRange) throws -> Int {
        try checkStillOpen()
        return try connection.withStatement("DELETE FROM kv" + SQLiteConnection.HotStatement.whereClause(range)) { statement in
            try Self.bind(range, to: statement) {
                try step(statement, "clearing a range")
                return Int(sqlite3_changes(connection.handle))
            }
        }
    }

    /// Steps a write statement to completion. A failure breaks the transaction (the core refuses
    /// every later use of it): SQLite may have rolled it back by itself, and later writes would
    /// otherwise autocommit one by one.
    private func step(_ statement: OpaquePointer, _ operation: String) throws(EngineError) {
        let rc = sqlite3_step(statement)
        if rc != SQLITE_DONE { throw sqliteError(rc, connection.handle, operation, path: storage.path) }
    }

    /// Throws when SQLite ended the transaction on its own (an automatic rollback).
    private func checkStillOpen() throws(EngineError) {
        if writable && sqlite3_get_autocommit(connection.handle) != 0 {
            throw .engineFailure(engine: "SQLite", code: 0, message: "the transaction was rolled back by SQLite", operation: "writing")
        }
    }
}
