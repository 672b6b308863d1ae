import StrataEngine
import StrataKeyCodec

/// The read a ``FilterPlan`` starts from: a range of the key or of an index, or a union of such ranges.
@usableFromInline
enum AccessPlan<R: Record>: Sendable {
    case key(KeyScanPlan<R>)
    case index(IndexScanPlan<R>)
    case union(UnionPlan<R>)

    @usableFromInline var plan: any RecordPlan<R> {
        switch self {
        case .key(let plan): plan
        case .index(let plan): plan
        case .union(let plan): plan
        }
    }

    /// The indexes the read needs: those it takes entries from; of an intersection, the first
    /// range's (a later range that cannot be read is skipped, its terms left to the filter).
    @usableFromInline var indexes: [RecordIndex<R>] {
        switch self {
        case .key: []
        case .index(let plan): [plan.scanned]
        case .union(let plan): plan.intersecting ? plan.branches[0].indexes : plan.branches.flatMap(\.indexes)
        }
    }

    @inlinable
    func scanRecords(in ctx: TransactionContext, order: Order, after position: [UInt8]?, limit: Int?,
                     _ body: (_ position: () -> [UInt8], R) throws -> Bool) throws {
        switch self {
        case .key(let plan): try plan.scanRecords(in: ctx, order: order, after: position, limit: limit, body)
        case .index(let plan): try plan.scanRecords(in: ctx, order: order, after: position, limit: limit, body)
        case .union(let plan): try plan.scanRecords(in: ctx, order: order, after: position, limit: limit, body)
        }
    }

    /// ``scanRecords(in:order:after:limit:_:)`` with each record lent as a view, not decoded: what
    /// a filter reads first (`ViewFilter`). The position is as there.
    @inlinable
    func scanViews(in ctx: TransactionContext, order: Order, after position: [UInt8]?, limit: Int?,
                   _ body: (_ position: () -> [UInt8], RecordView<R>) throws -> Bool) throws {
        let layout = try ctx.storedLayout(R.self)
        switch self {
        case .key(let plan):
            var ranges = try ctx.checkedRanges(R.self, plan.recordQuery)
            if let position {
                let key = ctx.prefix(R.self) + position
                ranges = ranges.map { order == .ascending ? $0.above(key) : $0.below(key) }
            }
            try ctx.scan(ranges, order: order, limit: limit) { key, value in
                try ctx.withView(R.self, key: key, value: value, layout: layout) { view in try body({ Array(view.key) }, view) }
            }
        case .index(let plan):
            try ctx.scanIndexRows(plan.scanned, plan.recordQuery, limit: limit, order: order, after: position) { entry, _, key, value in
                try ctx.withView(R.self, key: key, value: value, layout: layout) { view in try body({ Array(entry) }, view) }
            }
        case .union(let plan):
            let keys = try plan.keys(in: ctx, order: order, after: position)
            var remaining = limit ?? .max
            try ctx.forEachView(R.self, keys: keys) { view in
                remaining -= 1
                return try body({ Array(view.key) }, view) && remaining > 0
            }
        }
    }
}

/// A predicate query's plan (``Query/init(where:sortedBy:)``): a range of the key or of an index
/// (the bounds the planner took from the predicate), the rest of the predicate evaluated on each
/// record read, and the sort, from the range's own order or in memory.
///
/// Prints as `index scan Person.byCityAge (city = "Paris", age > 30), a point read per entry;
/// filter name != "Jane"; sorted by name in memory` or `key scan Person (every record); filter
/// score > 2.5; in key order`.
///
/// Memory: without an in-memory sort, one record at a time. With one, the `limit` best records
/// (a bounded heap: O(limit)); without a limit, every matching record.
public struct FilterPlan<Root: Record>: RecordPlan {
    @usableFromInline let access: AccessPlan<Root>
    /// What the range does not answer exactly; `nil` when it answers the whole predicate.
    @usableFromInline let residual: PredicateTerm<Root>?
    /// ``residual`` as views evaluate it, before a record is decoded.
    @usableFromInline let viewFilter: ViewFilter<Root>?
    /// The sort done in memory; empty when the range's order gives the records in the order asked.
    @usableFromInline let sort: [SortField<Root>]
    /// The range's order that gives the records in the order asked (ascending: the query's).
    @usableFromInline let accessOrder: Order
    /// Why the plan reads this range, in words, for ``description``.
    let orderNote: String?
    /// An index of totals that answers ``count(in:)`` (the predicate selects its groups exactly).
    var countedBy: TotalsCount<Root>?
    /// The same predicate read by the key alone: what reads take while an index this plan reads
    /// is being built (``readable(in:)``); `nil` when the plan reads no index.
    @usableFromInline var unindexed: UnindexedPlan<Root>?

    init(access: AccessPlan<Root>, residual: PredicateTerm<Root>?, sort: [SortField<Root>], accessOrder: Order, orderNote: String?) {
        (self.access, self.residual, self.sort, self.accessOrder, self.orderNote) = (access, residual, sort, accessOrder, orderNote)
        viewFilter = residual.map { ViewFilter($0) }
    }

    /// The index the range reads; `nil` for the key.
    public var index: RecordIndex<Root>? { access.plan.index }
    /// The range's conditions.
    public var recordQuery: RecordQuery { access.plan.recordQuery }

    /// The range, the filter and the sort, in one line.
    public var description: String {
        var parts = [access.plan.description]
        if let residual { parts.append("filter " + residual.description) }
        if !sort.isEmpty {
            parts.append("sorted by " + sort.map { $0.name + ($0.descending ? " descending" : "") }.joined(separator: ", ") + " in memory")
        } else if let orderNote {
            parts.append(orderNote)
        }
        if let countedBy { parts.append("counted from " + countedBy.description) }
        return parts.joined(separator: "; ")
    }

    /// ``description`` without how counts are read: what a page token's fingerprint covers (an
    /// index of totals added later does not change which records a page holds).
    var readDescription: String {
        var plan = self
        plan.countedBy = nil
        return plan.description
    }

    /// The plan every read in `ctx` runs: this one, or, while an index it reads cannot be queried
    /// (being built, with no earlier generation standing in), the plan of the key alone, so a
    /// predicate query is answered whatever state its type's indexes are in.
    public func readable(in ctx: TransactionContext) throws -> FilterPlan<Root> { try byKey(in: ctx) ?? self }

    /// The plan of the key alone when this one cannot read in `ctx`; `nil` when it can.
    @inlinable
    func byKey(in ctx: TransactionContext) throws -> FilterPlan<Root>? {
        guard let unindexed else { return nil }
        for index in access.indexes where try !ctx.isQueryable(index) { return unindexed.plan }
        return nil
    }

    /// The range's order for a read in `order` (descending reverses the query's order).
    @inlinable
    func rangeOrder(_ order: Order) -> Order {
        order == .ascending ? accessOrder : (accessOrder == .ascending ? .descending : .ascending)
    }

    /// The matching records, at most `limit`, in the query's order (reversed by `.descending`).
    @inlinable
    public func select(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [Root] {
        if let byKey = try byKey(in: ctx) { return try byKey.select(in: ctx, limit: limit, order: order) }
        return try scannedRecords(in: ctx, limit: limit, order: order)
    }

    /// How many records match (entries, when the range is a multi-valued index and nothing else is
    /// checked). When an index of totals selects the same records (``AggregateIndex``), its groups'
    /// counts are read instead (one read per group), unless it is still being built.
    @inlinable
    public func count(in ctx: TransactionContext) throws -> Int {
        if let byKey = try byKey(in: ctx) { return try byKey.count(in: ctx) }
        if let total = try countFromTotals(in: ctx) { return total }
        guard let viewFilter else { return try access.plan.count(in: ctx) }
        var n = 0
        var scratch = KeyWriter(capacity: 32)
        var record: Root?
        try access.scanViews(in: ctx, order: .ascending, after: nil, limit: nil) { _, view in
            record = nil
            if try viewFilter.matches(view, record: &record, scratch: &scratch) { n += 1 }
            return true
        }
        return n
    }

    /// The count ``countedBy`` reads; `nil` without one, or while it is being built.
    @usableFromInline
    func countFromTotals(in ctx: TransactionContext) throws -> Int? {
        guard let countedBy else { return nil }
        do {
            return try countedBy.index.totalCount(in: ctx, countedBy.query)
        } catch RecordError.indexNotReady {
            return nil  // being built: count the records
        }
    }

    /// Visits the matching records in order.
    @inlinable
    public func forEach(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (Root) throws -> Bool) throws {
        if let byKey = try byKey(in: ctx) { return try byKey.forEach(in: ctx, limit: limit, order: order, body) }
        try forEachScanned(in: ctx, limit: limit, order: order, body)
    }

    /// Visits the matching records as views. A filter reads each view in place where it can
    /// (see the Querying article), else decodes it; with an in-memory sort, each record is read again by key,
    /// in order.
    @inlinable
    public func forEachView(in ctx: TransactionContext, limit: Int?, order: Order, _ body: (RecordView<Root>) throws -> Bool) throws {
        if let byKey = try byKey(in: ctx) { return try byKey.forEachView(in: ctx, limit: limit, order: order, body) }
        if limit == 0 { return }
        if sort.isEmpty {
            guard let viewFilter else { return try access.plan.forEachView(in: ctx, limit: limit, order: rangeOrder(order), body) }
            var remaining = limit ?? Int.max
            var scratch = KeyWriter(capacity: 32)
            var record: Root?
            try access.plan.forEachView(in: ctx, limit: nil, order: rangeOrder(order)) { view in
                record = nil
                guard try viewFilter.matches(view, record: &record, scratch: &scratch) else { return true }
                remaining -= 1
                return try body(view) && remaining > 0
            }
            return
        }
        try ctx.forEachView(Root.self, keys: try primaryKeys(in: ctx, limit: limit, order: order).lazy.map(\.bytes), body)
    }

    /// The primary keys of the matching records, in order.
    public func primaryKeys(in ctx: TransactionContext, limit: Int?, order: Order) throws -> [EncodedIndexKey] {
        if let byKey = try byKey(in: ctx) { return try byKey.primaryKeys(in: ctx, limit: limit, order: order) }
        if residual == nil && sort.isEmpty { return try access.plan.primaryKeys(in: ctx, limit: limit, order: rangeOrder(order)) }
        var keys: [EncodedIndexKey] = []
        try scanRecords(in: ctx, order: order, after: nil, limit: limit) { _, record in
            var writer = KeyWriter()
            record.writeKey(to: &writer)
            keys.append(EncodedIndexKey(bytes: writer.bytes))
            return true
        }
        return keys
    }

    /// Visits the matching records after `position`: the range's position (a key or an entry key)
    /// without an in-memory sort, else the record's sort key (its sort fields' encodings, then its primary key).
    /// Inlinable without a sort, so a range read in index or key order runs specialized for the record type.
    @inlinable
    public func scanRecords(in ctx: TransactionContext, order: Order, after position: [UInt8]?, limit: Int?,
                            _ body: (_ position: () -> [UInt8], Root) throws -> Bool) throws {
        if let byKey = try byKey(in: ctx) { return try byKey.scanRecords(in: ctx, order: order, after: position, limit: limit, body) }
        if limit == 0 { return }
        guard sort.isEmpty else { return try sortedScan(in: ctx, order: order, after: position, limit: limit, body) }
        guard let viewFilter else { return try access.scanRecords(in: ctx, order: rangeOrder(order), after: position, limit: limit, body) }
        var remaining = limit ?? Int.max
        var scratch = KeyWriter(capacity: 32)
        // Each row read as a view first: a row the filter rejects is never decoded.
        var record: Root?
        try access.scanViews(in: ctx, order: rangeOrder(order), after: position, limit: nil) { at, view in
            record = nil
            guard try viewFilter.matches(view, record: &record, scratch: &scratch) else { return true }
            let matched = try record ?? view.record()
            remaining -= 1
            // The position is lent on, not kept: `body` gets it as `scanViews` gave it.
            return try withoutActuallyEscaping(at) { try body($0, matched) } && remaining > 0
        }
    }

    /// ``scanRecords(in:order:after:limit:_:)`` with an in-memory sort: the best `limit` records
    /// after `position` by sort key, kept in a heap whose top is the worst of them.
    @usableFromInline
    func sortedScan(in ctx: TransactionContext, order: Order, after position: [UInt8]?, limit: Int?,
                    _ body: (_ position: () -> [UInt8], Root) throws -> Bool) throws {
        let descending = order == .descending
        func before(_ a: [UInt8], _ b: [UInt8]) -> Bool {
            let c = Bytewise.compare(a, b)
            return descending ? c > 0 : c < 0
        }
        var best = BoundedHeap<Root>(limit: limit, before: before)
        var scratch = KeyWriter(capacity: 32)
        var matched: Root?
        try access.scanViews(in: ctx, order: .ascending, after: nil, limit: nil) { _, view in
            matched = nil
            if let viewFilter, try !viewFilter.matches(view, record: &matched, scratch: &scratch) { return true }
            let record = try matched ?? view.record()
            let key = sortKey(record, sort)
            if let position, !before(position, key) { return true }
            best.insert(key, record)
            return true
        }
        for (key, record) in best.sorted() where try !body({ key }, record) { return }
    }
}

/// A ``FilterPlan`` held by reference, so that a plan can hold another (its plan by the key alone).
@usableFromInline
final class UnindexedPlan<Root: Record>: Sendable {
    @usableFromInline let plan: FilterPlan<Root>
    init(_ plan: FilterPlan<Root>) { self.plan = plan }
}

/// The best `limit` (or all) entries by `before`, with their sort keys.
struct BoundedHeap<Element> {
    let limit: Int?
    let before: ([UInt8], [UInt8]) -> Bool
    /// A max-heap by `before` (the worst entry first) while limited; unordered otherwise.
    private var entries: [([UInt8], Element)] = []

    init(limit: Int?, before: @escaping ([UInt8], [UInt8]) -> Bool) {
        self.limit = limit
        self.before = before
    }

    mutating func insert(_ key: [UInt8], _ element: Element) {
        guard let limit else { return entries.append((key, element)) }
        if entries.count < limit {
            entries.append((key, element))
            var i = entries.count - 1
            while i > 0 {
                let parent = (i - 1) / 2
                guard before(entries[parent].0, entries[i].0) else { break }
                entries.swapAt(parent, i)
                i = parent
            }
        } else if before(key, entries[0].0) {
            entries[0] = (key, element)
            var i = 0
            while true {
                let (l, r) = (2 * i + 1, 2 * i + 2)
                var worst = i
                if l < entries.count && before(entries[worst].0, entries[l].0) { worst = l }
                if r < entries.count && before(entries[worst].0, entries[r].0) { worst = r }
                if worst == i { break }
                entries.swapAt(i, worst)
                i = worst
            }
        }
    }

    /// The entries, best first.
    func sorted() -> [([UInt8], Element)] { entries.sorted { before($0.0, $1.0) } }
}

/// Counting by an index of totals: the groups of `index` that `query` selects.
struct TotalsCount<Root: Record>: Sendable, CustomStringConvertible {
    let index: RecordIndex<Root>
    let query: RecordQuery

    /// `totals Sale.perRegion (region = "north")`.
    var description: String {
        "totals \(Root.recordType.keyspace).\(index.name) (\(query.conditions(names: index.components.map(\.name))))"
    }
}
