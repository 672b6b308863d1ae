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

/// LevelDB gives the room of deleted and overwritten pairs back when compactions merge them
/// away; `leveldb_compact_range` over every key runs them now (the memtable flushed, every level
/// above the deepest merged into the next), in place: LevelDB's manifest makes each step atomic,
/// so a crash leaves the store as it was or as it is after a step, whole. The store is this
/// process's alone (LevelDB locks it), so nothing else has to wait.
///
/// LevelDB never merges the deepest level's tables with themselves, and a memtable is flushed as
/// it is (deleted and overwritten pairs included), often straight to level 2: a store that never
/// outgrew its write buffer ends with every pair it ever wrote in one deepest table, and the range
/// compaction gives nothing back (measured: 2.56 MB of log became a 2.71 MB table). When the files
/// still take more than ``LevelDBStorage/rewriteThreshold`` times the live pairs' bytes, the live
/// pairs are written again (the same values: harmless if a crash stops it) and compacted once
/// more: the newer versions sit above the deepest level, so that merge drops every older one.
extension LevelDBStorage: CompactingStorage {
    func compact() throws -> CompactionReport {
        // After a failed write the log may end in a torn record: reopen first (readers are
        // drained), as the next write would, so nothing is written after it.
        if reopenBeforeWriting { try reopen() }
        let db = try handle()
        let before = CompactionReport.filesSize(in: path)
        try compactRange(db)
        let live = try rewriteLivePairs(db, ifFilesExceed: Self.rewriteThreshold)
        if live { try compactRange(db) }
        return CompactionReport(bytesBefore: before, bytesAfter: CompactionReport.filesSize(in: path))
    }

    /// How many times the live pairs' bytes the files may take after a compaction before the pairs
    /// are written again (LevelDB adds 8 bytes a key and its blocks' indexes and filters).
    static let rewriteThreshold = 1.5

    private func compactRange(_ db: OpaquePointer) throws {
        leveldb_compact_range(db, nil, 0, nil, 0)
        // A compaction that failed (a full disk) leaves its error in the database, which reports
        // it to the next write only: an empty batch asks for it without writing anything.
        let batch = leveldb_writebatch_create()
        defer { leveldb_writebatch_destroy(batch) }
        var err: UnsafeMutablePointer<CChar>?
        leveldb_write(db, writeOptions, batch, &err)
        do {
            try check(err, "compacting", path: path)
        } catch {
            // LevelDB keeps a background error until it is reopened, as after a failed write.
            reopenBeforeWriting = true
            throw error
        }
    }

    /// Writes every pair again, in batches, when the files take more than `threshold` times the
    /// pairs' bytes (plus 64 KiB); returns whether it did.
    private func rewriteLivePairs(_ db: OpaquePointer, ifFilesExceed threshold: Double) throws -> Bool {
        let readOptions = leveldb_readoptions_create()
        defer { leveldb_readoptions_destroy(readOptions) }
        leveldb_readoptions_set_fill_cache(readOptions, 0)
        func eachPair(_ body: (UnsafePointer<CChar>, Int, UnsafePointer<CChar>, Int) throws -> Void) throws {
            let iterator = leveldb_create_iterator(db, readOptions)!
            defer { leveldb_iter_destroy(iterator) }
            leveldb_iter_seek_to_first(iterator)
            var keyLength = 0, valueLength = 0
            while leveldb_iter_valid(iterator) != 0 {
                let key = leveldb_iter_key(iterator, &keyLength)!
                let value = leveldb_iter_value(iterator, &valueLength)!
                try body(key, keyLength, value, valueLength)
                leveldb_iter_next(iterator)
            }
            var err: UnsafeMutablePointer<CChar>?
            leveldb_iter_get_error(iterator, &err)
            try check(err, "reading the store to compact it", path: path)
        }
        var liveBytes = 0
        try eachPair { _, keyLength, _, valueLength in liveBytes += keyLength + valueLength }
        guard Double(CompactionReport.filesSize(in: path)) > Double(liveBytes) * threshold + 65_536 else { return false }
        // Unsynced: the values are the ones already stored, so losing the rewrite loses nothing.
        let unsynced = leveldb_writeoptions_create()
        defer { leveldb_writeoptions_destroy(unsynced) }
        let batch = leveldb_writebatch_create()
        defer { leveldb_writebatch_destroy(batch) }
        var batched = 0
        func flush() throws {
            var err: UnsafeMutablePointer<CChar>?
            leveldb_write(db, unsynced, batch, &err)
            do {
                try check(err, "writing the pairs again to compact them", path: path)
            } catch {
                reopenBeforeWriting = true  // as after any failed write
                throw error
            }
            leveldb_writebatch_clear(batch)
            batched = 0
        }
        try eachPair { key, keyLength, value, valueLength in
            leveldb_writebatch_put(batch, key, keyLength, value, valueLength)
            batched += keyLength + valueLength
            if batched >= 1 << 20 { try flush() }
        }
        try flush()
        return true
    }
}
