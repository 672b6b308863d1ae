@_spi(StrataInternals) import StrataEngine

/// The registry of index kinds, by the name stored in each index's definition: how each kind's
/// entries are computed from a record decoded through the catalog, without its Swift type, for
/// ``Store/verify(listing:progress:)``. The typed side of a kind (its ``IndexMaintainer``) is
/// given where its index is declared.
///
/// `value` (``ValueIndex``) is built in. A kind that is not registered still works for every
/// typed read and write; verification reports its indexes as not checked, naming the kind. Only
/// value indexes keep a previous generation readable while a changed definition is built (their
/// entries are exactly their components' values); a changed index of another kind waits for its
/// build.
public enum IndexKinds {
    /// The name of the built-in kind, ``ValueIndex``.
    public static let value = "value"

    /// How a kind's component values are read from the stored fields they name: the stored value
    /// (of the field or key component named like the component; each element, for a
    /// multi-valued one) to the value its entry holds. `nil` means it cannot be computed: the
    /// index is then reported as not checked.
    public typealias CatalogReading = @Sendable (StoredValue) -> StoredValue?

    private static let registered = Locked<[String: CatalogReading]>([:])

    /// Registers (or replaces) how kind `kind`'s entries are read without the record's Swift type.
    public static func register(_ kind: String, reading: @escaping CatalogReading) {
        precondition(kind != value, "the value kind is built in")
        precondition(!AggregateKinds.keepTotals(kind), "kind \(kind) names an index of totals (AggregateIndex)")
        registered.withLock { $0[kind] = reading }
    }

    /// How `kind`'s component values are read from stored ones; `nil` for a kind not registered.
    static func reading(_ kind: String) -> CatalogReading? {
        if kind == value { return { $0 } }
        return registered.withLock { $0[kind] }
    }
}
