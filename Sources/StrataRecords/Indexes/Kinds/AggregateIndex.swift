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
///   group it changes. A sum that would leave `Int64` is refused with
///   ``RecordError/invalidIndex(type:index:detail:)`` before anything is written.
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
    /// as stored) over them. Signed integers only: each converts to `Int64` exactly.
    @inlinable
    public static func sum<V: FixedWidthInteger & SignedInteger>(_ name: String, _ value: KeyPath<R, V> & Sendable,
                                                                 by groups: IndexComponent<R>...) -> AggregateIndex {
        AggregateIndex(components: groups, definedKind: AggregateKinds.sum + name, amount: { Int64($0[keyPath: value]) })
    }

    @inlinable
    public func writeEntries(of record: R, to entries: inout IndexEntries) {
        let first = entries.found.count
        groups.writeEntries(of: record, to: &entries)
        let amount = self.amount(record)
        for position in first..<entries.found.count {
            entries.amounts.append(IndexEntries.Amount(position: position, amount: amount))
        }
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

    /// `self + other`, or `nil` when a figure would leave `Int64`.
    func adding(_ other: AggregateTotal) -> AggregateTotal? {
        let (count, countOverflow) = self.count.addingReportingOverflow(other.count)
        let (sum, sumOverflow) = self.sum.addingReportingOverflow(other.sum)
        return countOverflow || sumOverflow ? nil : AggregateTotal(count: count, sum: sum)
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

extension RecordIndex {
    /// The totals of the groups `query` selects (equality on leading components, a comparison on
    /// the last), added up: one point read for a whole group, one read per group for a range.
    /// Only for an index of totals (``AggregateIndex``); one that is not readable throws
    /// ``RecordError/indexNotReady(type:index:state:)``.
    public func total(in ctx: TransactionContext, _ query: RecordQuery = .all) throws -> AggregateTotal {
        var total = AggregateTotal.zero
        try ctx.scanTotals(self, query, limit: nil, order: .ascending) { _, group in
            guard let sum = total.adding(group) else {
                throw RecordError.invalidIndex(type: "\(R.self)", index: name, detail: "the groups' total leaves Int64")
            }
            total = sum
            return true
        }
        return total
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
        var changes: [[UInt8]: AggregateTotal] = [:]
        for (record, adds) in [(new, true), (old, false)] {
            guard let record else { continue }
            for (group, amount) in declaration.totalEntries(of: record) {
                let (negated, negationOverflows) = Int64(0).subtractingReportingOverflow(amount)
                let change = adds ? AggregateTotal(count: 1, sum: amount) : AggregateTotal(count: -1, sum: negated)
                guard adds || !negationOverflows, let sum = changes[group, default: .zero].adding(change) else { throw totalOverflow(R.self, index) }
                changes[group] = sum
            }
        }
        return try totalWrites(R.self, index, adding: changes)
    }

    /// The writes that add `changes` (by group) to the stored totals of `index`: a group whose
    /// count reaches zero is deleted. Throws before anything is written when a total would leave
    /// `Int64`, a group key is over the limit, or a stored total is not one.
    func totalWrites<R: Record>(_: R.Type, _ index: ActiveIndex, adding changes: [[UInt8]: AggregateTotal]) throws -> [(key: [UInt8], value: [UInt8]?)] {
        var writes: [(key: [UInt8], value: [UInt8]?)] = []
        for (group, change) in changes.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where change != .zero {
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
                                               detail: "a group's total (\(stored)) does not hold the records a write takes from it (\(change))")
            }
            writes.append((key, next.count == 0 ? nil : next.encoded))
        }
        return writes
    }

    func totalOverflow<R: Record>(_: R.Type, _ index: ActiveIndex) -> RecordError {
        RecordError.invalidIndex(type: "\(R.self)", index: index.name, detail: "a group's total would leave Int64: the write is refused")
    }

    /// Applies writes made by ``totalWrites(_:_:key:new:old:)``.
    func apply(totals writes: [(key: [UInt8], value: [UInt8]?)], to writer: any KeyValueWriter) throws {
        for (key, value) in writes {
            if let value { try writer.put(value, forKey: key) } else { try writer.delete(key) }
        }
    }
}
