import Foundation
import StrataEngine
import StrataKeyCodec

/// A query on `R`'s key as a value: what the macro's `R.query(…)` returns (or
/// `Query<R>(RecordQuery…)` by hand). Read it whole (`select`), a page at a time (`page`), lazily
/// inside a transaction (`cursor`), or as an `AsyncSequence` of short transactions (`stream`).
///
/// Without an explicit order a query returns the nearest records first (see ``Order``).
public struct Query<R: Record>: Sendable {
    /// How the query reads its records: a key scan or an index scan (``explain()`` prints it).
    public var plan: any RecordPlan<R> {
        switch held {
        case .key(let plan): plan
        case .index(let plan): plan
        case .filter(let plan): plan
        }
    }
    /// Today's plan kinds, held as themselves and read through ``run(_:_:filter:)``: through `any
    /// RecordPlan<R>` their reads ran unspecialized for `R` (callgrind, LMDB: a row of `select`
    /// 1557 instructions as itself, 2675 through the existential). A new kind adds a case.
    @usableFromInline enum HeldPlan: Sendable {
        case key(KeyScanPlan<R>)
        case index(IndexScanPlan<R>)
        case filter(FilterPlan<R>)
    }
    @usableFromInline let held: HeldPlan

    /// `key` or `index` applied to the plan held (one of them runs): each with its concrete type;
    /// a predicate query's plan runs through `index`'s operation on ``FilterPlan`` (`filter`).
    @inlinable
    func run<T>(_ key: (KeyScanPlan<R>) throws -> T, _ index: (IndexScanPlan<R>) throws -> T,
                filter: (FilterPlan<R>) throws -> T) rethrows -> T {
        switch held {
        case .key(let plan): try key(plan)
        case .index(let plan): try index(plan)
        case .filter(let plan): try filter(plan)
        }
    }

    @usableFromInline
    init(held: HeldPlan) { self.held = held }

    /// The query a page reads in `ctx`: a predicate query whose index is being built reads by the
    /// key alone (``FilterPlan/readable(in:)``), and a page token continues the plan that made it
    /// (a key position is no index position), so paging that began during a build ends as it began.
    func reading(in ctx: TransactionContext, after token: PageToken?) throws -> Query {
        guard case .filter(let plan) = held, let unindexed = plan.unindexed else { return self }
        let byKey = Query(held: .filter(unindexed.plan))
        if let token, token.query == byKey.fingerprint { return byKey }
        return try plan.byKey(in: ctx) == nil ? self : byKey
    }
    /// The conditions on the key, or with ``index`` on the index's components.
    @inlinable
    public var recordQuery: RecordQuery {
        switch held {
        case .key(let plan): plan.recordQuery
        case .index(let plan): plan.recordQuery
        case .filter(let plan): plan.recordQuery
        }
    }
    /// The index the query reads (``RecordIndex/query(_:)``), or `nil` for the key.
    public var index: RecordIndex<R>? { plan.index }

    /// A query on `R`'s key; with no argument, every record of `R`.
    public init(_ recordQuery: RecordQuery = .all) {
        held = .key(KeyScanPlan(recordQuery))
    }

    /// A query on an index's components; pages continue after an index entry.
    public init(index: RecordIndex<R>, _ recordQuery: RecordQuery = .all) {
        held = .index(IndexScanPlan(index, recordQuery))
    }

    /// What the query reads, in one line: `key scan Person (lastName = "Dallas")`, `index scan
    /// Person.byCityAge (city = "Paris", age > 30), a point read per entry`, `covering index scan
    /// Person.byAge (age >= 45), records from the entries`.
    public func explain() -> String { plan.description }

    /// The most rows ``explain(in:)`` counts in a range.
    static var explainedRows: Int { 1_000 }

    /// What a read in `ctx` runs, in one line, and how many rows the range it reads holds, counted
    /// up to 1,000 (a multi-valued index counts entries; a filter may keep fewer):
    /// `index scan Person.byCity (city = "Paris"), a point read per entry; filter age > 30; 212 rows
    /// in the range`. Unlike ``explain()``, it says when a predicate query reads by the key because
    /// an index it would read is being built. Counting stops at 1,000 rows, except for a union or
    /// an intersection, whose ranges' keys are read whole (as they read them); an intersection's
    /// count is of the keys every range read holds.
    public func explain(in ctx: TransactionContext) throws -> String {
        let plan: any RecordPlan<R>, range: any RecordPlan<R>
        switch held {
        case .key(let key): (plan, range) = (key, key)
        case .index(let index): (plan, range) = (index, index)
        case .filter(let filter):
            let readable = try filter.readable(in: ctx)
            (plan, range) = (readable, readable.access.plan)
        }
        let rows = try range.primaryKeys(in: ctx, limit: Self.explainedRows + 1, order: .ascending).count
        return plan.description + (rows > Self.explainedRows ? "; over \(Self.explainedRows) rows in the range" : "; \(rows) rows in the range")
    }

    /// The order used when none is given: nearest first on the key or an index; a predicate
    /// query's own order (its sort's, or its range's), ascending.
    @inlinable
    public var defaultOrder: Order {
        if case .filter = held { return .ascending }
        return recordQuery.defaultOrder
    }

    /// The matching records, at most `limit`.
    @inlinable
    public func select(in ctx: TransactionContext, limit: Int? = nil, order: Order? = nil) throws -> [R] {
        let order = order ?? defaultOrder
        return try run({ try $0.select(in: ctx, limit: limit, order: order) },
                       { try $0.select(in: ctx, limit: limit, order: order) },
                       filter: { try $0.select(in: ctx, limit: limit, order: order) })
    }

    /// How many records match (entries, on a multi-valued index).
    @inlinable
    public func count(in ctx: TransactionContext) throws -> Int {
        try run({ try $0.count(in: ctx) },
                { try $0.count(in: ctx) },
                filter: { try $0.count(in: ctx) })
    }

    /// Visits the matching records one at a time, without collecting them; `body` returns
    /// `false` to stop.
    @inlinable
    public func forEach(in ctx: TransactionContext, limit: Int? = nil, order: Order? = nil, _ body: (R) throws -> Bool) throws {
        let order = order ?? defaultOrder
        try run({ try $0.forEach(in: ctx, limit: limit, order: order, body) },
                { try $0.forEach(in: ctx, limit: limit, order: order, body) },
                filter: { try $0.forEach(in: ctx, limit: limit, order: order, body) })
    }

    /// The primary keys of the matching records (their encoded components, without the
    /// keyspace), at most `limit`, without decoding the records (nor, on an index, reading them).
    @inlinable
    public func primaryKeys(in ctx: TransactionContext, limit: Int? = nil, order: Order? = nil) throws -> [EncodedIndexKey] {
        let order = order ?? defaultOrder
        return try run({ try $0.primaryKeys(in: ctx, limit: limit, order: order) },
                       { try $0.primaryKeys(in: ctx, limit: limit, order: order) },
                       filter: { try $0.primaryKeys(in: ctx, limit: limit, order: order) })
    }

    /// One page: at most `limit` records after `token` (the previous page's ``Page/next``).
    ///
    /// Paging continues after the last key returned (before it, descending), so a record that is
    /// there for the whole paging and not deleted is returned exactly once, whatever is inserted
    /// or deleted between pages, and one inserted behind the cursor is not returned. Each page may
    /// be read in its own transaction, process or request: the token is `Codable`.
    public func page(in ctx: TransactionContext, limit: Int, order: Order? = nil, after token: PageToken? = nil) throws -> Page<R> {
        guard limit > 0 else { throw RecordError.invalidQuery(type: "\(R.self)", detail: "a page needs a limit of at least 1, not \(limit)") }
        let order = order ?? defaultOrder
        var records: [R] = []
        records.reserveCapacity(Swift.min(limit, 1_024))
        var lastKey: [UInt8]?
        let query = try reading(in: ctx, after: token)
        let position = try token?.position(for: query, in: ctx, order: order)
        func visit(_ key: () -> [UInt8], _ record: R) -> Bool {
            records.append(record)
            if records.count == limit { lastKey = key() }
            return true
        }
        try query.run({ try $0.scanRecords(in: ctx, order: order, after: position, limit: limit, visit) },
                      { try $0.scanRecords(in: ctx, order: order, after: position, limit: limit, visit) },
                      filter: { try $0.scanRecords(in: ctx, order: order, after: position, limit: limit, visit) })
        let next = try lastKey.map { PageToken(query, store: try ctx.storeIdentity(), order: order, position: $0) }
        return Page(records: records, next: next)
    }

    /// A cursor over the matching records that reads them lazily, in batches, inside this
    /// transaction (one snapshot); it cannot be used after the transaction ends (reading then
    /// throws `EngineError.transactionEnded`).
    public func cursor(in ctx: TransactionContext, order: Order? = nil, batchSize: Int = 64) -> RecordCursor<R> {
        RecordCursor(ctx: ctx, query: self, order: order ?? defaultOrder, batchSize: Swift.max(1, batchSize))
    }

    /// The matching records as an `AsyncSequence` that reads `batchSize` records per read
    /// transaction, each continuing after the last key of the one before.
    ///
    /// Consistency is per batch: records are never repeated or skipped by paging (as with
    /// ``page(in:limit:order:after:)``), but batches see the store at different moments. No
    /// snapshot is held while the consumer suspends, so writers, LMDB's map growth and SQLite's
    /// checkpoints never wait on a slow consumer. Memory stays at one batch. Cancelling the
    /// consuming task (or stopping the iteration) stops reading before the next batch; a batch
    /// already being read completes.
    public func stream(from store: Store, order: Order? = nil, batchSize: Int = 256) -> RecordStream<R> where R: Sendable {
        RecordStream(store: store, query: self, order: order ?? defaultOrder, batchSize: Swift.max(1, batchSize))
    }
}

/// One page of a query's records, and where the next one starts.
public struct Page<R: Record> {
    /// The page's records, in the query's order: at most the limit asked for.
    public let records: [R]
    /// Continues the query after this page; `nil` when this page was the last (it held fewer
    /// records than the limit). A full last page still has a token, whose page is empty.
    public let next: PageToken?
}

extension Page: Sendable where R: Sendable {}

/// Where a paged query continues: opaque, versioned and `Codable` (JSON, say), so a page can
/// continue in another process or request. It remembers the store, the record type's keyspace,
/// the query and the order, and is refused (``RecordError/invalidQuery(type:detail:)``) for any
/// other, and when it is damaged or altered.
///
/// A token is an input from the network when a service hands it to its clients: one that was
/// truncated, edited, made by another build or on another store, or whose position is longer
/// than any key, is refused with that error. Its check is a CRC-32C, not a signature: someone who
/// rewrites the position and recomputes the check gets a token that reads on from another place,
/// but only ever records the same query selects (the position narrows the query's own ranges).
public struct PageToken: Codable, Sendable, Hashable {
    /// Token layouts this build reads. Layout 1 had no store identity and no check.
    static let version = 2

    private let version: Int
    /// The identity of the store it was made on (``StoreIdentity``); 0 for a store without one.
    private let store: UInt64?
    private let keyspace: String
    /// The index the query reads; absent for the key.
    private let index: String?
    /// CRC-32C of the query's key ranges: a token continues only the query that made it.
    fileprivate let query: UInt32
    private let descending: Bool
    /// The last key returned, without the keyspace prefix (on an index: the last entry's key
    /// without the index's prefix).
    private let after: Data
    /// CRC-32C of everything above: a token damaged or edited on its way is refused.
    private let check: UInt32?

    init<R: Record>(_ query: Query<R>, store: UInt64, order: Order, position: [UInt8]) {
        version = Self.version
        self.store = store
        keyspace = R.recordType.keyspace
        index = query.index?.name
        self.query = query.fingerprint
        descending = order == .descending
        after = Data(position)
        check = Self.check(store: store, keyspace: keyspace, index: index, query: self.query, descending: descending, after: after)
    }

    /// The check over a token's fields, in RecordFormat.md's field encoding.
    static func check(store: UInt64, keyspace: String, index: String?, query: UInt32, descending: Bool, after: Data) -> UInt32 {
        var w = FieldWriter()
        w.write(version)
        w.write(store)
        w.write(keyspace)
        w.write(index)
        w.write(query)
        w.write(descending)
        w.write(after)
        return w.bytes.withUnsafeBytes { RecordChecksum.of(key: UnsafeRawBufferPointer(start: nil, count: 0), value: $0) }
    }

    /// Where to continue (a key without the keyspace prefix, or an entry key without the index's
    /// prefix), once the token is checked against the store and the query.
    func position<R: Record>(for query: Query<R>, in ctx: TransactionContext, order: Order) throws -> [UInt8] {
        func refuse(_ why: String) -> RecordError { .invalidQuery(type: "\(R.self)", detail: "this page token \(why)") }
        guard version == Self.version else { throw refuse("has layout version \(version); this build reads \(Self.version)") }
        guard let store, let check,
              check == Self.check(store: store, keyspace: keyspace, index: index, query: self.query, descending: descending, after: after)
        else { throw refuse("is damaged or was altered: its check does not match") }
        guard store == (try ctx.storeIdentity()) else { throw refuse("was made on another store") }
        guard after.count <= KeyLimits.maxKeyLength else { throw refuse("holds a position of \(after.count) bytes, longer than any key") }
        guard keyspace == R.recordType.keyspace else { throw refuse("belongs to keyspace \"\(keyspace)\"") }
        guard index == query.index?.name else { throw refuse(index.map { "was made on index \($0)" } ?? "was made on the key") }
        guard self.query == query.fingerprint else { throw refuse("was made by another query") }
        guard descending == (order == .descending) else { throw refuse("was made for the \(descending ? "descending" : "ascending") order") }
        return Array(after)
    }
}

extension TransactionContext {
    /// The store's identity for page tokens: known at open, or read in this transaction (0 when the
    /// store has none; a damaged one throws).
    func storeIdentity() throws -> UInt64 {
        if let identity = store.identity { return identity }
        return try StoreIdentity.read(in: reader)
    }
}

/// Records read lazily inside one transaction; see ``Query/cursor(in:order:batchSize:)``.
public final class RecordCursor<R: Record> {
    private let ctx: TransactionContext
    private let query: Query<R>
    private let order: Order
    private let batchSize: Int
    private var buffer: [R] = []
    private var position = 0
    private var lastKey: [UInt8]?
    private var exhausted = false

    init(ctx: TransactionContext, query: Query<R>, order: Order, batchSize: Int) {
        (self.ctx, self.query, self.order, self.batchSize) = (ctx, query, order, batchSize)
    }

    /// The next record, or `nil` after the last one.
    public func next() throws -> R? {
        if position == buffer.count {
            guard !exhausted else { return nil }
            buffer.removeAll(keepingCapacity: true)
            position = 0
            var last: [UInt8]?
            func visit(_ key: () -> [UInt8], _ record: R) -> Bool {
                buffer.append(record)
                if buffer.count == batchSize { last = key() }
                return true
            }
            let (after, limit) = (lastKey, batchSize)
            try query.run({ try $0.scanRecords(in: ctx, order: order, after: after, limit: limit, visit) },
                          { try $0.scanRecords(in: ctx, order: order, after: after, limit: limit, visit) },
                          filter: { try $0.scanRecords(in: ctx, order: order, after: after, limit: limit, visit) })
            if let last { lastKey = last } else { exhausted = true }
            if buffer.isEmpty { return nil }
        }
        defer { position += 1 }
        return buffer[position]
    }
}

/// An `AsyncSequence` of a query's records read in short transactions; see
/// ``Query/stream(from:order:batchSize:)``.
public struct RecordStream<R: Record & Sendable>: AsyncSequence, Sendable {
    public typealias Element = R
    let store: Store
    let query: Query<R>
    let order: Order
    let batchSize: Int

    public func makeAsyncIterator() -> Iterator { Iterator(stream: self) }

    /// Reads the stream's records one batch (one read transaction) at a time. `next()` throws
    /// `CancellationError` when the task is cancelled before a batch, and whatever the read throws.
    public struct Iterator: AsyncIteratorProtocol {
        let stream: RecordStream
        var buffer: [R] = []
        var position = 0
        var token: PageToken?
        var finished = false

        public mutating func next() async throws -> R? {
            if position == buffer.count {
                guard !finished else { return nil }
                // A cancelled consumer stops here, before another transaction.
                try Task.checkCancellation()
                let (stream, token) = (stream, token)
                let page = try await stream.store.withReadTransaction { ctx in
                    try stream.query.page(in: ctx, limit: stream.batchSize, order: stream.order, after: token)
                }
                buffer = page.records
                position = 0
                self.token = page.next
                finished = page.next == nil
                if buffer.isEmpty { return nil }
            }
            defer { position += 1 }
            return buffer[position]
        }
    }
}

extension KeyRange {
    /// The part of this range strictly above `key`.
    @usableFromInline
    func above(_ key: [UInt8]) -> KeyRange {
        var range = self
        switch lower {
        case .unbounded: range.lower = .exclusive(key)
        case .inclusive(let bound), .exclusive(let bound):
            if Bytewise.compare(key, bound) >= 0 { range.lower = .exclusive(key) }
        }
        return range
    }

    /// The part of this range strictly below `key`.
    @usableFromInline
    func below(_ key: [UInt8]) -> KeyRange {
        var range = self
        switch upper {
        case .unbounded: range.upper = .exclusive(key)
        case .inclusive(let bound), .exclusive(let bound):
            if Bytewise.compare(key, bound) <= 0 { range.upper = .exclusive(key) }
        }
        return range
    }
}

extension RecordQuery {
    /// CRC-32C of the key ranges the query scans (in any keyspace): equal for equal queries.
    var fingerprint: UInt32 {
        var bytes: [UInt8] = []
        for range in ranges(keyspacePrefix: []) {
            for bound in [range.lower, range.upper] {
                switch bound {
                case .unbounded: bytes.append(0)
                case .inclusive(let key): bytes += [1] + withUnsafeBytes(of: UInt32(key.count).littleEndian, Array.init) + key
                case .exclusive(let key): bytes += [2] + withUnsafeBytes(of: UInt32(key.count).littleEndian, Array.init) + key
                }
            }
        }
        return bytes.withUnsafeBytes { RecordChecksum.extend(0, $0) }
    }
}
