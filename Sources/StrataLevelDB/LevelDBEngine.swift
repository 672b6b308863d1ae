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

    public init(compression: Bool = true, cacheSize: Int = 0, writeBufferSize: Int = 0) {
        self.compression = compression
        self.cacheSize = cacheSize
        self.writeBufferSize = writeBufferSize
    }
}

/// A Strata engine on LevelDB (libleveldb, C API): a log-structured merge tree.
///
/// LevelDB has no transactions; the adapter builds them. A read transaction is a LevelDB
/// snapshot. A write transaction is a `WriteBatch` over a snapshot, with an index of its
/// pending writes merged into its own `get`s and scans; writers are serialized by the adapter,
/// and the batch is written atomically at commit.
///
/// Only one process may open a store (LevelDB's `LOCK` file): a second opener fails with
/// ``EngineError/locked(path:)``. In `.readOnly` mode Strata refuses writes, but LevelDB may
/// still tidy its own files (replay its log into a table) when it opens.
public final class LevelDBEngine: KeyValueEngine, @unchecked Sendable {
    public let engineName = "leveldb"
    public let capabilities: EngineCapabilities = [.persistent]
    public let path: String
    public let options: EngineOptions
    public let levelDBOptions: LevelDBOptions

    let gate = TransactionGate()
    private(set) var db: OpaquePointer?
    private let dbOptions: OpaquePointer
    private let cache: OpaquePointer?
    let writeOptions: OpaquePointer
    private let canonicalPath: String

    public init(path: String, options: EngineOptions = EngineOptions(), leveldb: LevelDBOptions = LevelDBOptions()) throws {
        self.path = path
        self.options = options
        self.levelDBOptions = leveldb
        try StoreDirectory.prepare(path, marker: "CURRENT", mode: options.mode)
        try Self.checkManifest(path)
        dbOptions = leveldb_options_create()
        leveldb_options_set_create_if_missing(dbOptions, options.mode == .create ? 1 : 0)
        // Report corruption instead of skipping it: by default LevelDB opens a store whose
        // manifest or log was truncated, as if the lost part never existed.
        leveldb_options_set_paranoid_checks(dbOptions, 1)
        leveldb_options_set_compression(dbOptions, Int32(leveldb.compression ? leveldb_snappy_compression : leveldb_no_compression))
        cache = leveldb.cacheSize > 0 ? leveldb_cache_create_lru(leveldb.cacheSize) : nil
        if let cache { leveldb_options_set_cache(dbOptions, cache) }
        if leveldb.writeBufferSize > 0 { leveldb_options_set_write_buffer_size(dbOptions, leveldb.writeBufferSize) }
        writeOptions = leveldb_writeoptions_create()
        leveldb_writeoptions_set_sync(writeOptions, options.durability == .full ? 1 : 0)
        do {
            canonicalPath = try OpenPathRegistry.claim(path)
        } catch {
            Self.destroy(dbOptions, cache, writeOptions)
            throw error
        }
        var err: UnsafeMutablePointer<CChar>?
        db = leveldb_open(dbOptions, path, &err)
        do {
            try check(err, "opening the database", path: path)
        } catch {
            // Every property is set, so deinit runs after this throw: it frees the options and
            // gives the path back.
            throw error
        }
    }

    /// Before LevelDB touches the directory (it rotates its info log even to report an error):
    /// an existing `CURRENT` must name a manifest that exists and is not empty.
    private static func checkManifest(_ path: String) throws(EngineError) {
        let current = (path as NSString).appendingPathComponent("CURRENT")
        guard FileManager.default.fileExists(atPath: current) else { return }
        guard let text = try? String(contentsOfFile: current, encoding: .utf8),
              text.hasPrefix("MANIFEST-"), text.hasSuffix("\n"),
              text.dropFirst(9).dropLast().allSatisfy(\.isNumber) else {
            throw .corrupt(path: path, detail: "CURRENT does not name a LevelDB manifest")
        }
        let manifest = (path as NSString).appendingPathComponent(String(text.dropLast()))
        let size = (try? FileManager.default.attributesOfItem(atPath: manifest)[.size] as? NSNumber)?.intValue ?? -1
        guard size > 0 else {
            throw .corrupt(path: path, detail: "\(text.dropLast()) is \(size < 0 ? "missing" : "empty") (truncated?)")
        }
    }

    private static func destroy(_ options: OpaquePointer, _ cache: OpaquePointer?, _ writeOptions: OpaquePointer) {
        leveldb_options_destroy(options)
        if let cache { leveldb_cache_destroy(cache) }
        leveldb_writeoptions_destroy(writeOptions)
    }

    deinit {
        if let db { leveldb_close(db) }
        // Give the path back unless close() did (also when a failed reopen left no handle).
        if !gate.isClosed { OpenPathRegistry.release(canonicalPath) }
        Self.destroy(dbOptions, cache, writeOptions)
    }

    /// Set when a write failed (a full disk): LevelDB may have left a torn record in its log,
    /// and writing after it would leave that record in the *middle* of the log, which recovery
    /// reports as corruption (or, without paranoid checks, skips along with later commits). So
    /// the next write first reopens the database: the torn record stays at the old log's tail,
    /// which recovery drops cleanly, and writes go on in a new log.
    private var reopenBeforeWriting = false
    /// Why the database is closed, when reopening it failed.
    private var unavailable: EngineError?

    private func openDatabase() throws(EngineError) {
        var err: UnsafeMutablePointer<CChar>?
        let handle = leveldb_open(dbOptions, path, &err)
        try check(err, "reopening the database after a failed write", path: path)
        db = handle
    }

    public func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R {
        // After a failed reopen (a disk still full), a reader retries it, as the writer's slot.
        if unavailable != nil { try gate.withWrite { try reopenIfNeeded() } }
        return try gate.withRead {
            guard let db else { throw unavailable ?? EngineError.closed }
            let transaction = LevelDBTransaction(engine: self, db: db, writable: false)
            defer { transaction.end() }
            return try body(transaction)
        }
    }

    public func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R {
        if options.mode == .readOnly { throw EngineError.readOnly(path: path) }
        return try gate.withWrite {
            try reopenIfNeeded()
            guard let db else { throw unavailable ?? EngineError.closed }
            let transaction = LevelDBTransaction(engine: self, db: db, writable: true)
            defer { transaction.end() }
            let result = try body(transaction)
            do {
                try transaction.commit()
            } catch {
                reopenBeforeWriting = true
                throw error
            }
            return result
        }
    }

    /// Called holding the writer's slot: reopens the database when a write failed, with no reader
    /// of this process inside a transaction (they hold the old handle).
    private func reopenIfNeeded() throws {
        guard reopenBeforeWriting else { return }
        try gate.withReadersDrained {
            if let db { leveldb_close(db) }
            db = nil
            do {
                try openDatabase()
                reopenBeforeWriting = false
                unavailable = nil
            } catch {
                unavailable = error as? EngineError
                throw error
            }
        }
    }

    public func close() throws {
        try gate.close {
            if let db { leveldb_close(db) }
            db = nil
            OpenPathRegistry.release(canonicalPath)
        }
    }
}
