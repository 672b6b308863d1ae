import CLevelDB
import Foundation
import StrataEngine

/// LevelDB-specific settings.
public struct LevelDBOptions: Sendable, Hashable {
    /// Snappy block compression (LevelDB's default). Default: on.
    public var compression: Bool
    /// The block cache in bytes; 0 keeps LevelDB's own 8 MiB default.
    public var cacheSize: Int
    /// The memtable size in bytes before it is written to a table; 0 keeps the 4 MiB default.
    public var writeBufferSize: Int
    /// Bits per key of a Bloom filter in every table, so a read of a missing key skips the tables
    /// that cannot hold it (secondary indexes read the old record before every write); 0 for none.
    /// Default 10 (about 1% false positives). Tables written with any setting stay readable by
    /// every LevelDB reader.
    public var bloomFilterBits: Int

    /// Options that, unless given, compress blocks with Snappy, keep LevelDB's own cache and
    /// memtable sizes (`0`: 8 MiB and 4 MiB) and write a Bloom filter of 10 bits per key.
    public init(compression: Bool = true, cacheSize: Int = 0, writeBufferSize: Int = 0, bloomFilterBits: Int = 10) {
        self.compression = compression
        self.cacheSize = cacheSize
        self.writeBufferSize = writeBufferSize
        self.bloomFilterBits = bloomFilterBits
    }
}

/// A Strata engine on LevelDB (libleveldb, C API): a log-structured merge tree.
///
/// LevelDB has no transactions; the adapter builds them. A read transaction is a LevelDB
/// snapshot. A write transaction is a `WriteBatch` over a snapshot, written atomically at commit;
/// the engine core merges the batch's pending writes into the transaction's own reads.
///
/// Only one process may open a store (LevelDB's `LOCK` file): a second opener fails with
/// `EngineError.locked(path:)`. In `.readOnly` mode Strata refuses writes, but LevelDB may
/// still tidy its own files (replay its log into a table) when it opens.
public final class LevelDBEngine: CoreBackedEngine, Sendable {
    /// LevelDB's declaration: name `leveldb`, persistent but one process at a time (no
    /// `multiProcess`), 511-byte keys, values up to `UInt32.max` bytes (a batch record's 32-bit
    /// length), no per-transaction limits, storage that does not read its own writes (the core
    /// overlays the pending batch), and `CURRENT` as the file that marks a store's directory.
    public static let declaration = EngineDeclaration(
        name: "leveldb", capabilities: [.persistent],
        // A batch record holds a value's length as a 32-bit varint.
        limits: EngineLimits(maxValueLength: Int(UInt32.max)),
        readsOwnWrites: false, marker: "CURRENT")

    /// The core engine over this store's LevelDB handle; it keeps the contract.
    public let core: CoreEngine
    /// The store's directory.
    public let path: String
    /// The options the store was opened with.
    public var options: EngineOptions { core.options }
    /// The LevelDB settings the store was opened with.
    public let levelDBOptions: LevelDBOptions

    /// Opens (or creates, with `.create`) the LevelDB store in the directory at `path`, with the
    /// settings `leveldb` (the defaults unless given). A writable open recovers a log whose only
    /// damage is a record torn at its tail (a power loss); other damage throws
    /// `EngineError.corrupt`, and a store another process holds `EngineError.locked`.
    public init(path: String, options: EngineOptions = EngineOptions(), leveldb: LevelDBOptions = LevelDBOptions()) throws {
        self.path = path
        self.levelDBOptions = leveldb
        core = try CoreEngine(declaration: Self.declaration, path: path, options: options) { context in
            try LevelDBStorage(path: path, context: context, leveldb: leveldb)
        }
    }
}

/// The LevelDB handle and the options it was opened with.
///
/// `@unchecked Sendable`: the C handles are made in `init` and freed in `deinit`; LevelDB's own locks make them thread-safe.
final class LevelDBStorage: KeyValueStorage, @unchecked Sendable {
    let path: String
    private let services: StorageServices
    private(set) var db: OpaquePointer?
    private let dbOptions: OpaquePointer
    private let cache: OpaquePointer?
    private let filterPolicy: OpaquePointer?
    let writeOptions: OpaquePointer

    init(path: String, context: StorageContext, leveldb: LevelDBOptions) throws {
        self.path = path
        services = context.services
        try LevelDBFileCheck.validate(path)
        dbOptions = leveldb_options_create()
        leveldb_options_set_create_if_missing(dbOptions, context.options.mode == .create ? 1 : 0)
        // Report corruption instead of skipping it: by default LevelDB opens a store whose
        // manifest or log was truncated, as if the lost part never existed.
        leveldb_options_set_paranoid_checks(dbOptions, 1)
        leveldb_options_set_compression(dbOptions, Int32(leveldb.compression ? leveldb_snappy_compression : leveldb_no_compression))
        cache = leveldb.cacheSize > 0 ? leveldb_cache_create_lru(leveldb.cacheSize) : nil
        if let cache { leveldb_options_set_cache(dbOptions, cache) }
        if leveldb.writeBufferSize > 0 { leveldb_options_set_write_buffer_size(dbOptions, leveldb.writeBufferSize) }
        filterPolicy = leveldb.bloomFilterBits > 0 ? leveldb_filterpolicy_create_bloom(Int32(leveldb.bloomFilterBits)) : nil
        if let filterPolicy { leveldb_options_set_filter_policy(dbOptions, filterPolicy) }
        writeOptions = leveldb_writeoptions_create()
        leveldb_writeoptions_set_sync(writeOptions, context.options.durability == .full ? 1 : 0)
        // Every property is set, so a throw here runs deinit, which frees the options.
        try openDroppingATornTail(writable: context.options.mode != .readOnly)
    }

    /// Opens the database. When LevelDB reports corruption and the only damage is a record torn
    /// by a power loss at the log's tail (``LevelDBLogTail``), opens once without paranoid checks
    /// (LevelDB's recovery drops that record and writes the rest to a table), then as always.
    private func openDroppingATornTail(writable: Bool) throws(EngineError) {
        do {
            try openDatabase("opening the database")
            return
        } catch {
            guard case .corrupt = error, writable, LevelDBLogTail.onlyTailIsTorn(path) else { throw error }
        }
        do {
            leveldb_options_set_paranoid_checks(dbOptions, 0)
            defer { leveldb_options_set_paranoid_checks(dbOptions, 1) }
            try openDatabase("recovering a log whose last record was torn")
        }
        if let db { leveldb_close(db) }
        db = nil
        try openDatabase("opening the database")
    }

    deinit {
        if let db { leveldb_close(db) }
        leveldb_options_destroy(dbOptions)
        if let cache { leveldb_cache_destroy(cache) }
        if let filterPolicy { leveldb_filterpolicy_destroy(filterPolicy) }
        leveldb_writeoptions_destroy(writeOptions)
    }

    /// Set when a write failed (a full disk): LevelDB may have left a torn record in its log,
    /// and writing after it would leave that record in the *middle* of the log, which recovery
    /// reports as corruption (or, without paranoid checks, skips along with later commits). So
    /// the next write first reopens the database: the torn record stays at the old log's tail,
    /// which recovery drops cleanly, and writes go on in a new log.
    var reopenBeforeWriting = false
    /// Why the database is closed, when reopening it failed.
    private var unavailable: EngineError?

    private func openDatabase(_ operation: String) throws(EngineError) {
        var err: UnsafeMutablePointer<CChar>?
        let handle = leveldb_open(dbOptions, path, &err)
        try check(err, operation, path: path)
        db = handle
    }

    func beginRead() throws -> any StorageReadTransaction {
        // After a failed reopen (a disk still full), a reader retries it, alone.
        if unavailable != nil { throw StorageNeedsExclusiveAccess { try self.reopen() } }
        return LevelDBTransaction(storage: self, db: try handle(), writable: false)
    }

    func beginWrite() throws -> any StorageWriteTransaction {
        if reopenBeforeWriting { try services.withReadersDrained { try reopen() } }
        return LevelDBTransaction(storage: self, db: try handle(), writable: true)
    }

    /// The open database, or why there is none (a reopen after a failed write failed).
    private func handle() throws(EngineError) -> OpaquePointer {
        if let db { return db }
        throw unavailable ?? .engineFailure(engine: "LevelDB", code: 0, message: "the database is not open", operation: "beginning a transaction")
    }

    /// Reopens the database after a failed write, with no reader of this process inside a
    /// transaction (they hold the old handle).
    private func reopen() throws {
        guard reopenBeforeWriting else { return }
        if let db { leveldb_close(db) }
        db = nil
        do {
            try openDatabase("reopening the database after a failed write")
            reopenBeforeWriting = false
            unavailable = nil
        } catch {
            unavailable = error
            throw error
        }
    }

    func close() throws {
        if let db { leveldb_close(db) }
        db = nil
    }
}

extension EngineConfiguration {
    /// LevelDB in the directory at `path`; see ``LevelDBEngine``.
    public static func leveldb(path: String, options: LevelDBOptions = LevelDBOptions()) -> EngineConfiguration {
        EngineConfiguration(name: "leveldb", path: path) { try LevelDBEngine(path: path, options: $0, leveldb: options) }
    }
}

extension EngineKind {
    /// LevelDB with default options.
    public static let leveldb = EngineKind(declaration: LevelDBEngine.declaration) { .leveldb(path: $0) }
}
