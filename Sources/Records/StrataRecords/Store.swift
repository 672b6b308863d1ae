import Foundation
import StrataEngine
import StrataKeyCodec

/// A record store on the engine of your choice.
///
/// ```swift
/// let store = try Store(.lmdb(path: "/tmp/people"))
/// try store.withTransaction { ctx in
///     try ctx.insert(Person(lastName: "Dallas", firstName: "Korben", age: 45))
/// }
/// ```
///
/// Opening checks the store's manifest (engine, key codec and format version) and writes it into
/// a new store, so a store is never read with another engine or encoding. A store of an older
/// format is upgraded in place at its first writable open (``formatUpgrade`` says what was done). The store is `Sendable`:
/// share one instance between threads and tasks (opening the same path twice in a process is
/// refused with `EngineError.alreadyOpen(path:)`).
public final class Store: Sendable {
    /// The engine underneath, for engine-level work.
    public let engine: any KeyValueEngine
    @usableFromInline let catalog = Catalog()
    /// Who is told of committed changes (``add(observer:)``).
    @usableFromInline let observers = ObserverRegistry()
    /// How record values are sealed and opened: the store's transforms, as its manifest names them.
    let envelope: RecordEnvelope
    /// This instance's identity in the change feed's chunks (RecordFormat.md, "Change feed"),
    /// drawn at random when it opens: it tells this store's commits from other processes'.
    let writerID = Int.random(in: 1...Int.max)
    /// Brings other processes' commits to the observed queries, through the change feed.
    let follower = FeedFollower()
    /// The store's identity (``StoreIdentity``), which page tokens carry, when it was known at
    /// open; `nil` sends tokens to read it in their transaction.
    let identity: UInt64?

    /// Opens (with `.create`, creates) a store on `engine`: `.lmdb(path:)`, `.leveldb(path:)`,
    /// `.sqlite(path:)` and `.memory` come with their adapter modules (all of them with `import
    /// Strata`), your own engines through an `EngineConfiguration` of your own.
    public convenience init(_ engine: EngineConfiguration, mode: OpenMode = .create, durability: Durability = .full) throws {
        try self.init(engine: try engine.open(EngineOptions(mode: mode, durability: durability)), readOnly: mode == .readOnly)
    }

    /// Opens a store on an engine you opened yourself (any `KeyValueEngine`).
    public convenience init(engine: any KeyValueEngine, readOnly: Bool = false) throws {
        try self.init(engine: engine, readOnly: readOnly, upgradeBatchSize: FormatUpgrade.defaultBatchSize, onUpgradeBatch: { _ in })
    }

    /// What upgrading the store's format at this open did; `nil` when it needed no upgrade.
    /// Damaged records found on the way are counted here, never dropped.
    public let formatUpgrade: FormatUpgradeReport?

    /// Opens a store, upgrading an older format in batches of `upgradeBatchSize` records and
    /// calling `onUpgradeBatch` after each committed batch (for tests and progress display).
    @_spi(Testing)
    public convenience init(engine: any KeyValueEngine, readOnly: Bool, upgradeBatchSize: Int,
                            onUpgradeBatch: (FormatUpgradeReport) -> Void) throws {
        try self.init(opening: engine, readOnly: readOnly, transforms: [], upgradeBatchSize: upgradeBatchSize, onUpgradeBatch: onUpgradeBatch)
    }

    /// Opens (with `.create`, creates) a store on `engine` whose record values pass through
    /// `transforms` (``ValueTransform``), applied in order on writes (compression before
    /// encryption) and reversed on reads. A new store names them
    /// in its manifest; an existing one opens only with the transforms it was made with (others,
    /// or none, are refused with ``RecordError/manifestMismatch(detail:)``).
    ///
    /// ```swift
    /// let store = try Store(.lmdb(path: "/tmp/secrets"), transforms: [RecordEncryption(key: key)])
    /// ```
    public convenience init(_ engine: EngineConfiguration, mode: OpenMode = .create, durability: Durability = .full,
                            transforms: [any ValueTransform]) throws {
        try self.init(engine: try engine.open(EngineOptions(mode: mode, durability: durability)), readOnly: mode == .readOnly, transforms: transforms)
    }

    /// Opens a store on an engine you opened yourself whose record values pass through
    /// `transforms`, as ``init(_:mode:durability:transforms:)``.
    public convenience init(engine: any KeyValueEngine, readOnly: Bool = false, transforms: [any ValueTransform]) throws {
        try self.init(opening: engine, readOnly: readOnly, transforms: transforms, upgradeBatchSize: FormatUpgrade.defaultBatchSize)
    }

    /// Opens a store whose record values pass through `transforms` (``ValueTransform``), upgrading
    /// an older format in batches of `upgradeBatchSize` records and calling `onUpgradeBatch` after each.
    init(opening engine: any KeyValueEngine, readOnly: Bool, transforms: [any ValueTransform],
         upgradeBatchSize: Int, onUpgradeBatch: (FormatUpgradeReport) -> Void = { _ in }) throws {
        self.engine = engine
        do {
            let found = try Manifest.check(engine, readOnly: readOnly, transforms: transforms)
            switch found {
            case .current, .rotates:
                formatUpgrade = nil
            case .needsUpgrade(let from):
                if readOnly { throw RecordError.upgradeRequired(fromFormat: from) }
                formatUpgrade = try FormatUpgrade.run(engine, batchSize: upgradeBatchSize, onBatch: onUpgradeBatch)
            }
            identity = StoreIdentity.load(engine, readOnly: readOnly)
            envelope = transforms.isEmpty ? .plain : RecordEnvelope(try StoreSalt.bind(transforms, in: engine))
            // Last, once every check passed: a store refused at open is left as it was.
            if case .rotates(let stored) = found { try Manifest.beginRotation(engine, from: stored, to: envelope.names) }
        } catch {
            try? engine.close()
            throw error
        }
    }

    /// Runs `body` in a read-write transaction: it commits when `body` returns and rolls back
    /// when it throws. Other writers wait. The result may be ignored (a body that ends with a
    /// `delete` returns whether it deleted).
    ///
    /// An engine error while an indexed write changes the store (its record and its entries)
    /// leaves the transaction unable to commit: `body` may catch the error and go on, but the
    /// transaction then rolls back with that error, so a half-made write is never committed. A
    /// write refused by its checks, before it writes (a unique violation, a key over the limit),
    /// can be caught and the transaction committed. A delete by query that fails after some of
    /// its records are deleted keeps them deleted if the body catches the error and commits.
    @discardableResult
    public func withTransaction<R>(_ body: (TransactionContext) throws -> R) throws -> R {
        // Whether anyone observes is asked under the writer gate: a query whose first snapshot
        // is read between an earlier look and this transaction's start would miss its commit.
        let observed = ObservedWrite(observers)
        defer { observed.finish() }
        return observed.committing(try engine.write { tx in try observed.run(body, TransactionContext(store: self, reader: tx, writer: tx)) })
    }

    /// Runs `body` in a read-only transaction that sees one snapshot.
    @discardableResult
    public func withReadTransaction<R>(_ body: (TransactionContext) throws -> R) throws -> R {
        try engine.read { tx in try body(TransactionContext(store: self, reader: tx, writer: nil)) }
    }

    /// ``withTransaction(_:)-(_)`` from async code; the body is still synchronous and runs on a
    /// thread outside the cooperative pool. A task cancelled before the transaction starts gets
    /// `CancellationError` and nothing runs; a body that has started runs to its end (synchronous
    /// code cannot be interrupted) and commits or rolls back as usual.
    @discardableResult
    public func withTransaction<R: Sendable>(_ body: @Sendable (TransactionContext) throws -> R) async throws -> R {
        let observed = ObservedWrite(observers)  // asks whether anyone observes under the gate, as above
        defer { observed.finish() }
        return observed.committing(try await engine.write { tx in try observed.run(body, TransactionContext(store: self, reader: tx, writer: tx)) })
    }

    /// ``withReadTransaction(_:)-30s1c`` from async code; cancellation as for ``withTransaction(_:)-62v3j``.
    @discardableResult
    public func withReadTransaction<R: Sendable>(_ body: @Sendable (TransactionContext) throws -> R) async throws -> R {
        try await engine.read { tx in try body(TransactionContext(store: self, reader: tx, writer: nil)) }
    }

    /// Stores `record` in a transaction of its own, replacing the record with its key.
    public func insert<R: Record>(_ record: R) throws {
        try withTransaction { ctx in try ctx.insert(record) }
    }

    /// Deletes the record with `record`'s key in a transaction of its own; returns whether there was one.
    @discardableResult
    public func delete<R: Record>(_ record: R) throws -> Bool {
        try withTransaction { ctx in try ctx.delete(record) }
    }

    /// Gives the room of deleted records back to the file system (or the server): the engine's
    /// compaction (`KeyValueEngine.compact()`), which keeps every record and index entry and is
    /// crash-safe. It runs as the writer once this process's read transactions have ended; on
    /// LMDB it needs the store alone (`EngineError.locked` while another process has it open).
    /// See <doc:CompactingAStore>.
    @discardableResult
    public func compact() throws -> CompactionReport { try engine.compact() }

    /// Waits for running transactions, then closes the engine.
    public func close() throws {
        follower.stop()
        try engine.close()
    }
}
