@_exported import StrataRecords

/// Makes a struct a `Record`: the named properties, in the order given, are the index
/// key; every other stored property is a field.
///
/// ```swift
/// @IndexKeyRecord("lastName", "firstName")
/// struct Person {
///     let lastName: String
///     let firstName: String
///     let age: Int
/// }
/// let people = try Person.select(in: ctx, lastName: "Dallas", firstName: .lessThan("L"))
/// ```
///
/// Generated: the `Record` conformance (key and field serialization, an initializer that reads
/// them), `recordType`, the key type `IndexKey` and the record's `indexKey`; for every prefix of
/// the key `select(in:limit:order:…)` and `count(in:…)` with plain values for the leading
/// components and a `Comparison` or a plain value for the last, and `delete(in:…)` with
/// plain values; `fetch(in:…)` and `exists(in:…)` with the whole key; `query(…)` with the shapes of
/// `select`, a `Query` to page, stream or walk with a cursor. Any other query shape does
/// not compile, and says why: a comparison before the last component, or in `delete`, `fetch` or
/// `exists`, is "only the last key component of a select or count may be a comparison…"; a skipped
/// component is a missing argument naming it.
///
/// Without `order:`, a query whose last component is `lessThan` or `lessThanOrEqual` returns the
/// nearest records first (descending, as Empire does); every other query ascends.
///
/// - Stored properties need a type annotation. `static` and computed properties are ignored.
///   A `let` with an initial value is left out of the record (it cannot be set when reading);
///   a `var` with a default value is stored.
/// - `keyspace`: the records' keyspace; default the type's name. Give it to rename the type
///   without losing its data.
/// - Fields are stored in the binary format of their `FieldValue` type. A field of
///   another `Codable` type says how it is stored: `@Field(.json)`, or `@Field(codec:)` with a
///   `FieldCodec`. A field's format never depends on which conformances its type has.
/// - `sendable: true` adds `Sendable` to the record and its `IndexKey` (for a public type; an
///   internal one is `Sendable` by inference when its properties are).
/// - `version`: the schema version stored with each value. Default: derived at run time from the
///   key names and types and the field names, order and formats (RecordFormat.md), so neither
///   formatting nor respelling a type (`[String]`, `Array<String>`, a typealias) changes it. A
///   record of another version is handed to `static func migrate(fromVersion:key:fields:)` if the
///   type declares one.
@attached(
    extension, conformances: Record, Sendable,
    names: named(recordType), named(writeKey), named(writeFields), named(init), named(select), named(count), named(delete),
    named(IndexKey), named(indexKey), named(fetch), named(exists), named(query), named(indexes), arbitrary
)
public macro IndexKeyRecord(_ key: String..., keyspace: String? = nil, version: UInt32? = nil, sendable: Bool = false) =
    #externalMacro(module: "StrataMacrosPlugin", type: "IndexKeyRecordMacro")

/// Stores a record field in the format given instead of its type's binary `FieldValue`
/// format: `@Field(.json)` for a `Codable` value as JSON. Only inside an `@IndexKeyRecord` struct.
///
/// ```swift
/// @IndexKeyRecord("id")
/// struct Event {
///     let id: Int
///     @Field(.json) var payload: Payload   // Payload: Codable
/// }
/// ```
@attached(peer)
public macro Field(_ storage: FieldStorage) = #externalMacro(module: "StrataMacrosPlugin", type: "FieldMacro")

/// Stores a record field through `codec`, a `FieldCodec` whose `Value` is the field's type.
@attached(peer)
public macro Field<C: FieldCodec>(codec: C.Type) = #externalMacro(module: "StrataMacrosPlugin", type: "FieldMacro")

/// Declares a secondary index of an `@IndexKeyRecord` struct: its name, then the properties it
/// indexes, in order. A property that is an array or set (`[T]`, `Set<T>`) gets one entry per
/// element. `unique: true` refuses two records with the same values (`RecordError.uniqueViolation(type:index:value:)`;
/// `nil` values are exempt); `covering: true` stores the record in each entry.
///
/// ```swift
/// @IndexKeyRecord("id")
/// @Index("byEmail", "email", unique: true)
/// @Index("byCityAge", "city", "age")
/// @Index("byTag", "tags")
/// struct Member {
///     let id: Int
///     var email: String
///     var city: String
///     var age: Int
///     var tags: [String]
/// }
/// try Member.byCityAge.select(in: ctx, city: "Paris", age: .lessThan(30))
/// try Member.byEmail.fetch(in: ctx, email: "korben@taxi.nyc")
/// ```
///
/// The macro adds a static property named after the index, whose `select`, `count` and (unique
/// indexes) `fetch` take the index's components with the key's rules, and `indexes`, the list
/// `Record.indexes` the record layer maintains. See `RecordIndex`.
///
/// With `aggregate:`, the index keeps a total per group of the properties' values instead of an
/// entry per record (`AggregateIndex`): `.count`, or `.sum("amount")` of a signed integer
/// property; no property makes one total of every record. Its static property reads them:
/// `total(in:` the group's values`)` (one read), `total(in:_:)` for a query, `totals(in:)`.
///
/// ```swift
/// @IndexKeyRecord("id")
/// @Index("perCustomer", "customer", aggregate: .sum("amount"))
/// @Index("orders", aggregate: .count)
/// struct Order {
///     let id: Int
///     var customer: Int
///     var amount: Int
/// }
/// let seven = try Order.perCustomer.total(in: ctx, customer: 7)   // count and sum
/// ```
@attached(peer)
public macro Index(_ name: String, _ properties: String..., unique: Bool = false, covering: Bool = false, aggregate: IndexAggregate? = nil) =
    #externalMacro(module: "StrataMacrosPlugin", type: "IndexMacro")

/// What an `@Index(…, aggregate:)` keeps per group (`AggregateIndex`).
public enum IndexAggregate: Sendable {
    /// How many records each group has.
    case count
    /// How many records each group has, and the sum of the named signed integer property over them.
    case sum(String)
}
