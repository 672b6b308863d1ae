import StrataKeyCodec

/// A secondary index of a record type: an ordered list of entries, one per record (or one per
/// element of a multi-valued component), that finds records by fields other than the key.
///
/// Declare a type's indexes in ``Record/indexes``; each is kept in the same transaction as every
/// write of the record (insert, overwrite, delete by key or by query), so an index is never out
/// of step with its records. Query it with the key's rules: equality on leading components, one
/// comparison on the last, a limit and an order.
///
/// ```swift
/// struct Person: Record {
///     var id: Int
///     var email: String
///     var city: String
///     var age: Int
///     var tags: [String]
///     static let byEmail = RecordIndex<Person>("byEmail", .field("email", \.email), unique: true)
///     static let byCityAge = RecordIndex<Person>("byCityAge", .field("city", \.city), .field("age", \.age))
///     static let byTag = RecordIndex<Person>("byTag", .each("tags", \.tags))
///     static let indexes = [byEmail, byCityAge, byTag]
///     …
/// }
/// let parisians = try Person.byCityAge.select(in: ctx, .all.equal("Paris").then(Comparison.lessThan(30)))
/// ```
///
/// - **Entries** are `00 enc("ix", keyspace, name, generation) ‖ enc(values…) ‖ enc(primary key…)`
///   (RecordFormat.md, "Indexes"); a covering index stores the record's value with each entry, so
///   reading through it needs no second lookup.
/// - **Unique**: a write that would give two records the same values throws
///   ``RecordError/uniqueViolation(type:index:value:)`` and has no effect. Entries with a `nil`
///   component are not checked: several records may have `nil` there, as in SQL.
/// - **Multi-valued** (``IndexComponent/each(_:_:)``): one entry per distinct element of an array
///   or set field; a record with no elements has no entry. At most one component of an index may be
///   multi-valued.
/// - **States**: an index declared on an empty keyspace is readable at once (in a read
///   transaction before any write too: its queries find nothing). One added to a
///   keyspace that already holds records is *write-only* (maintained, but queries throw
///   ``RecordError/indexNotReady(type:index:state:)``) until ``Store/prepare(_:batchSize:onBatch:)``
///   has built it. An index the type no longer declares is *disabled* at the next write (its
///   entries are no longer maintained) and cleared by the next `Store.prepare`.
/// - **Changed definitions**: a definition changed under the same name (components, unique,
///   covering) is rebuilt under a new generation, and until `Store.prepare` has built it, the
///   readable generation it replaces answers its queries, kept by every write meanwhile; the build
///   then clears it. That needs the two to share their first component, the old one's other
///   components to be single-valued, and each old component to be a key component or a field the
///   catalog describes (RecordFormat.md, "Changed definitions"); otherwise queries throw
///   `indexNotReady` until the build, as for a new index. With the same components (only unique or
///   covering changed) queries read the old entries as they are; otherwise they read the old
///   entries one group of equal shared values at a time, computing and sorting each group's new
///   entries in memory, so they take time and memory in proportion to the groups they read
///   rather than to the limit. A write whose old entries are not where its stored bytes put them
///   (a migrated record, a component that is not the field of its name) retires the old
///   generation. A unique constraint added by the change holds once the build has checked every record.
///
/// `@unchecked Sendable`: its closure captures only a `Sendable` maintainer; it is not marked
/// `@Sendable` because the generic metatypes captured there are not (yet) `Sendable`.
public struct RecordIndex<R: Record>: @unchecked Sendable {
    /// The index's name, unique within the record type; part of every entry key.
    public let name: String
    /// The indexed values, in order.
    public let components: [IndexComponent<R>]
    /// Whether two records may not share the values (entries with a `nil` component excepted).
    public let unique: Bool
    /// Whether each entry holds the record's value (reads need no second lookup; entries are larger).
    public let covering: Bool
    /// The index's kind as its definition names it (``IndexMaintainer/definedKind``): `value`
    /// unless declared with a maintainer.
    public let kind: String
    /// Whether it keeps an entry per record or a total per group (``IndexMaintainer/storage``).
    public let storage: IndexStorage
    /// Adds a record's entries: the maintainer's ``IndexMaintainer/writeEntries(of:to:)``, captured
    /// where the index is declared, so it is specialized for `R`.
    @usableFromInline let writeEntries: (R, inout IndexEntries) -> Void

    /// An index named `name` on `components`, in order.
    @inlinable
    public init(_ name: String, _ components: IndexComponent<R>..., unique: Bool = false, covering: Bool = false) {
        self.init(name, components: components, unique: unique, covering: covering)
    }

    /// An index named `name` on `components`, in order (a ``ValueIndex``).
    @inlinable
    public init(_ name: String, components: [IndexComponent<R>], unique: Bool = false, covering: Bool = false) {
        self.init(name, ValueIndex(components), unique: unique, covering: covering)
    }

    /// An index named `name` whose entries `maintainer` writes: an index of another kind than
    /// ``ValueIndex`` (register the kind in ``IndexKinds`` for the tools that read a store without
    /// its Swift types).
    @inlinable
    public init<M: IndexMaintainer>(_ name: String, _ maintainer: M, unique: Bool = false, covering: Bool = false) where M.Indexed == R {
        precondition(!name.isEmpty, "an index needs a name")
        precondition(!maintainer.components.isEmpty || M.storage == .totals, "index \(name) needs at least one component")
        precondition(M.storage == .entries || !(unique || covering), "index \(name) keeps totals: it can be neither unique nor covering")
        self.name = name
        self.components = maintainer.components
        self.unique = unique
        self.covering = covering
        self.kind = maintainer.definedKind
        self.storage = M.storage
        writeEntries = { record, entries in maintainer.writeEntries(of: record, to: &entries) }
    }

    /// The encoded values of `record`'s entries (each the components' encodings concatenated),
    /// distinct, with whether any component is `nil`.
    @usableFromInline
    func entryValues(of record: R) -> [IndexValue] {
        var entries = IndexEntries(keys: KeyWriter(capacity: 32))
        writeEntries(record, &entries)
        return entries.found.indices.map { IndexValue(bytes: Array(entries.keys.bytes[entries.found[$0].key]), isNil: entries.found[$0].isNil) }
    }

    /// The groups of `record` in an index of totals (``IndexStorage/totals``): each group's
    /// encoded values, distinct, with the amount the record adds to its sum.
    @usableFromInline
    func totalEntries(of record: R) -> [(group: [UInt8], amount: Int64)] {
        var entries = IndexEntries(keys: KeyWriter(capacity: 32))
        writeEntries(record, &entries)
        var amounts: [Int: Int64] = [:]
        for i in entries.amounts.indices { amounts[entries.amounts[i].position] = entries.amounts[i].amount }
        return entries.found.indices.map { (Array(entries.keys.bytes[entries.found[$0].key]), amounts[$0] ?? 0) }
    }

    /// The definition as the catalog stores it: kind, components (names, types, multi-valued),
    /// unique, covering. A change of any of these under the same name rebuilds the index.
    var definition: IndexDefinition {
        IndexDefinition(components: components.map { .init(name: $0.name, type: $0.typeName, multiValued: $0.isMultiValued) },
                        unique: unique, covering: covering, kind: kind)
    }
}

/// One value of an index entry: a field (or key component) of the record, or each element of a
/// collection field.
///
/// `@unchecked Sendable`: its closures capture only a `Sendable` key path and a `Bool`; they are
/// not marked `@Sendable` because generic metatypes captured there are not (yet) `Sendable`.
public struct IndexComponent<R: Record>: @unchecked Sendable {
    /// The property's name, as stored in the catalog.
    public let name: String
    /// The indexed value's Swift type (the element's, when multi-valued), as Swift prints it.
    public let typeName: String
    /// Whether each element of a collection gets an entry of its own.
    public let isMultiValued: Bool
    /// The type of the values a query gives for this component.
    let typeID: ObjectIdentifier
    /// The property indexed (the collection, when multi-valued), when declared by key path: how
    /// a predicate query recognises the component. `nil` for a computed one.
    @usableFromInline var keyPath: AnyKeyPath?
    /// Single-valued: appends the encoding of the value in `record`; returns whether it is `nil`.
    /// (Multi-valued components never call it.)
    @usableFromInline let write: (R, inout KeyWriter) -> Bool
    /// The encodings of this component's values in `record`, each with whether it is `nil`.
    @usableFromInline let encode: (R, inout [IndexValue]) -> Void
    /// The value (or, multi-valued, the element) in `record` whose encoding is `bytes`, as text.
    let describe: (R, ArraySlice<UInt8>) -> String

    @usableFromInline
    init(name: String, typeName: String, isMultiValued: Bool, typeID: ObjectIdentifier, keyPath: AnyKeyPath? = nil,
         write: @escaping (R, inout KeyWriter) -> Bool,
         encode: @escaping (R, inout [IndexValue]) -> Void, describe: @escaping (R, ArraySlice<UInt8>) -> String) {
        self.name = name
        self.typeName = typeName
        self.isMultiValued = isMultiValued
        self.typeID = typeID
        self.keyPath = keyPath
        self.write = write
        self.encode = encode
        self.describe = describe
    }

    // `field` and `each` are inlinable so that their closures are specialized for the record
    // and value types where the index is declared: a write encodes its entries without generic
    // dispatch (callgrind: an unspecialized entry cost about 1,400 instructions, most of them
    // metadata lookups and the arrays built for it).

    /// A property whose value is indexed: `.field("email", \.email)`.
    @inlinable
    public static func field<V: KeyComponent>(_ name: String, _ value: KeyPath<R, V> & Sendable) -> IndexComponent {
        var component = computed(name) { $0[keyPath: value] }
        component.keyPath = value
        return component
    }

    /// A value computed from the record, named `name` in the catalog: `.computed("length") {
    /// $0.title.count }`. The index kinds of your own (``IndexMaintainer``) declare their
    /// components with it; a ``ValueIndex`` on one is read by the tools without the Swift type
    /// only when `name` is also a stored field holding the same value. `value` may be called on
    /// any thread: it must read the record and nothing else.
    @inlinable
    public static func computed<V: KeyComponent>(_ name: String, _ value: @escaping (R) -> V) -> IndexComponent {
        let optional = V.self is any OptionalIndexValue.Type
        let write: (R, inout KeyWriter) -> Bool = { record, writer in
            let v = value(record)
            writer.append(v)
            return optional && (v as? any OptionalIndexValue)?.isNil == true
        }
        return IndexComponent(
            name: name, typeName: "\(V.self)", isMultiValued: false, typeID: ObjectIdentifier(V.self), write: write,
            encode: { record, values in
                var writer = KeyWriter(capacity: 16)
                let isNil = write(record, &writer)
                values.append(IndexValue(bytes: writer.bytes, isNil: isNil))
            },
            describe: { record, _ in describeValue(value(record)) })
    }

    /// A collection property each of whose distinct elements gets an entry: `.each("tags", \.tags)`.
    @inlinable
    public static func each<C: Sequence>(_ name: String, _ values: KeyPath<R, C> & Sendable) -> IndexComponent where C.Element: KeyComponent {
        let optional = C.Element.self is any OptionalIndexValue.Type
        return IndexComponent(
            name: name, typeName: "\(C.Element.self)", isMultiValued: true, typeID: ObjectIdentifier(C.Element.self), keyPath: values,
            write: { _, _ in preconditionFailure("a multi-valued component has no single value") },
            encode: { record, out in
                for element in record[keyPath: values] {
                    var writer = KeyWriter(capacity: 16)
                    writer.append(element)
                    out.append(IndexValue(bytes: writer.bytes, isNil: optional && (element as? any OptionalIndexValue)?.isNil == true))
                }
            },
            describe: { record, bytes in
                for element in record[keyPath: values] {
                    var writer = KeyWriter(capacity: 16)
                    writer.append(element)
                    if writer.bytes[...] == bytes { return describeValue(element) }
                }
                return "?"
            })
    }
}

/// One encoded component value of an index entry.
@usableFromInline
struct IndexValue: Hashable {
    @usableFromInline var bytes: [UInt8]
    @usableFromInline var isNil: Bool
    @inlinable init(bytes: [UInt8], isNil: Bool) {
        self.bytes = bytes
        self.isNil = isNil
    }
}

/// Optionals, so an index can tell a `nil` component (exempt from uniqueness).
@usableFromInline
protocol OptionalIndexValue {
    var isNil: Bool { get }
}

extension Optional: OptionalIndexValue {
    @usableFromInline var isNil: Bool { self == nil }
}

@usableFromInline
func describeValue<V>(_ value: V) -> String {
    if let string = value as? String { return "\"\(string)\"" }
    if let optional = value as? any OptionalIndexValue, optional.isNil { return "nil" }
    return "\(value)"
}

/// An index's definition as the catalog stores it (RecordFormat.md, "Indexes").
struct IndexDefinition: Equatable, Sendable {
    struct Component: Equatable, Sendable {
        var name: String
        var type: String
        var multiValued: Bool
    }
    var components: [Component]
    var unique: Bool
    var covering: Bool
    /// The index's kind (``IndexMaintainer/kind``).
    var kind: String = IndexKinds.value

    /// `email: String` or `each tags: String`, for messages.
    var layout: String {
        components.map { "\($0.multiValued ? "each " : "")\($0.name): \($0.type)" }.joined(separator: ", ")
    }
}
