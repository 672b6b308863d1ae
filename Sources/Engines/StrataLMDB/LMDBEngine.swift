import CLMDB
import Foundation
@_spi(StrataInternals) import StrataEngine

/// LMDB-specific settings.
public struct LMDBOptions: Sendable, Hashable {
    /// The initial map size in bytes: address space, not disk (`data.mdb` grows with the data).
    /// A starting point, not a cap: before a write transaction begins, the map is doubled while
    /// less room is left than the store uses, and a transaction that fills it anyway is replayed
    /// into a larger map (see ``LMDBEngine``). Default: 64 GiB, so that growth, which waits for the
    /// process's read transactions to end, is rare.
    public var mapSize: Int
    /// Read transactions that may be open at once across every process sharing the store.
    /// Beyond it, starting a read throws `EngineError.readersFull(limit:)` (it does not wait).
    /// Default: 256.
    public var maxReaders: Int

    /// Options with an initial map of `mapSize` bytes (default 64 GiB) and `maxReaders` reader
    /// slots (default 256). A map this process cannot address is opened smaller (an eighth at a
    /// time, down to 1 GiB) and grows from there.
    public init(mapSize: Int = 64 << 30, maxReaders: Int = 256) {
        self.mapSize = mapSize
        self.maxReaders = maxReaders
    }
}

/// A Strata engine on LMDB (liblmdb): a B+tree in one memory-mapped file, MVCC snapshots for
/// readers, one writer at a time.
///
/// The store is a directory holding LMDB's `data.mdb` and `lock.mdb`. Several processes may
/// share it. Opened with `MDB_NOTLS` (read transactions are not tied to threads) and never
/// with `MDB_WRITEMAP` (a full disk would then kill the process with SIGBUS).
///
/// A writer waits for another process's write transaction for as long as it runs: LMDB's writer
/// lock cannot be waited on with a bound, so `EngineOptions.timeout` does not apply to it.
///
/// The map grows by itself (``LMDBOptions/mapSize``). Growing remaps the file, so the writer
/// that grows it first waits for every read transaction of this process to end, and new ones
/// wait meanwhile: a read transaction held open for a long time delays such a write for as long
/// (no error). A reader that waits for that writer would wait forever: keep read transactions
/// short, or large enough a map that no growth is needed while they run.
///
/// Other programs' environments open when their main database is a plain bytewise map. A main
/// database made with flags (`MDB_DUPSORT`, `MDB_REVERSEKEY`, …) and an environment with named
/// sub-databases are `EngineError.notAStore(path:reason:)`: at open, or for sub-databases
/// between ordinary keys, at the read or write that reaches one. A truncated `data.mdb` is
/// `EngineError.corrupt(path:detail:)` at open, or, when only the overflow pages of large
/// values were cut, at the read of such a value (never SIGBUS).
public final class LMDBEngine: CoreBackedEngine, Sendable {
    /// LMDB's declaration: name `lmdb`, persistent and multi-process, 511-byte keys, values up to
    /// `UInt32.max` bytes (LMDB's own bound), no per-transaction limits, storage that reads its own
    /// writes, and `data.mdb` as the file that marks a store's directory.
    public static let declaration = EngineDeclaration(
        name: "lmdb", capabilities: [.persistent, .multiProcess],
        // MDB_val sizes are size_t, but a value must fit in the map: LMDB's own bound is 32 bits.
        limits: EngineLimits(maxValueLength: Int(UInt32.max)),
        marker: "data.mdb")

    /// The core engine over this store's LMDB environment and main database; it keeps the contract.
    public let core: CoreEngine
    /// The store's directory.
    public let path: String
    /// The options the store was opened with.
    public var options: EngineOptions { core.options }
    /// The LMDB settings the store was opened with; ``LMDBEngine/mapSize`` is the map's size now,
    /// which growth may have taken past `lmdbOptions.mapSize`.
    public let lmdbOptions: LMDBOptions
    private let storage: LMDBStorage

    /// Opens (or creates, with `.create`) the LMDB store in the directory at `path`.
    public init(path: String, options: EngineOptions = EngineOptions(), lmdb: LMDBOptions = LMDBOptions()) throws {
        self.path = path
        self.lmdbOptions = lmdb
        var opened: LMDBStorage?
        core = try CoreEngine(declaration: Self.declaration, path: path, options: options) { context in
            let storage = try LMDBStorage(path: path, context: context, lmdb: lmdb)
            opened = storage
            return storage
        }
        storage = opened!
    }

    /// The current size of the memory map in bytes (grows when writes fill it).
    public var mapSize: Int { storage.mapSize }

    /// Write transactions that logged their writes from the start and from midway (``LMDBMapRoom``).
    var writeLogStarts: (fromBegin: Int, midway: Int) { storage.writeLogStarts }

    /// The environment's flags as LMDB reports them (`mdb_env_get_flags`): always `MDB_NOTLS`;
    /// `MDB_NOMETASYNC` under `Durability.relaxed` (data pages are synced at every
    /// commit, the meta page is not, so a machine crash loses at most the latest commits and
    /// never the store's integrity; `MDB_NOSYNC` could leave a corrupt file and is never used).
    public var environmentFlags: UInt32 { storage.environmentFlags }
}

/// The LMDB environment and its main database.
///
/// `@unchecked Sendable`: `env` and `unusable` change only at open, close and compaction, which the engine core's gate runs with no
/// transaction active; `mapSize` and `environmentFlags`, read outside transactions, take `environmentLock`, which a compaction holds
/// while it replaces the environment.
final class LMDBStorage: KeyValueStorage, @unchecked Sendable {
    let path: String
    let options: EngineOptions
    let lmdbOptions: LMDBOptions
    private let services: StorageServices
    /// Internal for the compaction (LMDBCompaction.swift), which closes and reopens it.
    var env: OpaquePointer?
    /// Set when LMDB could not remap the file after a map size change (or reopen it after a
    /// compaction): the environment has no map any more, so every later transaction fails with
    /// this error (close still works).
    var unusable: EngineError?
    /// Held from before the environment opens until after it closes (``LMDBPresenceLock``).
    private(set) var presence: LMDBPresenceLock?
    /// Held by a compaction while `env` is closed and opened again, and by the readers of the
    /// environment's settings outside transactions.
    let environmentLock = Locked(())
    private(set) var dbi: MDB_dbi = 0
    /// Checks of values against the end of a short data file; set at open.
    private(set) var bounds = LMDBFileBounds.none
    /// The largest node a leaf page holds inline (LMDB's `me_nodemax`): a named sub-database's
    /// record is always inline, which is what lets ``refuseSubDatabase(_:key:)`` read its node.
    private var nodeMax = 0
    /// The environment's page size.
    private(set) var pageSize = 4096
    /// Taken by write transactions before LMDB's writer mutex (``LMDBWriterLock``); `nil` when
    /// read-only.
    private(set) var writerLock: LMDBWriterLock?
    /// Write transactions that logged their writes from the start and from midway; changed by
    /// the one writer only (for tests).
    var writeLogStarts = (fromBegin: 0, midway: 0)

    init(path: String, context: StorageContext, lmdb: LMDBOptions) throws {
        self.path = path
        self.options = context.options
        self.lmdbOptions = lmdb
        services = context.services
        let dataFile = (path as NSString).appendingPathComponent("data.mdb")
        if FileManager.default.fileExists(atPath: dataFile) {
            try LMDBFileCheck.validate(dataFile, storePath: path)
        }
        presence = try LMDBPresenceLock.take(path: path, readOnly: options.mode == .readOnly, timeout: options.timeout)
        // A compaction that died before replacing data.mdb left its copy; none runs now (it would
        // hold the presence lock alone).
        if options.mode != .readOnly { unlink(Self.compactionCopy(in: path)) }
        do {
            try open()
        } catch {
            if let env { mdb_env_close(env) }
            env = nil
            throw error
        }
    }

    /// The smallest map tried when the configured one does not fit the address space.
    static let smallestFallbackMap = 1 << 30

    /// Opens the environment; `holdingWriterLock`: the caller (a compaction) holds the writer
    /// lock already and keeps it.
    func open(holdingWriterLock: Bool = false) throws(EngineError) {
        var flags = UInt32(MDB_NOTLS)
        if options.mode == .readOnly { flags |= UInt32(MDB_RDONLY) }
        // Relaxed: skip only the meta page's sync. Without MDB_NOSYNC's unsynced data pages a
        // machine crash can lose the latest commits but never leave a meta page pointing at
        // pages that did not reach the disk.
        if options.durability == .relaxed { flags |= UInt32(MDB_NOMETASYNC) }
        var mapSize = lmdbOptions.mapSize
        while true {
            try check(mdb_env_create(&env), "creating the environment", path: path)
            try check(mdb_env_set_mapsize(env, mapSize), "setting the map size", path: path)
            try check(mdb_env_set_maxreaders(env, UInt32(lmdbOptions.maxReaders)), "setting max readers", path: path)
            let rc = mdb_env_open(env, path, flags, 0o644)
            if rc == MDB_SUCCESS { break }
            // A large map may not fit the address space this process may use (ulimit -v, valgrind):
            // LMDB cannot map it (ENOMEM, or EINVAL from mmap). The map is a starting point that
            // grows, so open with a smaller one. A failed open leaves only mdb_env_close.
            mdb_env_close(env)
            env = nil
            guard rc == ENOMEM || rc == EINVAL, mapSize > Self.smallestFallbackMap else {
                throw lmdbError(rc, "opening the environment", path: path)
            }
            mapSize = max(Self.smallestFallbackMap, mapSize / 8)
        }
        // Free the reader slots of processes that died inside a read transaction (kill -9).
        var stale: Int32 = 0
        if options.mode != .readOnly { try check(mdb_reader_check(env, &stale), "clearing stale readers", path: path) }
        bounds = try LMDBFileBounds(env: env!, storePath: path)
        try bounds.checkFreeList(env!)
        // The unnamed main database; opening it needs a transaction.
        var txn: OpaquePointer?
        let readOnly = options.mode == .readOnly
        if !readOnly && !holdingWriterLock {
            let lock: LMDBWriterLock
            if let writerLock { lock = writerLock } else { lock = try LMDBWriterLock(path: path) }
            try lock.lock()
            writerLock = lock
        }
        defer { if !holdingWriterLock { writerLock?.unlock() } }
        try check(mdb_txn_begin(env, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn), "beginning the open transaction", path: path)
        let rc = mdb_dbi_open(txn, nil, 0, &dbi)
        if rc != MDB_SUCCESS {
            mdb_txn_abort(txn)
            throw lmdbError(rc, "opening the main database", path: path)
        }
        // A main database made with flags (by mdb_load or another program) orders or stores
        // keys otherwise than bytewise, one value per key: refused before anything is written.
        var stored: UInt32 = 0
        mdb_dbi_flags(txn, dbi, &stored)
        if let flag = Self.foreignFlags.first(where: { stored & $0.flag != 0 }) {
            mdb_txn_abort(txn)
            throw .notAStore(path: path, reason: "data.mdb's main database was made with \(flag.name) (keys not in bytewise order, or several values per key)")
        }
        var stat = MDB_stat()
        mdb_env_stat(env, &stat)
        pageSize = Int(stat.ms_psize)
        nodeMax = (pageSize - 16) / 2 & ~1
        do {
            try refuseSubDatabasesAtTheEnds(txn!)
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try check(readOnly ? { mdb_txn_abort(txn); return MDB_SUCCESS }() : mdb_txn_commit(txn), "committing the open transaction", path: path)
    }

    // MARK: Named sub-databases

    /// The size of a named sub-database's record in the main database (`MDB_db`, 64-bit).
    static let subDatabaseRecordSize = 48
    private static let subDatabaseFlag: UInt16 = 0x02  // F_SUBDATA, a node flag

    /// An environment of a program using named databases usually keeps nothing else in its main
    /// database: its first or last key names a sub-database, and the store is refused at open.
    /// Sub-databases between other keys are refused when a read or write reaches them.
    private func refuseSubDatabasesAtTheEnds(_ txn: OpaquePointer) throws(EngineError) {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi, &cursor), "opening a cursor", path: path)
        defer { mdb_cursor_close(cursor) }
        for op in [MDB_FIRST, MDB_LAST] {
            var k = MDB_val(), v = MDB_val()
            let rc = mdb_cursor_get(cursor, &k, &v, op)
            if rc == MDB_NOTFOUND { return }
            try check(rc, "reading the main database", path: path)
            if v.mv_size == Self.subDatabaseRecordSize { try refuseSubDatabase(v, key: k.buffer) }
        }
    }

    /// Throws when `value` (read under `key`) is a named sub-database's record, told by its
    /// node's `F_SUBDATA` flag: LMDB lays a leaf node out as size (4 bytes), flags (2), key
    /// size (2), key, value, so the flags sit `key.count + 4` bytes before an inline value.
    func refuseSubDatabase(_ value: MDB_val, key: UnsafeRawBufferPointer) throws(EngineError) {
        guard 8 + key.count + value.mv_size <= nodeMax else { return }  // stored in overflow pages: not a record
        let flags = (value.mv_data - key.count - 4).loadUnaligned(as: UInt16.self)
        if flags & Self.subDatabaseFlag != 0 { throw subDatabaseRefusal(name: key) }
    }

    func subDatabaseRefusal(name: UnsafeRawBufferPointer) -> EngineError {
        let text = String(decoding: name, as: UTF8.self)
        let shown = text.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || $0.properties.numericType != nil || "-_.:/ ".unicodeScalars.contains($0) }
            ? "\"\(text)\"" : "0x" + name.map { String(format: "%02x", $0) }.joined()
        return .notAStore(path: path, reason: "data.mdb holds named sub-databases (\(shown) is one): the environment of a program using LMDB's named databases; Strata stores use the main database only")
    }

    /// Main-database flags of other programs' environments that Strata cannot keep its contract
    /// over: each changes the order of keys or allows several values under one key.
    static let foreignFlags: [(flag: UInt32, name: String)] = [
        (UInt32(MDB_REVERSEKEY), "MDB_REVERSEKEY"), (UInt32(MDB_DUPSORT), "MDB_DUPSORT"), (UInt32(MDB_INTEGERKEY), "MDB_INTEGERKEY"),
        (UInt32(MDB_DUPFIXED), "MDB_DUPFIXED"), (UInt32(MDB_INTEGERDUP), "MDB_INTEGERDUP"), (UInt32(MDB_REVERSEDUP), "MDB_REVERSEDUP"),
    ]

    deinit {
        if let env { mdb_env_close(env) }
    }

    func close() throws {
        if let env { mdb_env_close(env) }
        env = nil
        writerLock = nil
        presence = nil  // after the environment: closing lock.mdb drops LMDB's locks on it
    }

    /// The current size of the memory map in bytes.
    var environmentFlags: UInt32 {
        environmentLock.withLock { _ in
            var flags: UInt32 = 0
            if let env { mdb_env_get_flags(env, &flags) }
            return flags
        }
    }

    var mapSize: Int {
        environmentLock.withLock { _ in currentMapSize }
    }

    /// The map's size, for code that runs inside a transaction (where the environment cannot change).
    var currentMapSize: Int {
        var info = MDB_envinfo()
        if let env { mdb_env_info(env, &info) }
        return info.me_mapsize
    }

    func beginRead() throws -> any StorageReadTransaction {
        do {
            return LMDBTransaction(storage: self, txn: try beginTransaction(readOnly: true))
        } catch is MapResizedByAnotherProcess {
            // Adopt the new size as the writer would, alone, then begin again.
            throw StorageNeedsExclusiveAccess { try self.setMapSize(0, "adopting a map grown by another process") }
        }
    }

    func beginWrite() throws -> any StorageWriteTransaction {
        // The engine core refuses writes on a read-only store before they get here.
        guard let writerLock else { throw EngineError.readOnly(path: path) }
        try writerLock.lock()
        let txn: OpaquePointer
        do {
            try growBeforeWriting()
            txn = try beginTransaction(readOnly: false)
        } catch {
            writerLock.unlock()
            throw error
        }
        return LMDBTransaction(storage: self, txn: txn, room: LMDBMapRoom(txn: txn, mapSize: currentMapSize, pageSize: pageSize), writerLock: writerLock)
    }

    /// Grows the map before a write transaction begins when less room is left than the store
    /// uses (``LMDBMapRoom``), so that writes need no log until one transaction writes about as
    /// much as the whole store.
    private func growBeforeWriting() throws {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        let minimum = LMDBMapRoom.minimumMapSize(pageSize: pageSize, usedPages: info.me_last_pgno + 1)
        if minimum > info.me_mapsize { try growMap(toAtLeast: minimum) }  // in doublings
    }

    /// Begins an LMDB transaction, adopting a map grown by another process when LMDB asks.
    func beginTransaction(readOnly: Bool) throws -> OpaquePointer {
        if let unusable { throw unusable }
        while true {
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(env, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
            switch rc {
            case MDB_SUCCESS: return txn!
            case MDB_READERS_FULL: throw EngineError.readersFull(limit: lmdbOptions.maxReaders)
            case MDB_MAP_RESIZED where !readOnly:
                // Another process grew the map: adopt its size while no reader here holds a pointer.
                try services.withReadersDrained(timeout: nil) { try setMapSize(0, "adopting a map grown by another process") }
            case MDB_MAP_RESIZED:
                // A reader cannot drain the other readers: the core does it and begins again.
                throw MapResizedByAnotherProcess()
            default:
                throw lmdbError(rc, readOnly ? "beginning a read transaction" : "beginning a write transaction", path: path)
            }
        }
    }

    /// Whether the filesystem holding the store is (nearly) full. LMDB reports a short write,
    /// which is what a full disk causes, as EIO; this tells the two apart.
    func diskIsFull() -> Bool {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return false }
        return UInt64(stats.f_bavail) * UInt64(stats.f_frsize) < 1 << 20
    }

    /// Grows the map to at least `minimum` bytes (doubling), with no reader of this process
    /// inside a transaction. Called by the writer, with no write transaction open.
    func growMap(toAtLeast minimum: Int) throws {
        var size = currentMapSize
        while size < minimum { size *= 2 }
        try services.withReadersDrained(timeout: nil) { try setMapSize(size, "growing the map to \(size) bytes") }
    }

    /// Changes the map size (0: adopt the size another process set); the caller makes sure no
    /// reader of this process is inside a transaction. LMDB unmaps before it maps again, so a
    /// failure leaves the environment without a map: the storage is then marked unusable rather
    /// than left to crash.
    private func setMapSize(_ size: Int, _ operation: String) throws {
        let rc = mdb_env_set_mapsize(env, size)
        if rc != MDB_SUCCESS {
            let error = lmdbError(rc, operation, path: path)
            unusable = .engineFailure(engine: "LMDB", code: Int(rc), message: "the map could not be remapped; close and reopen the store (\(error))", operation: operation)
            throw error
        }
        do { try bounds.remapped(env: env!) } catch {
            unusable = error
            throw error
        }
    }
}

/// Signals `beginRead` to have a map another process grew adopted; never escapes the adapter.
private struct MapResizedByAnotherProcess: Error {}

extension EngineConfiguration {
    /// LMDB in the directory at `path`; see ``LMDBEngine``.
    public static func lmdb(path: String, options: LMDBOptions = LMDBOptions()) -> EngineConfiguration {
        EngineConfiguration(name: "lmdb", path: path) { try LMDBEngine(path: path, options: $0, lmdb: options) }
    }
}

extension EngineKind {
    /// LMDB with default options.
    public static let lmdb = EngineKind(declaration: LMDBEngine.declaration) { .lmdb(path: $0) }
}
