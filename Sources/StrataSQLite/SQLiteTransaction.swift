import CSQLite
import StrataEngine

/// A read or write transaction of an ``SQLiteEngine`` on one connection. Valid only inside its closure.
final class SQLiteTransaction: KeyValueWriter {
    private unowned let engine: SQLiteEngine
    private let connection: SQLiteConnection
    private let writable: Bool
    private var lent = 0
    private var ended = false
    /// Set when a statement failed inside the transaction: it can only roll back now.
    private var failure: EngineError?

    init(engine: SQLiteEngine, connection: SQLiteConnection, writable: Bool) throws {
        self.engine = engine
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
        if let failure { rollback(); throw failure }
        guard !ended else { throw EngineError.transactionEnded }
        do {
            try checkStillOpen()
            try connection.execute("COMMIT")
            ended = true
        } catch {
            rollback()
            throw error
        }
    }

    /// Rolls back (a read transaction ends the same way), unless already ended.
    func rollback() {
        guard !ended else { return }
        ended = true
        try? connection.execute("ROLLBACK")
    }

    // MARK: Reads

    func withValue<R>(forKey key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try KeyLimits.validate(key)
        try live()
        return try connection.withStatement("SELECT v FROM kv WHERE k = ?1") { statement in
            key.bindBlob(to: statement, at: 1)
            let rc = sqlite3_step(statement)
            guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw broken(sqliteError(rc, connection.handle, "reading a key", path: engine.path)) }
            lent += 1  // also for a missing key: writes in the body are refused on every engine
            defer { lent -= 1 }
            return try body(rc == SQLITE_ROW ? UnsafeRawBufferPointer(column: 0, of: statement) : nil)
        }
    }

    func scan(
        _ range: KeyRange, reverse: Bool, limit: Int?,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try live()
        try KeyLimits.validate(limit: limit)
        guard limit != 0, let range = range.resolved() else { return }
        let sql = "SELECT k, v FROM kv" + Self.whereClause(range) + (reverse ? " ORDER BY k DESC" : " ORDER BY k") + " LIMIT ?3"
        try connection.withStatement(sql) { statement in
            try Self.bind(range, to: statement) {
                sqlite3_bind_int64(statement, 3, Int64(limit ?? -1))
                lent += 1
                defer { lent -= 1 }
                while true {
                    let rc = sqlite3_step(statement)
                    if rc == SQLITE_DONE { return }
                    guard rc == SQLITE_ROW else { throw broken(sqliteError(rc, connection.handle, "scanning", path: engine.path)) }
                    let more = try visit(UnsafeRawBufferPointer(column: 0, of: statement), UnsafeRawBufferPointer(column: 1, of: statement))
                    if !more { return }
                }
            }
        }
    }

    /// `WHERE` for a range; the bounds are parameters ?1 (lower) and ?2 (upper).
    private static func whereClause(_ range: ResolvedRange) -> String {
        var terms: [String] = []
        if let lower = range.lower { terms.append(lower.inclusive ? "k >= ?1" : "k > ?1") }
        if let upper = range.upper { terms.append(upper.inclusive ? "k <= ?2" : "k < ?2") }
        return terms.isEmpty ? "" : " WHERE " + terms.joined(separator: " AND ")
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
        try KeyLimits.validate(key)
        try writableCheck()
        try run("INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)", "writing a key") { statement in
            key.bindBlob(to: statement, at: 1)
            if value.bindBlob(to: statement, at: 2) != SQLITE_OK {
                throw EngineError.invalidArgument("a \(value.count)-byte value exceeds SQLite's blob limit (\(sqlite3_limit(connection.handle, SQLITE_LIMIT_LENGTH, -1)) bytes)")
            }
        }
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        try KeyLimits.validate(key)
        try writableCheck()
        try run("DELETE FROM kv WHERE k = ?1", "deleting a key") { key.bindBlob(to: $0, at: 1) }
    }

    func clear(_ range: KeyRange) throws -> Int {
        try writableCheck()
        guard let range = range.resolved() else { return 0 }
        return try connection.withStatement("DELETE FROM kv" + Self.whereClause(range)) { statement in
            try Self.bind(range, to: statement) {
                try step(statement, "clearing a range")
                return Int(sqlite3_changes(connection.handle))
            }
        }
    }

    private func run(_ sql: String, _ operation: String, bind: (OpaquePointer) throws -> Void) throws {
        try connection.withStatement(sql) { statement in
            try bind(statement)
            try step(statement, operation)
        }
    }

    /// Steps a write statement to completion; a failure breaks the transaction.
    private func step(_ statement: OpaquePointer, _ operation: String) throws(EngineError) {
        let rc = sqlite3_step(statement)
        if rc != SQLITE_DONE { throw broken(sqliteError(rc, connection.handle, operation, path: engine.path)) }
    }

    /// Records a statement failure in a write transaction: SQLite may have rolled the whole
    /// transaction back by itself, so nothing more may be written or committed in it (later
    /// writes would otherwise autocommit one by one).
    private func broken(_ error: EngineError) -> EngineError {
        if writable { failure = error }
        return error
    }

    /// Throws when SQLite ended the transaction on its own (an automatic rollback).
    private func checkStillOpen() throws(EngineError) {
        if writable && sqlite3_get_autocommit(connection.handle) != 0 {
            let error = EngineError.engineFailure(engine: "SQLite", code: 0, message: "the transaction was rolled back by SQLite", operation: "writing")
            failure = error
            throw error
        }
    }

    private func live() throws(EngineError) {
        if let failure { throw failure }
        if ended { throw .transactionEnded }
    }

    private func writableCheck() throws(EngineError) {
        try live()
        if !writable { throw .readOnly(path: engine.path) }
        if lent > 0 { throw .writeWhileReading }
        try checkStillOpen()
    }
}
