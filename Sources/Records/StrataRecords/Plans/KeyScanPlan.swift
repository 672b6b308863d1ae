import StrataEngine
import StrataKeyCodec

/// Reads a range of the record type's keys: one seek, then the records in key order. Prints as
/// `key scan Person (lastName = "Dallas", firstName < "L")`.
public struct KeyScanPlan<Root: Record>: RecordPlan {
    /// The conditions on the key.
    public let recordQuery: RecordQuery
    /// Always `nil`: the plan reads the key.
    public var index: RecordIndex<Root>? { nil }

    /// The plan of `recordQuery` on `Root`'s key.
    @inlinable
    public init(_ recordQuery: RecordQuery) { self.recordQuery = recordQuery }

    /// `key scan Person (lastName = "Dallas", firstName < "L")`.
    public var description: String {
        "key scan \(Root.recordType.keyspace) (" + recordQuery.conditions(names: Root.recordType.key.map(\.name)) + ")"
    }

    /// The matching records, in key order.
    @inlinable
    public func select(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [Root] {
        try ctx.select(Root.self, recordQuery, limit: limit, order: order)
    }

    /// How many records match (keys are counted, values not decoded).
    @inlinable
    public func count(in ctx: TransactionContext) throws -> Int { try ctx.count(Root.self, recordQuery) }

    /// Visits the matching records one at a time.
    @inlinable
    public func forEach(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (Root) throws -> Bool) throws {
        try ctx.forEach(Root.self, recordQuery, limit: limit, order: order, body)
    }

    /// Visits the matching records as views over the engine's bytes.
    @inlinable
    public func forEachView(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (RecordView<Root>) throws -> Bool) throws {
        try ctx.forEachView(Root.self, recordQuery, limit: limit, order: order, body)
    }

    /// The keys of the matching records, without the keyspace.
    @inlinable
    public func primaryKeys(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [EncodedIndexKey] {
        let ranges = try ctx.checkedRanges(Root.self, recordQuery)
        let prefixLength = ctx.prefix(Root.self).count
        var keys: [EncodedIndexKey] = []
        try ctx.scan(ranges, order: order, limit: limit) { key, _ in
            keys.append(EncodedIndexKey(bytes: Array(key[prefixLength...])))
            return true
        }
        return keys
    }

    /// Visits the matching records after a key (without the keyspace prefix).
    @inlinable
    public func scanRecords(in ctx: TransactionContext, order: Order, after position: [UInt8]?, limit: Int?,
                            _ body: (_ position: () -> [UInt8], Root) throws -> Bool) throws {
        var ranges = try ctx.checkedRanges(Root.self, recordQuery)
        let keyspacePrefix = ctx.prefix(Root.self)
        if let position {
            let key = keyspacePrefix + position
            ranges = ranges.map { order == .ascending ? $0.above(key) : $0.below(key) }
        }
        let layout = try ctx.storedLayout(Root.self)
        try ctx.scan(ranges, order: order, limit: limit) { key, value in
            try body({ Array(key[keyspacePrefix.count...]) }, try ctx.decode(Root.self, key: key, value: value, layout: layout))
        }
    }
}
