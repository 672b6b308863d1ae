import StrataEngine
import StrataKeyCodec

/// The records any of several ranges reads, each once, in primary-key order: what a predicate's
/// `||` reads when each side fixes the leading components of the key or an index. Prints as
/// `union of (index scan Person.byName (name = "Jane"), a point read per entry | index scan
/// Person.byTag (tags = "x"), a point read per entry), a point read per key`.
///
/// It reads the primary keys of every range (no record), removes the duplicates, sorts them and
/// then reads each record by key: memory for the matching keys, a point read per record.
///
/// Intersecting, it reads the keys every range reads (`intersection of (…)`): what an `&&` of
/// equalities on several indexes reads, a point read only for the keys all ranges hold. Bounded
/// where it does not pay: a later range holding more than four times the keys left (plus 64) is
/// not read whole, nor one whose index is being built; their terms are left to the query's
/// filter (which keeps them). Either way a limit or a page reads the ranges' keys whole.
public struct UnionPlan<Root: Record>: RecordPlan {
    let branches: [AccessPlan<Root>]
    /// Whether the records are those every range reads, not any.
    let intersecting: Bool

    init(_ branches: [AccessPlan<Root>], intersecting: Bool = false) {
        self.branches = branches
        self.intersecting = intersecting
    }

    /// Always `nil`: the plan reads several ranges.
    public var index: RecordIndex<Root>? { nil }
    /// Every record: the ranges are in ``description``.
    public var recordQuery: RecordQuery { .all }

    /// The ranges and how records are read.
    public var description: String {
        (intersecting ? "intersection of (" : "union of (") + branches.map(\.plan.description).joined(separator: " | ") + "), a point read per key"
    }

    /// The distinct primary keys the ranges read, in `order`.
    @usableFromInline
    func keys(in ctx: TransactionContext, order: Order) throws -> [[UInt8]] {
        var keys = Set<[UInt8]>()
        if intersecting {
            keys = Set(try branches[0].plan.primaryKeys(in: ctx, limit: nil, order: .ascending).lazy.map(\.bytes))
            for branch in branches.dropFirst() where !keys.isEmpty {
                guard try branch.indexes.allSatisfy({ try ctx.isQueryable($0) }) else { continue }
                let bound = 4 * keys.count + 64
                let other = try branch.plan.primaryKeys(in: ctx, limit: bound + 1, order: .ascending)
                if other.count <= bound { keys.formIntersection(other.lazy.map(\.bytes)) }
            }
        } else {
            for branch in branches {
                for key in try branch.plan.primaryKeys(in: ctx, limit: nil, order: .ascending) { keys.insert(key.bytes) }
            }
        }
        let sorted = keys.sorted { Bytewise.compare($0, $1) < 0 }
        return order == .ascending ? sorted : sorted.reversed()
    }

    /// The matching records.
    public func select(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [Root] {
        try scannedRecords(in: ctx, limit: limit, order: order)
    }

    /// How many distinct records the ranges read (no record is read).
    public func count(in ctx: TransactionContext) throws -> Int { try keys(in: ctx, order: .ascending).count }

    /// Visits the matching records.
    public func forEach(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (Root) throws -> Bool) throws {
        try forEachScanned(in: ctx, limit: limit, order: order, body)
    }

    /// Visits the matching records as views, each read by key.
    public func forEachView(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (RecordView<Root>) throws -> Bool) throws {
        try ctx.forEachView(Root.self, keys: try keys(in: ctx, order: order).prefix(limit ?? .max), body)
    }

    /// The distinct primary keys, in order.
    public func primaryKeys(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [EncodedIndexKey] {
        try keys(in: ctx, order: order).prefix(limit ?? .max).map { EncodedIndexKey(bytes: $0) }
    }

    /// ``keys(in:order:)`` strictly after `position` (before it, descending): where a page continues.
    @usableFromInline
    func keys(in ctx: TransactionContext, order: Order, after position: [UInt8]?) throws -> [[UInt8]] {
        let keys = try keys(in: ctx, order: order)
        guard let position else { return keys }
        return keys.filter { key in
            let c = Bytewise.compare(key, position)
            return order == .ascending ? c > 0 : c < 0
        }
    }

    /// Visits the matching records after a primary key (before it, descending).
    public func scanRecords(in ctx: TransactionContext, order: Order, after position: [UInt8]?, limit: Int?,
                            _ body: (_ position: () -> [UInt8], Root) throws -> Bool) throws {
        var remaining = limit ?? .max
        for key in try keys(in: ctx, order: order, after: position) where remaining > 0 {
            // Read in the same transaction that listed the key: it is there.
            guard let record = try ctx.fetch(Root.self, key: { $0.write(contentsOf: key) }) else { continue }
            remaining -= 1
            if try !body({ key }, record) { return }
        }
    }
}

extension TransactionContext {
    /// Visits the records with these keys (without the keyspace prefix), in the order given, as
    /// views; a key without a record is skipped.
    @usableFromInline
    func forEachView<R: Record, Keys: Sequence<[UInt8]>>(_: R.Type, keys: Keys, _ body: (RecordView<R>) throws -> Bool) throws {
        let prefix = self.prefix(R.self)
        let layout = try storedLayout(R.self)
        for key in keys {
            var stop = false
            try scan([KeyRange.closed(prefix + key, prefix + key)], order: .ascending, limit: 1) { key, value in
                stop = try !withView(R.self, key: key, value: value, layout: layout, body)
                return false
            }
            if stop { return }
        }
    }
}
