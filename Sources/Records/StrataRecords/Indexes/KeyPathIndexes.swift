import StrataKeyCodec

// Typed indexes on one key path, for records written without the macro (a ``CodableRecord``, a
// hand-written ``Record``): what `@Index` generates for one component, as three generic types.
// Each holds its ``RecordIndex``, which the type lists in ``Record/indexes``:
//
//     struct Book: CodableRecord {
//         var id: UUID; var title: String; var authors: [String]; var isbn: String
//         static let title = FieldIndex("title", \Book.title)
//         static let authors = EachIndex("authors", \Book.authors)
//         static let isbn = UniqueIndex("isbn", \Book.isbn)
//         static let indexes = [title.index, authors.index, isbn.index]
//     }
//
// Queries take the value's own type: a plain value for equality, a ``Comparison`` for a range.
// Only a ``UniqueIndex`` has `fetch`: on the others it is a compile error that says why.

/// An index on one property (stored or computed) of `R`: many records may share a value.
public struct FieldIndex<R: Record, Value: KeyComponent & Sendable>: Sendable {
    /// The index, for ``Record/indexes``.
    public let index: RecordIndex<R>

    /// An index named `name` (stored in the catalog: renaming it builds a new index) on
    /// `keyPath`; `covering` stores a copy of each record in its entry, so reads skip the
    /// record's own lookup.
    public init(_ name: String, _ keyPath: KeyPath<R, Value> & Sendable, covering: Bool = false) {
        index = RecordIndex(name, .field(name, keyPath), covering: covering)
    }

    /// Not available: only a ``UniqueIndex`` finds one record by its value.
    @available(*, unavailable, message: "fetch needs a unique index: declare it as UniqueIndex, or use select")
    public func fetch(in ctx: TransactionContext, _ value: Value) throws -> R? { fatalError() }
}

/// An index on one property of `R` whose values are unique: a second record with a value
/// already taken is refused with ``RecordError/uniqueViolation(type:index:value:)``.
public struct UniqueIndex<R: Record, Value: KeyComponent & Sendable>: Sendable {
    /// The index, for ``Record/indexes``.
    public let index: RecordIndex<R>

    /// A unique index named `name` on `keyPath` (see ``FieldIndex/init(_:_:covering:)``).
    public init(_ name: String, _ keyPath: KeyPath<R, Value> & Sendable, covering: Bool = false) {
        index = RecordIndex(name, .field(name, keyPath), unique: true, covering: covering)
    }

    /// The record whose value is `value`, or `nil`.
    public func fetch(in ctx: TransactionContext, _ value: Value) throws -> R? {
        try index.fetch(in: ctx) { $0.append(value) }
    }
}

/// An index on each element of a collection property of `R` (many-to-many: a book under each of
/// its authors): a record is found by any of its elements, once per matching element.
public struct EachIndex<R: Record, Element: KeyComponent & Sendable>: Sendable {
    /// The index, for ``Record/indexes``.
    public let index: RecordIndex<R>

    /// An index named `name` on each element of `keyPath` (see ``FieldIndex/init(_:_:covering:)``).
    public init<C: Sequence<Element>>(_ name: String, _ keyPath: KeyPath<R, C> & Sendable, covering: Bool = false) {
        index = RecordIndex(name, .each(name, keyPath), covering: covering)
    }

    /// Not available: an element may be held by many records; use `select`.
    @available(*, unavailable, message: "fetch needs a unique index: an EachIndex finds every record holding the element; use select")
    public func fetch(in ctx: TransactionContext, _ value: Element) throws -> R? { fatalError() }
}

/// The queries the three index types share, on one value of type `Value`.
public protocol KeyPathIndex: Sendable {
    /// The indexed record type.
    associatedtype Indexed: Record
    /// The type of the indexed values.
    associatedtype Value: KeyComponent & Sendable
    /// The index, for ``Record/indexes``.
    var index: RecordIndex<Indexed> { get }
}

extension FieldIndex: KeyPathIndex {}
extension UniqueIndex: KeyPathIndex {}
extension EachIndex: KeyPathIndex {
    /// The type of the indexed values: the collection's elements.
    public typealias Value = Element
}

extension KeyPathIndex {
    /// The records whose value is `value`, in primary-key order, at most `limit`.
    public func select(in ctx: TransactionContext, limit: Int? = nil, order: Order? = nil, _ value: Value) throws -> [Indexed] {
        try index.select(in: ctx, limit: limit, order: order) { $0.append(value) }
    }

    /// The records whose value matches `comparison` (`.range("A"..<"B")`, `.greaterThan(x)`,
    /// `.oneOf([…])`), in index order (nearest first for `lessThan`; see ``Order``), at most `limit`.
    public func select(in ctx: TransactionContext, limit: Int? = nil, order: Order? = nil, _ comparison: Comparison<Value>) throws -> [Indexed] {
        try index.select(in: ctx, RecordQuery.all.then(comparison), limit: limit, order: order)
    }

    /// How many entries have the value `value` (records are not read).
    public func count(in ctx: TransactionContext, _ value: Value) throws -> Int {
        try index.count(in: ctx) { $0.append(value) }
    }

    /// How many entries match `comparison` (records are not read).
    public func count(in ctx: TransactionContext, _ comparison: Comparison<Value>) throws -> Int {
        try index.count(in: ctx, RecordQuery.all.then(comparison))
    }

    /// The records whose value is `value`, as a ``Query`` (pages, cursors, streams, observation).
    public func query(_ value: Value) -> Query<Indexed> { Query(index: index, RecordQuery.all.equal(value)) }

    /// The records whose value matches `comparison`, as a ``Query``.
    public func query(_ comparison: Comparison<Value>) -> Query<Indexed> { Query(index: index, RecordQuery.all.then(comparison)) }
}
