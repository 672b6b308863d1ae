import Foundation

extension Query {
    /// The records `predicate` accepts, in the order of `sortedBy` (records with equal sort fields
    /// in primary-key order), read the cheapest way the planner finds (``explain()`` prints it):
    ///
    /// ```swift
    /// let query = Member.query(where: #Predicate { $0.city == "Paris" && $0.age > 30 }, sortedBy: [.ascending(\.age)])
    /// let youngest = try query.select(in: ctx, limit: 20)
    /// ```
    ///
    /// Every predicate `#Predicate` accepts is answered. A comparison of a stored property with a
    /// value (`==`, `!=`, `<`, `<=`, `>`, `>=`, `in` a literal array, a collection's `contains`)
    /// compares key encodings, as every index and the key order them: strings by Unicode scalars
    /// (so the NFC and NFD spellings of "é" are different values, as in SQLite), integers by value,
    /// `nil` equal only to `nil`. Other expressions (arithmetic, `Double` comparisons, string
    /// `contains`) are evaluated by Foundation, as Swift would. Without a sort, records come in the
    /// order of the range the plan reads; give one when the order, or which records a limit keeps,
    /// matters. Reading with `order: .descending` reverses the sort.
    ///
    /// Pages, cursors, streams and views work as on other queries; a page token continues only the
    /// query that made it (the same plan, predicate values and sort).
    public init(where predicate: Predicate<R>, sortedBy sort: [SortField<R>] = []) {
        let term = TermContext(predicate).term(predicate.expression)
        held = .filter(Planner(conjuncts: term.conjuncts, sort: sort).plan())
    }

    /// What a page token must match: the key ranges read and, for a predicate query, its plan
    /// (the filter's values and the sort included).
    var fingerprint: UInt32 {
        guard case .filter(let plan) = held else { return recordQuery.fingerprint }
        return Array(plan.readDescription.utf8).withUnsafeBytes { RecordChecksum.extend(recordQuery.fingerprint, $0) }
    }
}

extension Record {
    /// The records `predicate` accepts; see ``Query/init(where:sortedBy:)``.
    public static func query(where predicate: Predicate<Self>, sortedBy sort: [SortField<Self>] = []) -> Query<Self> {
        Query(where: predicate, sortedBy: sort)
    }

    /// The records `predicate` accepts, at most `limit`, sorted by `sort`; see ``Query/init(where:sortedBy:)``.
    public static func select(in ctx: TransactionContext, where predicate: Predicate<Self>, sortedBy sort: [SortField<Self>] = [],
                              limit: Int? = nil) throws -> [Self] {
        try Query(where: predicate, sortedBy: sort).select(in: ctx, limit: limit)
    }

    /// How many records `predicate` accepts.
    public static func count(in ctx: TransactionContext, where predicate: Predicate<Self>) throws -> Int {
        try Query(where: predicate).count(in: ctx)
    }
}
