/// What reading one record type's stored values needs from a transaction: the length of its
/// keyspace prefix and which schema versions have its current layout. A scan looks it up once
/// (``TransactionContext/storedLayout(_:)``) and reads every row with it; a point read looks the
/// same facts up itself.
@usableFromInline
struct StoredLayout: Sendable {
    @usableFromInline let prefixLength: Int
    /// The type's current schema version, and the version format 1 stored it under, if any.
    @usableFromInline let version: UInt32
    @usableFromInline let formatOneVersion: UInt32?
    /// Older versions with the same fields (derived versions only; see `Catalog.check`).
    @usableFromInline let sameFields: Set<UInt32>

    @inlinable
    init(prefixLength: Int, version: UInt32, formatOneVersion: UInt32?, sameFields: Set<UInt32>) {
        self.prefixLength = prefixLength
        self.version = version
        self.formatOneVersion = formatOneVersion
        self.sameFields = sameFields
    }

    /// Whether values of schema version `stored` have the type's current layout.
    @inlinable
    func isCurrent(_ stored: UInt32) -> Bool {
        stored == version || stored == formatOneVersion || sameFields.contains(stored)
    }
}
