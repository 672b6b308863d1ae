import StrataEngine
import StrataKeyCodec

/// An index of totals (``IndexStorage/totals``): for each group of values, how many records have
/// them and the sum of one integer field over those records, kept in the transaction of every
/// write, as the FoundationDB Record Layer keeps its COUNT and SUM indexes. Reading a group's
/// total is one point read, however many records it has.
///
/// ```swift
/// struct Order: Record {
///     var id: Int
///     var customer: Int
///     var amount: Int
///     /// How many orders each customer has, and what they add up to.
///     static let perCustomer = RecordIndex<Order>("perCustomer", AggregateIndex.sum("amount", \.amount, by: .field("customer", \.customer)))
///     /// How many orders there are: no group component, one total.
///     static let orders = RecordIndex<Order>("orders", AggregateIndex.count())
///     static let indexes = [perCustomer, orders]
/// }
/// let customer = try Order.perCustomer.total(in: ctx, .all.equal(7))   // count and sum, one read
/// let everyOrder = try Order.orders.total(in: ctx).count
/// ```
///
/// - **Groups** are the components' values, as a value index's entries are: a multi-valued
///   component (``IndexComponent/each(_:_:)``) puts a record in one group per distinct element.
///   A group with no record left has no stored total.
/// - **Writes** read the totals they change (a replaced record is taken from its old groups and
///   added to its new ones): an insert into an index of totals costs a point read and a write per
///   group it changes. A group's sum that would leave `Int64` is refused with
///   ``RecordError/invalidIndex(type:index:detail:)`` before anything is written (changes are
///   added up in 128 bits: only the stored result must fit).
/// - **Built online** like any index added to a keyspace that holds records
///   (``Store/prepare(_:batchSize:onBatch:)``): until the build is done, writes change the totals
///   only of records the build has passed (it counts the others when it reaches them), so the
///   totals are exact when it ends, also after a kill and a resumed build.
/// - **Read** with ``RecordIndex/total(in:_:)`` (the groups a query selects, added up) and
///   ``RecordIndex/totals(in:_:limit:order:)`` (each group's); the record queries (`select`,
///   `count`, paging) refuse an index of totals.
/// - **Stored** as `prefix ‖ values` → the count and the sum, 8 bytes each, little-endian
///   (RecordFormat.md, "Totals"). The definition names the kind `count`, or `sum:` and the
///   summed field's name: changing it rebuilds the index.
///
/// `@unchecked Sendable`: its closure captures only a `Sendable` key path; it is not marked
/// `@Sendable` because the generic metatypes captured there are not (yet) `Sendable`.
public struct AggregateIndex<R: Record>: IndexMaintainer, @unchecked Sendable {
    public static var kind: String { "aggregate" }
    public static var storage: IndexStorage { .totals }
    /// The group's components, in order (none: one total for every record).
    public let components: [IndexComponent<R>]
    /// `count`, or `sum:` and the summed field's name.
    public let definedKind: String
    /// What a record adds to its groups' sums.
    @usableFromInline let amount: (R) -> Int64
    @usableFromInline let groups: ValueIndex<R>

    @usableFromInline
    init(components: [IndexComponent<R>], definedKind: String, amount: @escaping (R) -> Int64) {
        precondition(components.filter(\.isMultiValued).count <= 1, "at most one component of an index may be multi-valued")
        self.components = components
        self.definedKind = definedKind
        self.amount = amount
        groups = ValueIndex(components)
    }

    /// How many records each group of `groups` values has (and a sum of zero).
    @inlinable
    public static func count(by groups: IndexComponent<R>...) -> AggregateIndex {
        AggregateIndex(components: groups, definedKind: AggregateKinds.count, amount: { _ in 0 })
    }

    /// How many records each group of `groups` values has, and the sum of `value` (named `name`,
    /// as stored) over them. Signed integers of at most 64 bits: each converts to `Int64` exactly.
    @inlinable
    public static func sum<V: FixedWidthInteger & SignedInteger>(_ name: String, _ value: KeyPath<R, V> & Sendable,
                                                                 by groups: IndexComponent<R>...) -> AggregateIndex {
        precondition(V.bitWidth <= 64, "a sum adds up Int64s: \(V.self) is wider")
        return AggregateIndex(components: groups, definedKind: AggregateKinds.sum + name, amount: { Int64($0[keyPath: value]) })
    }

    @inlinable
    public func writeEntries(of record: R, to entries: inout IndexEntries) {
        let first = entries.found.count
        groups.writeEntries(of: record, to: &entries)
        entries.give(amount: amount(record), toEntriesFrom: first)
    }
}

/// The kinds ``AggregateIndex`` names in its definitions: `count`, and `sum:` followed by the
/// summed field's name.
@usableFromInline
enum AggregateKinds {
    @usableFromInline static let count = "count"
    @usableFromInline static let sum = "sum:"

    /// Whether a definition of `kind` keeps totals (the tools without Swift types cannot recompute them).
    static func keepTotals(_ kind: String) -> Bool { kind == count || kind.hasPrefix(sum) }
}

/// A group's total in an index of totals (``AggregateIndex``), or several groups' added up.
public struct AggregateTotal: Sendable, Hashable, CustomStringConvertible {
    /// How many records.
    public var count: Int64
    /// The sum of their amounts (zero for a count index).
    public var sum: Int64

    /// The total of `count` records whose amounts add up to `sum`.
    public init(count: Int64, sum: Int64) { (self.count, self.sum) = (count, sum) }

    /// No record.
    public static let zero = AggregateTotal(count: 0, sum: 0)

    public var description: String { "count \(count), sum \(sum)" }

    /// `self` changed by `change`, or `nil` when a figure would leave `Int64`.
    func adding(_ change: TotalChange) -> AggregateTotal? {
        guard let count = Int64(exactly: Int128(count) + change.count), let sum = Int64(exactly: Int128(sum) + change.sum) else { return nil }
        return AggregateTotal(count: count, sum: sum)
    }

    /// The stored form: the count and the sum, 8 bytes each, little-endian.
    var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        withUnsafeBytes(of: count.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: sum.littleEndian) { bytes += $0 }
        return bytes
    }

    /// Reads the stored form; `nil` unless it is 16 bytes.
    init?(stored bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        let all = Array(bytes)
        func int(at offset: Int) -> Int64 {
            all[offset..<offset + 8].reversed().reduce(0) { $0 << 8 | Int64($1) }
        }
        (count, sum) = (int(at: 0), int(at: 8))
    }
}

/// Records added to a group's total and taken from it, in figures wide enough that no number of
/// `Int64` amounts overflows them: only the stored result must fit in `Int64`, whatever the order
/// the records come in.
struct TotalChange: Equatable {
    var count: Int128 = 0
    var sum: Int128 = 0

    /// One record with `amount` joins the group (`joins`) or leaves it.
    mutating func record(_ amount: Int64, joins: Bool) {
        count += joins ? 1 : -1
        sum += joins ? Int128(amount) : -Int128(amount)
    }

    /// A stored total's records joining.
    mutating func add(_ total: AggregateTotal) {
        count += Int128(total.count)
        sum += Int128(total.sum)
    }

    /// As a total, or `nil` when a figure leaves `Int64`.
    var total: AggregateTotal? { AggregateTotal.zero.adding(self) }
}

extension RecordIndex {
    /// The totals of the groups `query` selects (equality on leading components, a comparison on
    /// the last), added up: one point read for a whole group, one read per group for a range.
    /// Only for an index of totals (``AggregateIndex``); one that is not readable throws
    /// ``RecordError/indexNotReady(type:index:state:)``.
    public func total(in ctx: TransactionContext, _ query: RecordQuery = .all) throws -> AggregateTotal {
        var change = TotalChange()
        try ctx.scanTotals(self, query, limit: nil, order: .ascending) { _, group in
            change.add(group)
            return true
        }
        guard let total = change.total else {
            throw RecordError.invalidIndex(type: "\(R.self)", index: name, detail: "the groups' total leaves Int64")
        }
        return total
    }

    /// How many records the groups `query` selects hold (their sums are not added up).
    func totalCount(in ctx: TransactionContext, _ query: RecordQuery) throws -> Int {
        var count = 0
        try ctx.scanTotals(self, query, limit: nil, order: .ascending) { _, group in
            count += Int(group.count)
            return true
        }
        return count
    }

    /// Each group `query` selects with its total, in the order of its values, at most `limit`:
    /// the group as its encoded components (``EncodedIndexKey``). Only for an index of totals.
    public func totals(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil,
                       order: Order = .ascending) throws -> [(group: EncodedIndexKey, total: AggregateTotal)] {
        var groups: [(group: EncodedIndexKey, total: AggregateTotal)] = []
        try ctx.scanTotals(self, query, limit: limit, order: order) { group, total in
            groups.append((EncodedIndexKey(bytes: group), total))
            return true
        }
        return groups
    }
}

extension TransactionContext {
    /// Visits the stored totals of `index` that `query` selects: each group's encoded values and total.
    func scanTotals<R: Record>(_ index: RecordIndex<R>, _ query: RecordQuery, limit: Int?, order: Order,
                               _ body: ([UInt8], AggregateTotal) throws -> Bool) throws {
        let source = try indexSource(index, query, totals: true)
        try scan(query.ranges(keyspacePrefix: source.prefix), order: order, limit: limit) { key, value in
            guard let total = AggregateTotal(stored: value) else {
                throw RecordError.corruptIndex(type: "\(R.self)", index: index.name, detail: "a stored total is \(value.count) bytes, not 16")
            }
            return try body(Array(key[source.prefix.count...]), total)
        }
    }

    /// The writes that move the totals of `index` (declared as `declaration`) from the groups of
    /// `old` to those of `new` (either may be `nil`) for the record stored as `key`. None while
    /// the index is being built and its build has not reached `key`: the build counts the record
    /// when it gets there (and one deleted before then was never counted).
    @usableFromInline
    func totalWrites<R: Record>(_ declaration: RecordIndex<R>, _ index: ActiveIndex, key: some Collection<UInt8>,
                                new: R?, old: R?) throws -> [(key: [UInt8], value: [UInt8]?)] {
        if index.state != .readable {
            let built = try reader.get(SystemKey.indexBuild(keyspace: R.recordType.keyspace, name: index.name, generation: index.generation))
            guard let built, !built.lexicographicallyPrecedes(key) else { return [] }
        }
        var changes: [[UInt8]: TotalChange] = [:]
        for (record, joins) in [(new, true), (old, false)] {
            guard let record else { continue }
            for (group, amount) in declaration.totalEntries(of: record) { changes[group, default: TotalChange()].record(amount, joins: joins) }
        }
        return try totalWrites(R.self, index, adding: changes)
    }

    /// The writes that add `changes` (by group) to the stored totals of `index`: a group whose
    /// count reaches zero is deleted. Throws before anything is written when a total would leave
    /// `Int64`, a group key is over the limit, or a stored total is not one.
    func totalWrites<R: Record>(_: R.Type, _ index: ActiveIndex, adding changes: [[UInt8]: TotalChange]) throws -> [(key: [UInt8], value: [UInt8]?)] {
        var writes: [(key: [UInt8], value: [UInt8]?)] = []
        for (group, change) in changes.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where change != TotalChange() {
            let key = index.prefix + group
            try checkEntryLength(R.self, index, key.count)
            let stored = try reader.get(key).map { bytes in
                guard let total = AggregateTotal(stored: bytes) else {
                    throw RecordError.corruptIndex(type: "\(R.self)", index: index.name, detail: "a stored total is \(bytes.count) bytes, not 16")
                }
                return total
            } ?? .zero
            guard let next = stored.adding(change) else { throw totalOverflow(R.self, index) }
            guard next.count > 0 || next == .zero else {
                throw RecordError.corruptIndex(type: "\(R.self)", index: index.name,
                                               detail: "a group's total (\(stored)) does not hold the records a write takes from it (count \(change.count), sum \(change.sum))")
            }
            writes.append((key, next.count == 0 ? nil : next.encoded))
        }
        return writes
    }

    func totalOverflow<R: Record>(_: R.Type, _ index: ActiveIndex) -> RecordError {
        RecordError.invalidIndex(type: "\(R.self)", index: index.name, detail: "a group's total would leave Int64: the write is refused")
    }

}
