/// The storage primitives an adapter supplies to ``CoreEngine``, which keeps the rest of the
/// ``KeyValueEngine`` contract for it.
///
/// ## What the core does, so adapters never do
/// Admission (many readers, one writer, nesting refused, `close()` waits), transaction lifetime
/// (`transactionEnded`, `closed`), key and value limits, the check of scan limits (the storage stops at a valid one) and range resolution, the
/// accounting of lent buffers behind `writeWhileReading`, read-only stores, the per-process path
/// registry and the store directory's checks, commit when the body returns and rollback when it
/// throws, and, for storage whose write transactions cannot read their own writes, an overlay of
/// the pending writes merged into reads and scans in both directions.
///
/// ## What the storage promises
/// - Keys and values reach it already checked against the declared ``EngineLimits``; ranges
///   arrive resolved (``ResolvedRange``: bounds no longer than a key, never empty, never inverted).
/// - `beginRead()` returns a transaction on one snapshot, taken when it begins.
/// - `beginWrite()` is called by one thread at a time in this process; the storage serializes
///   writers of other processes itself (or declares no ``EngineCapabilities/multiProcess``).
/// - A transaction is used by one thread and ended exactly once: ``StorageReadTransaction/end()``
///   after a read, after a commit, or instead of a commit (rolling back).
/// - An error thrown by a primitive inside a write transaction breaks that transaction: the core
///   rethrows it for every later operation and rolls the transaction back.
/// - Primitives may block on I/O; they must give up after ``EngineOptions/timeout`` and throw.
/// - `close()` is called once, with no transaction running.
public protocol KeyValueStorage: AnyObject {
    /// Begins a read transaction that sees one snapshot of the store.
    ///
    /// May throw ``StorageNeedsExclusiveAccess`` (before anything is read) to have the core run
    /// an action with no reader of this process inside a transaction, then call it again.
    func beginRead() throws -> any StorageReadTransaction

    /// Begins the write transaction (the core admits one writer of this process at a time).
    func beginWrite() throws -> any StorageWriteTransaction

    /// Releases the library's handles. Called once, with no transaction running.
    func close() throws
}

/// The read primitives of one transaction.
public protocol StorageReadTransaction: AnyObject {
    /// Calls `body` once with the value stored under `key`, or with `nil` when it is absent, and
    /// returns what it returns. The buffer is valid only inside `body`, which may read (not
    /// write) the transaction. An error thrown by `body` must pass through unchanged.
    func get<R>(_ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R

    /// Visits the pairs of `range` in key order (descending when `reverse`), at most `limit` of
    /// them (`nil`: no limit; never 0), until `visit` returns `false` or the range ends. The
    /// buffers are valid only during one call of `visit`, which may read (not write) the
    /// transaction. An error thrown by `visit` must pass through unchanged.
    func scan(
        _ range: ResolvedRange, reverse: Bool, limit: Int?,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws

    /// Ends the transaction: releases a reader, rolls back an uncommitted writer. Called once.
    func end()
}

/// The write primitives of one transaction.
public protocol StorageWriteTransaction: StorageReadTransaction {
    /// Stores `value` under `key`, replacing any earlier value.
    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws

    /// Stores `value` under `key` and returns whether the key held a value (the transaction's own
    /// writes included). Implement it where the storage tells as it writes, sparing a lookup; a
    /// default implementation reads the key, then puts. Not called on storage whose reads miss
    /// its own writes (the core answers from its overlay).
    func putReportingReplaced(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws -> Bool

    /// Removes `key`; a missing key is not an error.
    func delete(_ key: UnsafeRawBufferPointer) throws

    /// Removes the keys of `range` and returns how many there were. A default implementation
    /// scans the keys, then deletes them one by one.
    func clear(_ range: ResolvedRange) throws -> Int

    /// Makes every write of the transaction durable and visible, atomically. When it throws,
    /// nothing of the transaction may remain (the core then calls ``StorageReadTransaction/end()``).
    func commit() throws
}

extension StorageWriteTransaction {
    public func putReportingReplaced(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws -> Bool {
        let replaced = try get(key) { $0 != nil }
        try put(value, forKey: key)
        return replaced
    }

    public func clear(_ range: ResolvedRange) throws -> Int {
        var doomed: [[UInt8]] = []
        try scan(range, reverse: false, limit: nil) { key, _ in
            doomed.append(Array(key))
            return true
        }
        for key in doomed { try key.withUnsafeBytes { try delete($0) } }
        return doomed.count
    }
}

/// A write transaction that buffers its writes instead of applying them (its reads see the
/// snapshot it began on), for storage declared with `readsOwnWrites: false`.
///
/// The core indexes the buffered writes only when a read needs them, by replaying them here: the
/// first read after writing, and again the next read after more writes; from then on it indexes
/// each write as it is made (so a transaction replays its buffer at most twice). A transaction
/// that only writes, or reads only before its writes, never pays for the index and keeps one
/// copy of its writes. Storage that does not conform has every write indexed as it happens.
public protocol BufferedStorageWriteTransaction: StorageWriteTransaction {
    /// Calls `visit` with every buffered write in the order written; a `nil` value is a delete.
    func replayBufferedWrites(_ visit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer?) -> Void)
}

/// Thrown by ``KeyValueStorage/beginRead()`` when it must first change shared state (remap a
/// grown file, reopen a handle): the core takes the writer's slot, waits until no read
/// transaction of this process is running, runs `action`, and begins the read again.
public struct StorageNeedsExclusiveAccess: Error {
    /// The change to make alone. An error it throws (or ``EngineError/mustRetry(reason:)`` when
    /// readers do not finish in time) ends the `read` that asked for it.
    public let action: @Sendable () throws -> Void
    /// Asks the core to run `action` alone, then begin the read again.
    public init(_ action: @escaping @Sendable () throws -> Void) { self.action = action }
}

/// What the core lends a storage when it opens it.
public struct StorageContext: Sendable {
    /// The store's directory (`nil` for storage without one, such as memory).
    public let path: String?
    /// The options the store is opened with (mode, durability, timeout), for the storage to honour.
    public let options: EngineOptions
    /// Exclusive access for the writer; see ``StorageServices``.
    public let services: StorageServices
}

/// The core's help for a storage that must change shared state while it writes.
public final class StorageServices: Sendable {
    let gate: TransactionGate

    init(gate: TransactionGate) { self.gate = gate }

    /// Called by the running writer (inside ``KeyValueStorage/beginWrite()`` or a write
    /// primitive): waits until no read transaction of this process is running, holding new ones
    /// back, then runs `body` alone. Throws ``EngineError/mustRetry(reason:)`` when readers are
    /// still running after `timeout` seconds; `nil` waits for as long as they run (a reader that
    /// itself waits for this writer then blocks both: only for callers that document it).
    public func withReadersDrained<R>(timeout: Double? = 10, _ body: () throws -> R) throws -> R {
        try gate.withReadersDrained(timeout: timeout, body)
    }
}
