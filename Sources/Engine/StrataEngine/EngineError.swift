/// The errors of the engine layer, the same on every engine.
///
/// Where an engine fails in a way the contract does not name, adapters report
/// ``engineFailure(engine:code:message:operation:)`` with the library's own code and message,
/// e.g. `LMDB error -30796: MDB_CORRUPTED: Located page was wrong type - while committing`.
public enum EngineError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A key of zero bytes was given to `get`, `exists`, `put` or `delete`.
    case emptyKey
    /// A key longer than ``KeyLimits/maxKeyLength``.
    case keyTooLarge(length: Int, limit: Int)
    /// A value longer than the engine's ``EngineLimits/maxValueLength``. Nothing was written.
    case valueTooLarge(length: Int, limit: Int)
    /// A write would take the transaction past the engine's ``EngineLimits/maxOperationsPerTransaction``
    /// or ``EngineLimits/maxBytesPerTransaction`` (`what` says which). The write did not happen;
    /// split the work into several transactions.
    case transactionTooLarge(what: String, limit: Int)
    /// The store was closed.
    case closed
    /// A transaction (or `close()`) was started inside a transaction on the same store.
    case nestedTransaction
    /// A transaction object was used after its closure returned.
    case transactionEnded
    /// A write was attempted while bytes borrowed from the same transaction were lent out
    /// (inside a `scan` visitor or a `withValue` body).
    case writeWhileReading
    /// A write transaction was started on a store opened read-only.
    case readOnly(path: String)
    /// Opening without `.create` found no store at the path. Nothing was written there.
    case notFound(path: String)
    /// The path holds something that is not a store of this engine (a regular file, another
    /// engine's files, garbage, a truncated file). Nothing was written there.
    case notAStore(path: String, reason: String)
    /// The store is already open in this process; use the open instance.
    case alreadyOpen(path: String)
    /// Another process holds the store and this engine cannot share it.
    case locked(path: String)
    /// Every reader slot is taken (LMDB's `maxReaders`); retry after a reader ends.
    case readersFull(limit: Int)
    /// The disk (or quota) is full. The transaction was rolled back; earlier commits are intact.
    case diskFull(path: String)
    /// The store's files are damaged.
    case corrupt(path: String, detail: String)
    /// The operating system refused access to the path.
    case permissionDenied(path: String, detail: String)
    /// The transaction was rolled back without effect and can simply be run again (e.g. LMDB
    /// could not grow its map because another process committed meanwhile).
    case mustRetry(reason: String)
    /// An argument no engine accepts, such as a negative scan limit.
    case invalidArgument(String)
    /// Any other failure of the storage library, with its own code and message.
    case engineFailure(engine: String, code: Int, message: String, operation: String)

    public var description: String {
        switch self {
        case .emptyKey: return "empty key: keys are 1...\(KeyLimits.maxKeyLength) bytes"
        case let .keyTooLarge(length, limit): return "key too large: \(length) bytes, the limit is \(limit)"
        case let .valueTooLarge(length, limit): return "value too large: \(length) bytes, the limit is \(limit)"
        case let .transactionTooLarge(what, limit): return "transaction too large: more than \(limit) \(what) in one transaction"
        case .closed: return "the store is closed"
        case .nestedTransaction: return "a transaction cannot be started inside another transaction on the same store"
        case .transactionEnded: return "the transaction was used after its closure returned"
        case .writeWhileReading: return "cannot write while the transaction lends out bytes (inside a scan or withValue closure)"
        case let .readOnly(path): return "the store at \(path) is open read-only"
        case let .notFound(path): return "no store at \(path)"
        case let .notAStore(path, reason): return "not a store: \(path): \(reason)"
        case let .alreadyOpen(path): return "the store at \(path) is already open in this process"
        case let .locked(path): return "the store at \(path) is locked by another process"
        case let .readersFull(limit): return "all \(limit) reader slots are in use"
        case let .diskFull(path): return "disk full while writing \(path); the transaction was rolled back"
        case let .corrupt(path, detail): return "the store at \(path) is corrupt: \(detail)"
        case let .permissionDenied(path, detail): return "permission denied: \(path): \(detail)"
        case let .mustRetry(reason): return "the transaction was rolled back and can be retried: \(reason)"
        case let .invalidArgument(detail): return "invalid argument: \(detail)"
        case let .engineFailure(engine, code, message, operation):
            return "\(engine) error \(code): \(message) - while \(operation)"
        }
    }
}
