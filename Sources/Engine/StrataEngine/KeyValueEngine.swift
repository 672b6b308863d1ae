/// An ordered key-value store with snapshot reads and serialized, atomic writes.
///
/// `KeyValueEngine` is the single seam between Strata's record layer and a storage library.
/// Everything above it behaves identically on every engine, so every implementation must keep
/// this contract exactly. The `StrataConformance` library checks it: an engine is a Strata engine
/// when `ConformanceSuite.run(...)` reports no failures for it (see `Conformance/README.md`).
///
/// ## The contract
/// - **Keys** are 1...``KeyLimits/maxKeyLength`` (511) bytes. An empty or longer key given to
///   `get`, `exists`, `put` or `delete` throws ``EngineError/emptyKey`` or
///   ``EngineError/keyTooLarge(length:limit:)``. Range *bounds* may be empty or of any length.
/// - **Values** are any byte string; an empty value is a value, distinct from a missing key.
/// - **Order** is unsigned bytewise, a key sorting before every longer key it prefixes.
/// - **Reads** happen in a transaction that sees one consistent snapshot, taken when the
///   transaction begins: commits made after that are never visible to it.
/// - **Writes** happen in a write transaction that sees its own writes (in `get` and in scans,
///   both directions) and commits atomically when its body returns, or leaves nothing behind
///   when its body throws. One write transaction runs at a time per store; other writers wait.
/// - **Borrowed bytes** handed to a closure are valid only inside that closure. While such a
///   closure runs (a `scan` visitor or a `withValue` body), writes in the same transaction throw
///   ``EngineError/writeWhileReading``.
/// - **Nesting**: starting a transaction (or `close()`) from inside a transaction on the same
///   store throws ``EngineError/nestedTransaction``. A transaction object used after its body
///   returned throws ``EngineError/transactionEnded``.
/// - **Lifecycle**: `close()` waits for running transactions, then releases the store; any use
///   afterwards throws ``EngineError/closed``. Closing twice is harmless.
///
/// Adapters of storage libraries implement the narrower ``KeyValueStorage`` primitives and let
/// ``CoreEngine`` keep this contract; an engine may also implement this protocol whole.
///
/// Implementations are classes that are safe to share between threads and tasks.
/// Transaction bodies are synchronous: a transaction begins, runs and ends on one thread.
/// Use the `async` overloads of `read(_:)` and `write(_:)` from async code;
/// they wait for the writer slot without blocking Swift's cooperative thread pool.
public protocol KeyValueEngine: AnyObject, Sendable {
    /// A short lowercase name of the storage library, such as `"lmdb"`.
    var engineName: String { get }

    /// What this engine can legitimately lack; see ``EngineCapabilities``.
    var capabilities: EngineCapabilities { get }

    /// The sizes this engine enforces. Defaults to 511-byte keys and nothing else.
    var limits: EngineLimits { get }

    /// A new signal of other processes' commits to this store (see ``CommitSignal``), which the
    /// caller closes; `nil` (the default) when there is none, and the record layer polls instead.
    /// Engines built on ``CoreEngine`` give a ``DirectoryCommitSignal`` on their store's directory
    /// when they declare ``EngineCapabilities/multiProcess``.
    func makeCommitSignal() -> (any CommitSignal)?

    /// Runs `body` in a read-only transaction that sees one snapshot of the store.
    func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R

    /// Runs `body` in a write transaction: it commits when `body` returns and rolls back
    /// when `body` throws (the error is rethrown). Waits while another writer runs.
    func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R

    /// Runs `body` in a read transaction on a thread outside Swift's cooperative pool.
    ///
    /// Implement it as `try await readOnTransactionThread(body)`. Swift accepts a synchronous
    /// `read` as the witness of this requirement, which would run async transactions on the
    /// cooperative pool; ``CoreBackedEngine`` implements both for its engines.
    func read<R: Sendable>(_ body: @Sendable (any KeyValueReader) throws -> R) async throws -> R

    /// Runs `body` in a write transaction on a thread outside Swift's cooperative pool: waiting
    /// for the writer slot suspends the caller without holding a cooperative thread. Implement
    /// it as `try await writeOnTransactionThread(body)` (see the read above).
    func write<R: Sendable>(_ body: @Sendable (any KeyValueWriter) throws -> R) async throws -> R

    /// Waits for running transactions to end, then releases the store. Later calls throw
    /// ``EngineError/closed``; a second `close()` does nothing.
    func close() throws

    /// Gives the room of deleted data back: the store's files shrink to about what its pairs
    /// take (LMDB: a compacting copy that replaces `data.mdb`; SQLite: `VACUUM`; LevelDB: a
    /// compaction of every level; etcd: the cluster's history compacted and every member
    /// defragmented; memory: nothing to give back).
    ///
    /// Runs as the writer, once the read transactions of this process have ended (new ones wait
    /// for it; ``EngineError/mustRetry(reason:)`` when they have not ended within 10 seconds).
    /// Every pair is there afterwards, and a crash during it leaves the store as it was before or
    /// as it is after, whole. An engine that needs the store alone (LMDB) throws
    /// ``EngineError/locked(path:)`` while another process has it open; a read-only store throws
    /// ``EngineError/readOnly(path:)``. Engines that cannot compact throw
    /// ``EngineError/invalidArgument(_:)`` (the default): an engine that wraps another forwards it.
    func compact() throws -> CompactionReport
}

extension KeyValueEngine {
    public var limits: EngineLimits { EngineLimits() }
    public func makeCommitSignal() -> (any CommitSignal)? { nil }
}

/// The operations of a read transaction. Also the read half of a write transaction.
///
/// A transaction object is valid only inside the closure it was passed to.
public protocol KeyValueReader: AnyObject {
    /// Looks up `key` and lends its value to `body`, or `nil` when the key is absent.
    /// The buffer is valid only inside `body`.
    func withValue<R>(forKey key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R

    /// Visits the pairs in `range` in key order (or reverse order), at most `limit` of them
    /// (`nil`: no limit; `0`: none). `visit` returns `false` to stop early. The buffers are
    /// lent to `visit` and valid only during that call.
    func scan(
        _ range: KeyRange,
        reverse: Bool,
        limit: Int?,
        _ visit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws
}

/// The operations of a write transaction.
public protocol KeyValueWriter: KeyValueReader {
    /// Stores `value` under `key`, replacing any earlier value.
    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws

    /// Stores `value` under `key`, replacing any earlier value, and returns whether there was one
    /// (in the transaction's view: its own earlier writes count). Storage that learns it as it
    /// writes answers without a read of its own (LMDB, SQLite); the default reads the key first.
    func putReportingReplaced(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws -> Bool

    /// Removes `key`. Removing a missing key is not an error.
    func delete(_ key: UnsafeRawBufferPointer) throws

    /// Removes every key in `range` and returns how many were removed.
    @discardableResult
    func clear(_ range: KeyRange) throws -> Int
}

extension KeyValueWriter {
    /// Reads whether `key` holds a value, then puts `value` under it.
    public func putReportingReplaced(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws -> Bool {
        let replaced = try withValue(forKey: key) { $0 != nil }
        try put(value, forKey: key)
        return replaced
    }
}

/// What an engine declares it can do, for the behaviours an engine may legitimately lack.
/// Ordering, range, limit, transaction and error semantics are never optional.
public struct EngineCapabilities: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Data outlives `close()` and is there when the same path is opened again.
    public static let persistent = EngineCapabilities(rawValue: 1 << 0)
    /// Several processes may open the same store at once (writes are serialized between them).
    /// Without it, a second process's open fails with ``EngineError/locked(path:)``.
    public static let multiProcess = EngineCapabilities(rawValue: 1 << 1)
}
