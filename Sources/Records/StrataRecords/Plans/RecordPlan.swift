import StrataEngine
import StrataKeyCodec

/// How a ``Query`` reads its records, as a value that says in one line what it reads (its
/// `description`, like SQLite's `EXPLAIN QUERY PLAN`; ``Query/explain()``).
///
/// A query holds one plan and runs every read through it. Today's kinds: ``KeyScanPlan`` (a range
/// of the record type's keys) and ``IndexScanPlan`` (a range of an index's entries, then a point
/// read per entry, or the records from the entries of a covering index). A new kind of read is a
/// new conforming type in `Sources/Records/StrataRecords/Plans`.
///
/// Every method reads inside `ctx`'s transaction, `limit` records at most, in `order`.
public protocol RecordPlan<Root>: Sendable, CustomStringConvertible {
    /// The record type the plan reads.
    associatedtype Root: Record
    /// The index the plan reads; `nil` when it reads the key. Page tokens name it.
    var index: RecordIndex<Root>? { get }
    /// The conditions the plan reads by: on the key, or on the index's components.
    var recordQuery: RecordQuery { get }
    /// The matching records.
    func select(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [Root]
    /// How many rows match (entries, on a multi-valued index), without decoding records.
    func count(in ctx: TransactionContext) throws -> Int
    /// Visits the matching records; `body` returns `false` to stop.
    func forEach(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (Root) throws -> Bool) throws
    /// Visits the matching records as views over the engine's bytes (``RecordView``).
    func forEachView(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (RecordView<Root>) throws -> Bool) throws
    /// The primary keys of the matching records, without decoding them.
    func primaryKeys(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [EncodedIndexKey]
    /// Visits the matching records strictly after `position` (before it, descending): `body`
    /// gets each record and, on request, its position (a key without the keyspace prefix, or an
    /// index entry's key without the index's prefix), which pages and cursors continue after.
    func scanRecords(in ctx: TransactionContext, order: Order, after position: [UInt8]?, limit: Int?,
                     _ body: (_ position: () -> [UInt8], Root) throws -> Bool) throws
}

extension RecordPlan {
    /// The matching records, collected through ``scanRecords(in:order:after:limit:_:)``: `select`
    /// for plans without a read path of their own (the key and index plans have theirs).
    /// Inlinable, so a plan that is itself inlinable stays specialized for its record type.
    @inlinable
    func scannedRecords(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [Root] {
        var records: [Root] = []
        try scanRecords(in: ctx, order: order, after: nil, limit: limit) { _, record in
            records.append(record)
            return true
        }
        return records
    }

    /// Visits the matching records through ``scanRecords(in:order:after:limit:_:)``: `forEach`
    /// for plans without a read path of their own.
    @inlinable
    func forEachScanned(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (Root) throws -> Bool) throws {
        try scanRecords(in: ctx, order: order, after: nil, limit: limit) { try body($1) }
    }
}

extension RecordQuery {
    /// The conditions in words, with `names` naming the components: `lastName = "Dallas",
    /// firstName < "L"`; `every record` when there are none.
    func conditions(names: [String]) -> String {
        func name(_ i: Int) -> String { i < names.count ? names[i] : "component \(i)" }
        func value(_ encoded: [UInt8]) -> String {
            (try? StoredValue.keyComponents(encoded).first?.json) ?? StoredValue.hex(encoded)
        }
        var parts: [String] = []
        let equalities = (try? StoredValue.keyComponents(prefix)) ?? []
        for (i, equal) in equalities.enumerated() { parts.append("\(name(i)) = \(equal.json)") }
        if hasComparison {
            let field = name(componentTypes.count - 1)
            if isEmpty {
                parts.append("\(field) in []")
            } else if bounds.count > 1 {
                let values = bounds.compactMap { alternative -> String? in
                    guard case .above(let v, _)? = alternative.first else { return nil }
                    return value(v)
                }
                parts.append("\(field) in [" + values.joined(separator: ", ") + "]")
            } else {
                var lower: (String, Bool)?, upper: (String, Bool)?
                for bound in bounds[0] {
                    switch bound {
                    case let .above(v, inclusive): lower = (value(v), inclusive)
                    case let .below(v, inclusive): upper = (value(v), inclusive)
                    }
                }
                switch (lower, upper) {
                case let ((l, true)?, (u, true)?) where l == u: parts.append("\(field) = \(l)")
                case let (l?, u?): parts.append("\(field) \(l.1 ? ">=" : ">") \(l.0) and \(field) \(u.1 ? "<=" : "<") \(u.0)")
                case let (l?, nil): parts.append("\(field) \(l.1 ? ">=" : ">") \(l.0)")
                case let (nil, u?): parts.append("\(field) \(u.1 ? "<=" : "<") \(u.0)")
                case (nil, nil): break
                }
            }
        }
        return parts.isEmpty ? "every record" : parts.joined(separator: ", ")
    }
}
