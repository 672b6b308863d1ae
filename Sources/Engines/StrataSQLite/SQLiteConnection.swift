import CSQLite
import StrataEngine

/// One SQLite connection and its prepared statements, used by one thread at a time
/// (opened with `SQLITE_OPEN_NOMUTEX`; the engine hands a connection to one transaction).
///
/// `@unchecked Sendable`: a connection serves one transaction at a time; between transactions
/// a reader's rests in the storage's pool, behind its lock, and may be taken by another thread.
final class SQLiteConnection: @unchecked Sendable {
    let handle: OpaquePointer
    let path: String
    private var cache: [String: OpaquePointer] = [:]
    private var checkedOut: Set<String> = []
    /// The statements run once per key or per scan, in slots of their own (see ``withHotStatement(_:_:)``).
    private let hotSlots = (0..<HotStatement.count).map { _ in HotSlot() }

    /// The statements of every point read, put and delete, and of every scan (one per shape).
    struct HotStatement {
        /// The statement's slot.
        let rawValue: Int

        static let get = HotStatement(rawValue: 0)
        static let put = HotStatement(rawValue: 1)
        static let delete = HotStatement(rawValue: 2)
        /// A put of a new key only (`putReportingReplaced`): no row changed tells the key exists.
        static let putNew = HotStatement(rawValue: 3 + 3 * 3 * 2)
        /// How many there are: the three above, the scans' and `putNew`.
        static let count = 3 + 3 * 3 * 2 + 1

        /// A scan's: its bounds' kinds (absent, inclusive, exclusive) and order. Bounds are
        /// parameters ?1 (lower) and ?2 (upper), the limit ?3.
        static func scan(_ range: ResolvedRange, reverse: Bool) -> HotStatement {
            HotStatement(rawValue: 3 + kind(range.lower) * 6 + kind(range.upper) * 2 + (reverse ? 1 : 0))
        }

        /// A bound's kind: 0 absent, 1 inclusive, 2 exclusive.
        private static func kind(_ bound: ResolvedRange.Bound?) -> Int { bound.map { $0.inclusive ? 1 : 2 } ?? 0 }

        /// `WHERE` for a range; the bounds are parameters ?1 (lower) and ?2 (upper).
        static func whereClause(_ range: ResolvedRange) -> String { whereClause(lower: kind(range.lower), upper: kind(range.upper)) }

        private static func whereClause(lower: Int, upper: Int) -> String {
            let terms = [["", "k >= ?1", "k > ?1"][lower], ["", "k <= ?2", "k < ?2"][upper]].filter { !$0.isEmpty }
            return terms.isEmpty ? "" : " WHERE " + terms.joined(separator: " AND ")
        }

        var sql: String {
            switch rawValue {
            case 0: return "SELECT v FROM kv WHERE k = ?1"
            case 1: return "INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)"
            case 2: return "DELETE FROM kv WHERE k = ?1"
            // Not `INSERT OR IGNORE`, which would also pass over a NOT NULL failure.
            case Self.putNew.rawValue: return "INSERT INTO kv(k, v) VALUES (?1, ?2) ON CONFLICT(k) DO NOTHING"
            default:
                let shape = rawValue - 3
                return "SELECT k, v FROM kv" + Self.whereClause(lower: shape / 6, upper: shape / 2 % 3)
                    + (shape % 2 == 1 ? " ORDER BY k DESC" : " ORDER BY k") + " LIMIT ?3"
            }
        }
    }

    private final class HotSlot {
        var statement: OpaquePointer?
        var lent = false
    }

    init(file: String, storePath: String, readOnly: Bool, create: Bool, timeout: Duration) throws(EngineError) {
        path = storePath
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(file, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let error = sqliteError(rc, db, "opening \(file)", path: storePath)
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        // Writers from other processes are waited on, up to the timeout, not reported at once.
        sqlite3_busy_timeout(db, Int32(clamping: timeout.wholeMilliseconds))
    }

    deinit {
        for statement in cache.values { sqlite3_finalize(statement) }
        for slot in hotSlots { sqlite3_finalize(slot.statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs SQL that returns no rows.
    func execute(_ sql: String) throws {
        try withStatement(sql) { statement in
            var rc: Int32
            repeat { rc = sqlite3_step(statement) } while rc == SQLITE_ROW
            try check(rc, handle, "executing \(sql)", path: path)
        }
    }

    /// Lends a point read's, write's or scan's statement, prepared once and reset afterwards. These
    /// run once per key or scan, where building the SQL and the cache's string-keyed lookups (four
    /// per call) cost more than SQLite's own work on a small row (a short scan: a third of its
    /// time). Every parameter is bound anew before each step, so the bindings are not cleared. A statement already lent (a read inside a read's body) falls back to the
    /// cache, which makes a twin.
    @inline(__always)
    func withHotStatement<R>(_ hot: HotStatement, _ body: (OpaquePointer) throws -> R) throws -> R {
        let slot = hotSlots[hot.rawValue]
        guard !slot.lent else { return try withStatement(hot.sql, body) }
        if slot.statement == nil {
            var prepared: OpaquePointer?
            let rc = sqlite3_prepare_v3(handle, hot.sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
            try check(rc, handle, "preparing \(hot.sql)", path: path)
            slot.statement = prepared
        }
        let statement = slot.statement!
        slot.lent = true
        defer {
            sqlite3_reset(statement)
            slot.lent = false
        }
        return try body(statement)
    }

    /// Lends the prepared statement for `sql`, reset and cleared afterwards. Statements are
    /// prepared once and reused; a statement already lent out (a nested scan of the same
    /// shape) gets a temporary twin.
    func withStatement<R, E: Error>(_ sql: String, _ body: (OpaquePointer) throws(E) -> R) throws -> R {
        let statement: OpaquePointer
        let temporary = checkedOut.contains(sql)
        if !temporary, let cached = cache[sql] {
            statement = cached
        } else {
            var prepared: OpaquePointer?
            let rc = sqlite3_prepare_v3(handle, sql, -1, temporary ? 0 : UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
            try check(rc, handle, "preparing \(sql)", path: path)
            statement = prepared!
            if !temporary { cache[sql] = statement }
        }
        if !temporary { checkedOut.insert(sql) }
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            if temporary { sqlite3_finalize(statement) } else { checkedOut.remove(sql) }
        }
        return try body(statement)
    }
}

/// A pointer SQLite may read for an empty blob (a nil base address would bind NULL, not an empty blob).
nonisolated(unsafe) private var emptyByte: UInt8 = 0

extension UnsafeRawBufferPointer {
    /// Binds these bytes as a BLOB (never NULL, never TEXT: keys compare bytewise only as BLOBs).
    /// The bytes must outlive the statement's next reset.
    @inline(__always)
    @discardableResult
    func bindBlob(to statement: OpaquePointer, at index: Int32) -> Int32 {
        guard count <= Int(Int32.max) else { return SQLITE_TOOBIG }
        return sqlite3_bind_blob(statement, index, baseAddress ?? UnsafeRawPointer(&emptyByte), Int32(count), nil)
    }

    /// Column `index` of the current row as borrowed bytes (empty for a zero-length blob,
    /// which SQLite reports as a NULL pointer).
    @inline(__always)
    init(column index: Int32, of statement: OpaquePointer) {
        let bytes = sqlite3_column_blob(statement, index)
        self.init(start: bytes, count: Int(sqlite3_column_bytes(statement, index)))
    }
}
