import CLMDB
import Foundation
import StrataEngine

/// LMDB-specific settings.
public struct LMDBOptions: Sendable, Hashable {
    /// The initial map size in bytes. The adapter grows the map when a write transaction
    /// fills it, so this is a starting point, not a cap. Default: 1 GiB.
    public var mapSize: Int
    /// Read transactions that may be open at once across every process sharing the store.
    /// Beyond it, starting a read throws ``EngineError/readersFull(limit:)`` (it does not wait).
    /// Default: 256.
    public var maxReaders: Int

    public init(mapSize: Int = 1 << 30, maxReaders: Int = 256) {
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
public final class LMDBEngine: KeyValueEngine, @unchecked Sendable {
    public let engineName = "lmdb"
    public let capabilities: EngineCapabilities = [.persistent, .multiProcess]
    /// The store's directory.
    public let path: String
    public let options: EngineOptions
    public let lmdbOptions: LMDBOptions

    let gate = TransactionGate()
    private var env: OpaquePointer?
    /// Set when LMDB could not remap the file after a map size change: the environment has no
    /// map any more, so every later transaction fails with this error (close still works).
    private var unusable: EngineError?
    private(set) var dbi: MDB_dbi = 0
    private let canonicalPath: String

    /// Opens (or creates, with `.create`) the LMDB store in the directory at `path`.
    public init(path: String, options: EngineOptions = EngineOptions(), lmdb: LMDBOptions = LMDBOptions()) throws {
        self.path = path
        self.options = options
        self.lmdbOptions = lmdb
        try StoreDirectory.prepare(path, marker: "data.mdb", mode: options.mode)
        let dataFile = (path as NSString).appendingPathComponent("data.mdb")
        if FileManager.default.fileExists(atPath: dataFile) {
            try LMDBFileCheck.validate(dataFile, storePath: path)
        }
        canonicalPath = try OpenPathRegistry.claim(path)
        do {
            try open()
        } catch {
            if let env { mdb_env_close(env) }
            env = nil
            OpenPathRegistry.release(canonicalPath)
            throw error
        }
    }

    private func open() throws(EngineError) {
        try check(mdb_env_create(&env), "creating the environment", path: path)
        try check(mdb_env_set_mapsize(env, lmdbOptions.mapSize), "setting the map size", path: path)
        try check(mdb_env_set_maxreaders(env, UInt32(lmdbOptions.maxReaders)), "setting max readers", path: path)
        var flags = UInt32(MDB_NOTLS)
        if options.mode == .readOnly { flags |= UInt32(MDB_RDONLY) }
        if options.durability == .relaxed { flags |= UInt32(MDB_NOSYNC) }
        try check(mdb_env_open(env, path, flags, 0o644), "opening the environment", path: path)
        // Free the reader slots of processes that died inside a read transaction (kill -9).
        var stale: Int32 = 0
        if options.mode != .readOnly { try check(mdb_reader_check(env, &stale), "clearing stale readers", path: path) }
        // The unnamed main database; opening it needs a transaction.
        var txn: OpaquePointer?
        let readOnly = options.mode == .readOnly
        try check(mdb_txn_begin(env, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn), "beginning the open transaction", path: path)
        let rc = mdb_dbi_open(txn, nil, 0, &dbi)
        if rc != MDB_SUCCESS {
            mdb_txn_abort(txn)
            throw lmdbError(rc, "opening the main database", path: path)
        }
        try check(readOnly ? { mdb_txn_abort(txn); return MDB_SUCCESS }() : mdb_txn_commit(txn), "committing the open transaction", path: path)
    }

    deinit {
        if let env { mdb_env_close(env) }
        if env != nil { OpenPathRegistry.release(canonicalPath) }
    }

    /// The current size of the memory map in bytes (grows when writes fill it).
    public var mapSize: Int {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_mapsize
    }

    public func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R {
        while true {
            do {
                return try gate.withRead {
                    let txn = try beginTransaction(readOnly: true)
                    let transaction = LMDBTransaction(engine: self, txn: txn, writable: false)
                    defer { transaction.abort() }
                    return try body(transaction)
                }
            } catch is MapResizedByAnotherProcess {
                // Thrown before `body` ran. Adopt the new size as the writer would, then retry.
                try gate.withWrite { try setMapSize(0, "adopting a map grown by another process") }
            }
        }
    }

    public func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R {
        if options.mode == .readOnly { throw EngineError.readOnly(path: path) }
        return try gate.withWrite {
            let txn = try beginTransaction(readOnly: false)
            let transaction = LMDBTransaction(engine: self, txn: txn, writable: true)
            let result: R
            do {
                result = try body(transaction)
            } catch {
                transaction.abort()
                throw error
            }
            try transaction.commit()
            return result
        }
    }

    public func close() throws {
        try gate.close {
            if let env { mdb_env_close(env) }
            env = nil
            OpenPathRegistry.release(canonicalPath)
        }
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
                try setMapSize(0, "adopting a map grown by another process")
            case MDB_MAP_RESIZED:
                // A reader cannot drain the other readers from inside the gate: `read` retries.
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
        var size = mapSize
        while size < minimum { size *= 2 }
        try setMapSize(size, "growing the map to \(size) bytes")
    }

    /// Changes the map size (0: adopt the size another process set) with no reader of this
    /// process inside a transaction. LMDB unmaps before it maps again, so a failure leaves the
    /// environment without a map: the engine is then marked unusable rather than left to crash.
    private func setMapSize(_ size: Int, _ operation: String) throws {
        try gate.withReadersDrained {
            let rc = mdb_env_set_mapsize(env, size)
            if rc != MDB_SUCCESS {
                let error = lmdbError(rc, operation, path: path)
                unusable = .engineFailure(engine: "LMDB", code: Int(rc), message: "the map could not be remapped; close and reopen the store (\(error))", operation: operation)
                throw error
            }
        }
    }
}

/// Signals `read` to adopt a map another process grew; never escapes the adapter.
private struct MapResizedByAnotherProcess: Error {}
