import StrataEngine
import StrataKeyCodec

/// Reads a range of an index's entries: one seek, then per entry a point read of its record by
/// key, or, on a covering index, the record from the entry itself. Prints as `index scan
/// Person.byCityAge (city = "Paris", age > 30), a point read per entry` or `covering index scan
/// Person.byAge (age >= 45), records from the entries`.
public struct IndexScanPlan<Root: Record>: RecordPlan {
    /// The index read.
    public let scanned: RecordIndex<Root>
    /// The conditions on the index's components.
    public let recordQuery: RecordQuery
    /// The index read.
    public var index: RecordIndex<Root>? { scanned }

    /// The plan of `recordQuery` on `index`.
    @inlinable
    public init(_ index: RecordIndex<Root>, _ recordQuery: RecordQuery) {
        scanned = index
        self.recordQuery = recordQuery
    }

    /// `index scan Person.byCityAge (city = "Paris"), a point read per entry`, or `covering index
    /// scan …, records from the entries`.
    public var description: String {
        let conditions = recordQuery.conditions(names: scanned.components.map(\.name))
        let target = "\(Root.recordType.keyspace).\(scanned.name) (\(conditions))"
        return scanned.covering ? "covering index scan \(target), records from the entries" : "index scan \(target), a point read per entry"
    }

    /// The matching records, in index order.
    @inlinable
    public func select(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [Root] {
        try scanned.select(in: ctx, recordQuery, limit: limit, order: order)
    }

    /// How many entries match (records are not read).
    @inlinable
    public func count(in ctx: TransactionContext) throws -> Int { try scanned.count(in: ctx, recordQuery) }

    /// Visits the matching records one at a time.
    @inlinable
    public func forEach(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (Root) throws -> Bool) throws {
        try scanned.forEach(in: ctx, recordQuery, limit: limit, order: order, body)
    }

    /// Visits the matching records as views (from the entries, when covering).
    @inlinable
    public func forEachView(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (RecordView<Root>) throws -> Bool) throws {
        try scanned.forEachView(in: ctx, recordQuery, limit: limit, order: order, body)
    }

    /// The primary keys of the matching entries (records are not read).
    @inlinable
    public func primaryKeys(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [EncodedIndexKey] {
        try scanned.primaryKeys(in: ctx, recordQuery, limit: limit, order: order)
    }

    /// Visits the matching records after an entry key (without the index's prefix).
    @inlinable
    public func scanRecords(in ctx: TransactionContext, order: Order, after position: [UInt8]?, limit: Int?,
                            _ body: (_ position: () -> [UInt8], Root) throws -> Bool) throws {
        try ctx.scanIndex(scanned, recordQuery, limit: limit, order: order, after: position) { entry, _, record in
            try body({ Array(entry) }, record())
        }
    }
}
