import StrataEngine

/// Errors of the record layer. Engine failures arrive as `EngineError`.
public enum RecordError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stored value or key of `type` could not be decoded (corrupt or foreign bytes).
    case corruptRecord(type: String, detail: String)
    /// A value of `type` at `key` (its components, or hex) that the store's value transform
    /// `transform` refused (``ValueTransform``): altered, moved from another key or store, or
    /// sealed under a key the store was not opened with. Its checksum matched: the bytes are as
    /// written, not damaged by the disk.
    case valueRefused(type: String, key: String, transform: String, reason: ValueTransformError)
    /// A value written under another schema version, with no migration for it.
    case versionMismatch(type: String, stored: UInt32, current: UInt32)
    /// A field of the record could not be encoded; nothing was written.
    case unencodableField(type: String, detail: String)
    /// The encoded key exceeds the engine's key limit.
    case keyTooLarge(type: String, length: Int, limit: Int)
    /// Two record types claim one keyspace, or the stored key layout differs from the type's.
    case keyspaceClash(keyspace: String, detail: String)
    /// A query whose shape does not fit the record's key (checked at run time for hand-written queries).
    case invalidQuery(type: String, detail: String)
    /// A write in a read-only transaction.
    case readOnlyTransaction
    /// The store's manifest does not match how it is opened.
    case manifestMismatch(detail: String)
    /// A keyspace's catalog entry could not be decoded.
    case corruptCatalog(keyspace: String, detail: String)
    /// The store or a keyspace requires a feature this build of Strata does not know (written by
    /// a newer build): using it could leave that feature's data out of step, so it is refused.
    case unsupportedFeature(feature: String, scope: String)
    /// The store is in an older format (or its upgrade was interrupted): opening it writable once
    /// upgrades it in place; a read-only open cannot.
    case upgradeRequired(fromFormat: UInt32)
    /// A write would give two records of `type` the same values in a unique index; it had no
    /// effect (the transaction goes on unless the caller lets the error end it).
    case uniqueViolation(type: String, index: String, value: String)
    /// A query on an index that is not readable: being built (write-only) or disabled.
    case indexNotReady(type: String, index: String, state: IndexState)
    /// An index entry's key (prefix, index name, values and primary key) exceeds the engine's
    /// key limit; nothing was written.
    case indexKeyTooLarge(type: String, index: String, length: Int, limit: Int)
    /// An index declaration or use that cannot work (a duplicate name, an index the type does not declare).
    case invalidIndex(type: String, index: String, detail: String)
    /// An index entry that does not match the store's records (written around the record layer).
    case corruptIndex(type: String, index: String, detail: String)
    /// The store's change feed is off (``Store/enableChangeFeed(retention:)`` turns it on).
    case changeFeedOff
    /// A change token resumes where the feed no longer reaches: the retention trimmed the
    /// changes after it, or it belongs to another feed (another store's, or this store's before
    /// its feed was turned off). Read the records afresh, then follow the feed from
    /// ``Store/changeFeedEnd()``.
    case historyTruncated(detail: String)
    /// A change token this build cannot use: another token layout, or a position after the
    /// feed's end (a store restored from an older copy).
    case invalidChangeToken(detail: String)
    /// Change feed settings that cannot work (a retention of no transactions, a negative age).
    case invalidChangeFeedSettings(detail: String)
    /// A stored part of the change feed could not be decoded (corrupt or foreign bytes).
    case corruptChangeFeed(detail: String)
    /// A generated key could not be issued: the type's key is not one `Int`, its sequence
    /// reached `Int.max`, or its stored sequence could not be decoded.
    case keyGeneration(type: String, detail: String)
    /// An import job (``Store/importRecords(_:job:batchSize:progress:)``) cannot resume with this
    /// sequence: its stored position names another element than the sequence has there (another
    /// data set under the same job name), or another import of the same job is running. Nothing
    /// was written; ``Store/discardImport(_:job:)`` forgets the position.
    case importMismatch(type: String, job: String, detail: String)

    /// Whether this error says a stored record cannot be read at all (damaged bytes, a version
    /// without migration, a value its transform refuses as altered or malformed), so that passes
    /// over many records (index builds, verification) count it and go on. A key that is missing or
    /// unavailable is not: every record sealed under it would be skipped.
    var isUnreadableRecord: Bool {
        switch self {
        case .corruptRecord, .versionMismatch: return true
        case let .valueRefused(_, _, _, reason): return reason.kind == .authenticationFailed || reason.kind == .malformed
        default: return false
        }
    }

    public var description: String {
        switch self {
        case let .corruptRecord(type, detail): return "corrupt \(type) record: \(detail)"
        case let .valueRefused(type, key, transform, reason): return "\(type) record at \(key): \(transform) refused its value: \(reason)"
        case let .versionMismatch(type, stored, current):
            return "\(type) record stored under schema version \(stored), the type is at version \(current) and has no migration for it"
        case let .unencodableField(type, detail): return "\(type) record not stored: \(detail)"
        case let .keyTooLarge(type, length, limit): return "\(type) key is \(length) bytes encoded, the limit is \(limit)"
        case let .keyspaceClash(keyspace, detail): return "keyspace \"\(keyspace)\" clash: \(detail)"
        case let .invalidQuery(type, detail): return "invalid query on \(type): \(detail)"
        case let .keyGeneration(type, detail): return "no key generated for \(type): \(detail)"
        case let .importMismatch(type, job, detail): return "import job \"\(job)\" of \(type): \(detail)"
        case .readOnlyTransaction: return "cannot write in a read-only transaction"
        case let .manifestMismatch(detail): return "store manifest mismatch: \(detail)"
        case let .corruptCatalog(keyspace, detail): return "the catalog entry of keyspace \"\(keyspace)\" is unreadable: \(detail)"
        case let .unsupportedFeature(feature, scope):
            return "\(scope) requires the feature \"\(feature)\", which this build of Strata does not know: open it with a newer build"
        case let .upgradeRequired(fromFormat):
            return "the store is in format \(fromFormat) (or its upgrade to format \(Manifest.formatVersion) was interrupted): open it writable once to upgrade it in place"
        case let .uniqueViolation(type, index, value): return "unique index \(type).\(index) already holds \(value) for another record"
        case let .indexNotReady(type, index, state): return "index \(type).\(index) cannot be queried: it is \(state)"
        case let .indexKeyTooLarge(type, index, length, limit):
            return "an entry of index \(type).\(index) is \(length) bytes encoded, the key limit is \(limit); nothing was written"
        case let .invalidIndex(type, index, detail): return "index \(type).\(index): \(detail)"
        case let .corruptIndex(type, index, detail): return "index \(type).\(index) is out of step with its records: \(detail)"
        case .changeFeedOff: return "the store's change feed is off"
        case let .historyTruncated(detail): return "change history truncated: \(detail)"
        case let .invalidChangeToken(detail): return "invalid change token: \(detail)"
        case let .invalidChangeFeedSettings(detail): return "invalid change feed settings: \(detail)"
        case let .corruptChangeFeed(detail): return "corrupt change feed: \(detail)"
        }
    }
}
