/// A ``KeyValueEngine`` built from a storage's primitives: the one implementation of the
/// contract that does not depend on storage (see ``KeyValueStorage`` for the division of work).
///
/// Adapters open their storage through it:
///
/// ```swift
/// let core = try CoreEngine(declaration: declaration, path: path, options: options) { context in
///     try MyStorage(directory: context.path!, options: context.options)
/// }
/// ```
///
/// and either hand it out as it is or wrap it in a type of their own (``CoreBackedEngine``).
///
/// `@unchecked Sendable`: `storage` is not `Sendable`: its gate (`TransactionGate`) decides which thread uses it when.
public final class CoreEngine: KeyValueEngine, @unchecked Sendable {
    /// The adapter's declaration: the name, capabilities and limits this engine reports, the
    /// limits the core enforces, and how it treats the storage (marker file, reads of own writes).
    public let declaration: EngineDeclaration
    /// The store's directory, or `nil` for storage without one.
    public let path: String?
    /// The options the store was opened with; in ``OpenMode/readOnly`` mode `write` throws
    /// ``EngineError/readOnly(path:)`` before the storage is asked for a transaction.
    public let options: EngineOptions
    /// The storage underneath (for adapter-specific queries such as LMDB's map size).
    public let storage: any KeyValueStorage

    let gate = TransactionGate()
    private let claimedPath: String?

    public var engineName: String { declaration.name }
    public var capabilities: EngineCapabilities { declaration.capabilities }
    public var limits: EngineLimits { declaration.limits }
    /// A signal on the store's directory when other processes may commit to it
    /// (``EngineCapabilities/multiProcess``): they write its files.
    public func makeCommitSignal() -> (any CommitSignal)? {
        guard declaration.capabilities.contains(.multiProcess), let path else { return nil }
        return DirectoryCommitSignal(directory: path)
    }

    /// Prepares the store's directory (when the declaration names a marker file), claims the
    /// path for this process, and opens the storage with `open`. A failed open releases the path
    /// and leaves nothing behind that the storage did not.
    ///
    /// Storage without a directory that still has a location of its own (a key prefix on a
    /// server) passes `claiming`, a name that identifies it: it is claimed instead, so that
    /// opening it twice in one process is refused as for a directory.
    public init(
        declaration: EngineDeclaration, path: String?, options: EngineOptions, claiming identity: String? = nil,
        open: (StorageContext) throws -> any KeyValueStorage
    ) throws {
        self.declaration = declaration
        self.path = path
        self.options = options
        var creation: StoreDirectory.Creation?
        if let path, let marker = declaration.marker {
            creation = try StoreDirectory.prepare(path, marker: marker, mode: options.mode)
            claimedPath = try OpenPathRegistry.claim(path)
        } else if let identity {
            claimedPath = try OpenPathRegistry.claim(identity: identity, reportedAs: path ?? identity)
        } else {
            claimedPath = nil
        }
        do {
            storage = try open(StorageContext(path: path, options: options, services: StorageServices(gate: gate)))
            if let path, let creation { try StoreDirectory.syncCreation(path, creation, engine: declaration.name) }
        } catch {
            if let claimedPath { OpenPathRegistry.release(claimedPath) }
            throw error
        }
    }

    deinit {
        if !gate.isClosed, let claimedPath { OpenPathRegistry.release(claimedPath) }
    }

    public func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R {
        while true {
            var exclusive: StorageNeedsExclusiveAccess?
            var result: R?
            try gate.withRead {
                let primitive: any StorageReadTransaction
                do {
                    primitive = try storage.beginRead()
                } catch let needed as StorageNeedsExclusiveAccess {
                    exclusive = needed
                    return
                }
                let transaction = CoreTransaction(core: self, reader: primitive, writer: nil)
                defer { transaction.end() }
                result = try body(transaction)
            }
            if let exclusive {
                try gate.withWrite { try gate.withReadersDrained { try exclusive.action() } }
                continue
            }
            return result!
        }
    }

    public func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R {
        if options.mode == .readOnly { throw EngineError.readOnly(path: path ?? declaration.name) }
        return try gate.withWrite {
            let primitive = try storage.beginWrite()
            let transaction = CoreTransaction(core: self, reader: primitive, writer: primitive)
            defer { transaction.end() }
            let result = try body(transaction)
            try transaction.commit()
            return result
        }
    }

    /// ``read(_:)-(_)`` on a transaction thread, off the cooperative pool.
    public func read<R: Sendable>(_ body: @Sendable (any KeyValueReader) throws -> R) async throws -> R {
        try await readOnTransactionThread(body)
    }

    /// ``write(_:)-(_)`` on a transaction thread, off the cooperative pool.
    /// Runs the synchronous `body` in a write transaction on a thread of its own, outside Swift's
    /// cooperative pool: waiting for the writer slot blocks that thread, never the pool.
    public func write<R: Sendable>(_ body: @Sendable (any KeyValueWriter) throws -> R) async throws -> R {
        try await writeOnTransactionThread(body)
    }

    /// Compacts the storage (``CompactingStorage``) as the writer, with no reader of this process
    /// inside a transaction; throws ``EngineError/invalidArgument(_:)`` when the storage cannot.
    public func compact() throws -> CompactionReport {
        if options.mode == .readOnly { throw EngineError.readOnly(path: path ?? declaration.name) }
        guard let compacting = storage as? any CompactingStorage else {
            throw EngineError.invalidArgument("the \(declaration.name) engine cannot compact a store")
        }
        return try gate.withWrite { try gate.withReadersDrained { try compacting.compact() } }
    }

    public func close() throws {
        try gate.close {
            defer { if let claimedPath { OpenPathRegistry.release(claimedPath) } }
            try storage.close()
        }
    }
}

/// An engine type of an adapter that wraps a ``CoreEngine``: the engine requirements are
/// forwarded to it, so the adapter's type adds only what is its own (options, file names).
public protocol CoreBackedEngine: KeyValueEngine {
    /// The core that keeps the contract for this engine: the same instance for the engine's whole
    /// life, since every transaction and `close()` is forwarded to it.
    var core: CoreEngine { get }
}

extension CoreBackedEngine {
    public var engineName: String { core.engineName }
    public var capabilities: EngineCapabilities { core.capabilities }
    public var limits: EngineLimits { core.limits }
    public func makeCommitSignal() -> (any CommitSignal)? { core.makeCommitSignal() }
    /// Runs `body` in a read transaction of ``CoreBackedEngine/core``, on one snapshot of the store.
    public func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R { try core.read(body) }
    /// Runs `body` in a write transaction of ``CoreBackedEngine/core``: it commits when `body`
    /// returns and rolls back (rethrowing) when `body` throws. Waits while another writer runs.
    public func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R { try core.write(body) }
    // Spelled out: otherwise Swift takes the synchronous read/write above as the witnesses of
    // the async requirements, and async transactions would run on the cooperative pool.
    /// Runs the synchronous `body` in a read transaction on a thread of its own, outside Swift's
    /// cooperative pool, and returns its result to the awaiting task.
    public func read<R: Sendable>(_ body: @Sendable (any KeyValueReader) throws -> R) async throws -> R {
        try await readOnTransactionThread(body)
    }
    /// Runs the synchronous `body` in a write transaction on a thread of its own, outside Swift's
    /// cooperative pool: waiting for the writer slot blocks that thread, never the pool.
    public func write<R: Sendable>(_ body: @Sendable (any KeyValueWriter) throws -> R) async throws -> R {
        try await writeOnTransactionThread(body)
    }
    public func close() throws { try core.close() }
    /// Compacts the store through ``CoreBackedEngine/core`` (``CoreEngine/compact()``).
    public func compact() throws -> CompactionReport { try core.compact() }
}
