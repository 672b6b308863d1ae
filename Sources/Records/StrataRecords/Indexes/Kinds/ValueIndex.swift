import StrataKeyCodec

/// The index kind of every ``RecordIndex`` declared with components: one entry per record,
/// holding the components' values, or, with a multi-valued component (``IndexComponent/each(_:_:)``),
/// one per distinct element of that collection. Its catalog name is `value`.
public struct ValueIndex<R: Record>: IndexMaintainer {
    public static var kind: String { IndexKinds.value }
    public let components: [IndexComponent<R>]
    /// Whether every component is single-valued: each record has exactly one entry, written in
    /// place without intermediate arrays.
    @usableFromInline let isSingleValued: Bool

    /// The index of `components`, in order; at most one may be multi-valued.
    @inlinable
    public init(_ components: [IndexComponent<R>]) {
        precondition(components.filter(\.isMultiValued).count <= 1, "at most one component of an index may be multi-valued")
        self.components = components
        isSingleValued = components.allSatisfy { !$0.isMultiValued }
    }

    @inlinable
    public func writeEntries(of record: R, to entries: inout IndexEntries) {
        if isSingleValued {
            let start = entries.beginEntry()
            var isNil = false
            for component in components where component.write(record, &entries.keys) { isNil = true }
            entries.endEntry(start, isNil: isNil)
            return
        }
        // One multi-valued component: each distinct element with the other components' values.
        var combinations = [IndexValue(bytes: [], isNil: false)]
        var values: [IndexValue] = []
        for component in components {
            values.removeAll(keepingCapacity: true)
            component.encode(record, &values)
            if component.isMultiValued {
                combinations = combinations.flatMap { head in values.map { IndexValue(bytes: head.bytes + $0.bytes, isNil: head.isNil || $0.isNil) } }
            } else {
                for i in combinations.indices {
                    combinations[i].bytes += values[0].bytes
                    combinations[i].isNil = combinations[i].isNil || values[0].isNil
                }
            }
        }
        for combination in combinations {
            entries.add(isNil: combination.isNil) { $0.write(contentsOf: combination.bytes) }
        }
    }
}
