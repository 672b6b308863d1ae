import CSQLite
import Foundation
@_spi(StrataInternals) import StrataEngine

/// A Strata engine on SQLite (libsqlite3, 3.37 or newer): one `WITHOUT ROWID` table whose
/// primary key is a BLOB, so rows are stored and scanned in bytewise key order.
///
/// The store is a directory holding `data.sqlite` (plus SQLite's `-wal` and `-shm` files):
///
///     CREATE TABLE kv(k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID
///
/// `STRICT` makes SQLite refuse keys and values that are not BLOBs, whoever writes them: SQLite
/// orders INTEGER < TEXT < BLOB, so a TEXT key would be scanned out of byte order. A table without
/// it (an older Strata store, or another tool's identical table) is checked at the first writable
/// open and rebuilt `STRICT` when every row is BLOBs; otherwise the open is refused, naming what
/// was found (RecordFormat.md, "SQLite").
///
/// WAL mode. Writers use one connection and `BEGIN IMMEDIATE`; each reader uses a connection of
/// its own and pins its snapshot as it begins (a deferred `BEGIN` would take it only at the first
/// read). Several processes may share the store; a busy database is waited on (60 s).
public final class SQLiteEngine: CoreBackedEngine, Sendable {
    /// SQLite's declaration: name `sqlite`, persistent and multi-process, 511-byte keys, values
    /// up to 999,999,000 bytes (`SQLITE_MAX_LENGTH` bounds a whole row), no per-transaction
    /// limits, storage that reads its own writes, and `data.sqlite` as the file that marks a
    /// store's directory.
    public static let declaration = EngineDeclaration(
        name: "sqlite", capabilities: [.persistent, .multiProcess],
        // SQLITE_MAX_LENGTH (10^9 bytes) bounds a whole row: room is left for the key and the header.
        limits: EngineLimits(maxValueLength: 999_999_000),
        marker: "data.sqlite")

    /// The core engine over this store's SQLite connections; it keeps the contract.
    public let core: CoreEngine
    /// The store's directory.
    public let path: String
    /// The options the store was opened with; their `timeout` is also SQLite's busy timeout, how
    /// long a writer of another process is waited on.
    public var options: EngineOptions { core.options }
    /// The database file inside the store directory.
    public let file: String

    static let schema = "CREATE TABLE kv(k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID"
    /// Strata's table before `STRICT`.
    static let looseSchema = "CREATE TABLE kv(k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID"

    /// Opens (or creates, with `.create`) the SQLite store in the directory at `path`, making an
    /// older table without `STRICT` strict at a writable open. Throws `EngineError.notAStore`,
    /// leaving the file as it was, when `data.sqlite` is not Strata's (not SQLite, no or another
    /// `kv` table, other tables, keys or values that are not BLOBs), and `EngineError.corrupt`
    /// when its header shows it truncated.
    public init(path: String, options: EngineOptions = EngineOptions()) throws {
        self.path = path
        let file = (path as NSString).appendingPathComponent("data.sqlite")
        self.file = file
        core = try CoreEngine(declaration: Self.declaration, path: path, options: options) { context in
            try SQLiteStorage(path: path, file: file, options: context.options)
        }
    }
}

/// The writer's connection and a pool of readers' connections.
///
/// `@unchecked Sendable`: `writer` is used only by the engine core's one writer (and by `init`
/// and `close`, which nothing runs beside).
final class SQLiteStorage: KeyValueStorage, @unchecked Sendable {
    let path: String
    let file: String
    let options: EngineOptions
    private var writer: SQLiteConnection?
    private let idleReaders = Locked<[SQLiteConnection]>([])

    init(path: String, file: String, options: EngineOptions) throws {
        self.path = path
        self.file = file
        self.options = options
        try Self.checkHeader(file, path: path)
        // What exists before this open: a failed open removes only what it created, and only a
        // database file this open created is initialized (an existing empty one is a truncated store).
        let companions = ["-wal", "-shm"].map { file + $0 }.filter { !FileManager.default.fileExists(atPath: $0) }
        let existed = FileManager.default.fileExists(atPath: file)
        do {
            if options.mode == .readOnly {
                let reader = try connect(readOnly: true, create: false)
                switch try Self.inspect(reader, path: path) {
                case .empty: throw EngineError.notAStore(path: path, reason: "data.sqlite has no kv table")
                case .loose: try Self.refuseNonBlobRows(reader, path: path)  // cannot convert: check only
                case .strict: break
                }
                idleReaders.withLock { $0.append(reader) }
            } else {
                let connection = try connect(readOnly: false, create: options.mode == .create)
                // Inspect before writing anything: another application's database is left as it was.
                let state = try Self.inspect(connection, path: path)
                if state == .empty && (options.mode != .create || existed) {
                    throw EngineError.notAStore(path: path, reason: "data.sqlite has no kv table (a truncated or foreign file)")
                }
                try connection.execute("PRAGMA journal_mode=WAL")
                try connection.execute(options.durability == .full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
                if state == .empty {
                    try connection.execute(SQLiteEngine.schema)
                    // The new store's table goes to the main file, synced (also under NORMAL), so a
                    // power loss before the first synced commit leaves an empty store, not a file
                    // without its table (refused as not a store).
                    try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                }
                if state == .loose { try Self.makeStrict(connection, path: path) }
                writer = connection
            }
        } catch {
            idleReaders.withLock { $0.removeAll() }
            writer = nil
            for created in companions { try? FileManager.default.removeItem(atPath: created) }
            throw error
        }
    }

    private func connect(readOnly: Bool, create: Bool) throws -> SQLiteConnection {
        try SQLiteConnection(file: file, storePath: path, readOnly: readOnly, create: create, timeout: options.timeout)
    }

    /// SQLite notices a truncated file only when it reads a missing page; check the header first:
    /// the magic string, a valid page size and, with no WAL pending, a whole number of pages and at
    /// least the number of pages the header records (when valid: offset 92 equals offset 24).
    private static func checkHeader(_ file: String, path: String) throws(EngineError) {
        guard let handle = FileHandle(forReadingAtPath: file) else { return }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        if size == 0 { return }  // judged after opening: an empty file holds no Strata table
        try? handle.seek(toOffset: 0)
        guard let header = try? handle.read(upToCount: 100), header.count == 100,
              header.prefix(16) == Data("SQLite format 3\u{0}".utf8) else {
            throw .notAStore(path: path, reason: "data.sqlite is not an SQLite database")
        }
        func be(_ offset: Int, _ count: Int) -> UInt64 { header[offset..<(offset + count)].reduce(0) { $0 << 8 | UInt64($1) } }
        let rawPageSize = be(16, 2)
        let pageSize = rawPageSize == 1 ? 65_536 : rawPageSize
        guard pageSize >= 512, pageSize & (pageSize - 1) == 0 else {
            throw .corrupt(path: path, detail: "data.sqlite declares a page size of \(rawPageSize)")
        }
        // While a WAL exists the main file is not the whole store: a checkpoint interrupted or under
        // way (a full disk during the checkpoint at close, a crash) may have left it short or with
        // a partly written last page, and the next checkpoint rewrites those pages from the WAL.
        // A checkpoint writes page 1 (with the new count) before the pages it adds.
        let walSize = (try? FileManager.default.attributesOfItem(atPath: file + "-wal")[.size] as? NSNumber)?.intValue ?? 0
        guard walSize > 0 || size % pageSize == 0 else {
            throw .corrupt(path: path, detail: "data.sqlite is \(size) bytes, not a whole number of \(pageSize)-byte pages (truncated)")
        }
        let recordedPages = be(28, 4)
        if walSize == 0, be(92, 4) == be(24, 4), recordedPages > 0, size < recordedPages * pageSize {
            throw .corrupt(path: path, detail: "data.sqlite is \(size / pageSize) pages long but records \(recordedPages) (truncated)")
        }
    }

    private enum Contents {
        case empty
        /// Strata's table.
        case strict
        /// Strata's table before `STRICT`: its rows may hold other types than BLOB.
        case loose
    }

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
        // A table rebuilt by `makeStrict` is named through ALTER TABLE, which SQLite records quoted.
        let kv = tables["kv"]?.replacingOccurrences(of: #"CREATE TABLE "kv"("#, with: "CREATE TABLE kv(")
        if tables.count == 1 && kv == SQLiteEngine.schema { return .strict }
        if tables.count == 1 && kv == SQLiteEngine.looseSchema { return .loose }
        if let kv {
            if kv == SQLiteEngine.schema || kv == SQLiteEngine.looseSchema {
                let others = tables.keys.filter { $0 != "kv" }.sorted()
                throw EngineError.notAStore(path: path, reason: "data.sqlite holds Strata's kv table and other tables (\(others.joined(separator: ", "))): another program's database")
            }
            throw EngineError.notAStore(path: path, reason: "data.sqlite has a different kv table: \(kv)")
        }
        throw EngineError.notAStore(path: path, reason: "data.sqlite holds other tables (\(tables.keys.sorted().joined(separator: ", "))) and no kv table")
    }

    /// Throws `notAStore` naming the rows whose key or value is not a BLOB, if there are any.
    private static func refuseNonBlobRows(_ connection: SQLiteConnection, path: String) throws {
        var found: [String] = []
        let sql = """
            SELECT 'key', typeof(k), count(*) FROM kv WHERE typeof(k) <> 'blob' GROUP BY 2
            UNION ALL SELECT 'value', typeof(v), count(*) FROM kv WHERE typeof(v) <> 'blob' GROUP BY 2
            """
        try connection.withStatement(sql) { s in
            while true {
                let rc = sqlite3_step(s)
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else { throw sqliteError(rc, connection.handle, "checking the kv table's types", path: path) }
                let count = sqlite3_column_int64(s, 2)
                let what = String(cString: sqlite3_column_text(s, 0))
                found.append("\(count) \(what)\(count == 1 ? "" : "s") of type \(String(cString: sqlite3_column_text(s, 1)))")
            }
        }
        if !found.isEmpty {
            throw EngineError.notAStore(path: path, reason: "data.sqlite's kv table holds " + found.joined(separator: ", ")
                + "; Strata keys and values are BLOBs (SQLite orders INTEGER < TEXT < BLOB, so other keys would be scanned out of byte order)")
        }
    }

    /// Rebuilds a table without `STRICT` as Strata's table, in one SQLite transaction: all or nothing.
    private static func makeStrict(_ connection: SQLiteConnection, path: String) throws {
        guard sqlite3_libversion_number() >= 3_037_000 else {
            throw EngineError.notAStore(path: path, reason: "SQLite \(String(cString: sqlite3_libversion())) is older than 3.37, which STRICT tables need")
        }
        try connection.execute("BEGIN IMMEDIATE")
        do {
            try refuseNonBlobRows(connection, path: path)
            try connection.execute(SQLiteEngine.schema.replacingOccurrences(of: "TABLE kv(", with: "TABLE kv_strict("))
            try connection.execute("INSERT INTO kv_strict(k, v) SELECT k, v FROM kv")
            try connection.execute("DROP TABLE kv")
            try connection.execute("ALTER TABLE kv_strict RENAME TO kv")
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    func beginRead() throws -> any StorageReadTransaction {
        let connection = try checkOutReader()
        do {
            return try SQLiteTransaction(storage: self, connection: connection, writable: false)
        } catch {
            checkIn(connection)
            throw error
        }
    }

    func beginWrite() throws -> any StorageWriteTransaction {
        try SQLiteTransaction(storage: self, connection: writer!, writable: true)
    }

    func close() throws {
        // Readers first: SQLite checkpoints the WAL into data.sqlite and deletes -wal and -shm
        // when the last connection to the file closes, which a read-only connection cannot do.
        // (Another process still holding the store keeps them, as it should.)
        idleReaders.withLock { $0.removeAll() }
        writer = nil
    }

    private func checkOutReader() throws -> SQLiteConnection {
        if let idle = idleReaders.withLock({ $0.popLast() }) { return idle }
        return try connect(readOnly: true, create: false)
    }

    /// Gives a reader's connection back to the pool when its transaction ends.
    func checkIn(_ connection: SQLiteConnection) {
        idleReaders.withLock { $0.append(connection) }
    }
}

extension EngineConfiguration {
    /// SQLite in the directory at `path`; see ``SQLiteEngine``.
    public static func sqlite(path: String) -> EngineConfiguration {
        EngineConfiguration(name: "sqlite", path: path) { try SQLiteEngine(path: path, options: $0) }
    }
}

extension EngineKind {
    /// SQLite.
    public static let sqlite = EngineKind(declaration: SQLiteEngine.declaration) { .sqlite(path: $0) }
}

/// SQLite keeps the pages freed by deletes in its file for reuse; `VACUUM` rebuilds the database
/// into a temporary one and writes it back in place, through the write-ahead log, as one
/// transaction: a crash leaves the store as it was or as it is after, and other processes'
/// connections stay valid (they see the rebuilt file as one more commit). A checkpoint then
/// empties the log into the file (`TRUNCATE`), so the log does not keep the room the file gave back.
/// Needs room for a temporary copy of the store (SQLite's temporary directory) and for the log.
extension SQLiteStorage: CompactingStorage {
    func compact() throws -> CompactionReport {
        guard let writer else { throw EngineError.readOnly(path: path) }
        let before = CompactionReport.filesSize(in: path)
        try writer.execute("VACUUM")
        try writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return CompactionReport(bytesBefore: before, bytesAfter: CompactionReport.filesSize(in: path))
    }
}
