import Foundation
@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec

/// A plain `Codable` type stored as a record, keyed by its `id`: no macro and no members to
/// write.
///
/// ```swift
/// struct Book: CodableRecord {
///     var id: UUID
///     var title: String
///     var authors: [String]
/// }
///
/// try store.withTransaction { ctx in
///     try ctx.insert(Book(id: id, title: "Dune", authors: ["Frank Herbert"]))
///     let book = try Book.fetch(in: ctx, id: id)
/// }
/// ```
///
/// The key is `id` (any `KeyComponent`: `Int`, `String`, `UUID`, …), so records sort by it and
/// ``fetch(in:id:)``, ``select(in:limit:order:id:)`` and the other typed queries take it. The
/// value is the whole `Codable` encoding, in Strata's compact binary form by default
/// (RecordFormat.md, "Codable values"): self-describing like JSON, so adding or removing an
/// optional property needs no new version; the top-level `id` is not stored twice. Choose JSON
/// or a property list instead with ``valueFormat``.
///
/// Indexes are ``RecordIndex`` values over key paths, declared in ``Record/indexes``. A change
/// that old values cannot decode as (a property renamed, a type changed) needs a new
/// ``schemaVersion`` and ``Record/migrate(fromVersion:key:fields:)`` (Modeling data, "Versions").
public protocol CodableRecord: Record, Codable, Identifiable where ID: KeyComponent & Sendable, IndexKey == RecordID<ID> {
    /// The keyspace the records live in. The default is the type's name; give one explicitly to
    /// rename the type without losing its records.
    static var keyspace: String { get }
    /// How values are stored. The default is ``CodableValueFormat/binary``. Part of the schema:
    /// changing it changes the derived version.
    static var valueFormat: CodableValueFormat { get }
    /// An explicit schema version, or `nil` (the default) for one derived from the key's type and
    /// ``valueFormat``. Bump it when old values no longer decode as the type, and convert them in
    /// ``migrations``.
    static var schemaVersion: UInt32? { get }
    /// How values of older versions are read: each names the version it reads (an older record
    /// type's, or a number) and converts such a value to this type. Values of any other version
    /// are ``RecordError/versionMismatch(type:stored:current:)``. The default is none.
    static var migrations: [CodableMigration<Self>] { get }
}

/// How a ``CodableRecord`` reads the values one older version stored: decoded as the type that
/// wrote them, then converted. Conversions run at read time (and once for every record, through
/// `store.prepare(_:)`). Declare ``CodableRecord/migrations`` as a computed property: a migration
/// holds closures, so it is not `Sendable`.
///
/// ```swift
/// struct BookV1: CodableRecord { var id: UUID; var title: String; var author: String
///     static var keyspace: String { "Book" } }
///
/// struct Book: CodableRecord {
///     var id: UUID; var title: String; var authors: [String]
///     static var keyspace: String { "Book" }
///     static var schemaVersion: UInt32? { 2 }
///     static var migrations: [CodableMigration<Book>] {
///         [.from(BookV1.self) { Book(id: $0.id, title: $0.title, authors: [$0.author]) }]
///     }
/// }
/// ```
public struct CodableMigration<R: CodableRecord> {
    /// The stored schema version this migration reads.
    public let version: UInt32
    let convert: (_ key: inout KeyReader, _ fields: inout FieldReader) throws -> R

    /// Values an older record type wrote, under its version (derived or explicit), read as `Old`
    /// and converted by `convert`.
    public static func from<Old: CodableRecord>(_: Old.Type, _ convert: @escaping (Old) throws -> R) -> CodableMigration {
        CodableMigration(version: Old.recordType.version) { key, fields in try convert(try Old(key: &key, fields: &fields)) }
    }

    /// Values stored under schema version `version` in `format`, decoded as `Old` (which need not
    /// be a record: its top-level `id` is the key's) and converted by `convert`.
    public static func from<Old: Decodable>(version: UInt32, as _: Old.Type, format: CodableValueFormat = .binary,
                                            _ convert: @escaping (Old) throws -> R) -> CodableMigration {
        CodableMigration(version: version) { key, fields in
            let id = try key.read(R.ID.self)
            return try convert(try CodableValues.decode(Old.self, format: format, id: id, fields: &fields))
        }
    }
}

/// How a ``CodableRecord`` stores its values.
public enum CodableValueFormat: Sendable, Hashable {
    /// Strata's compact binary form (RecordFormat.md, "Codable values"): names once per value,
    /// integers as varints. The fastest and smallest.
    case binary
    /// `JSONEncoder`'s output, `id` included: readable by any JSON tool.
    case json
    /// A binary property list (`PropertyListEncoder`), `id` included.
    case propertyList

    /// The format's descriptor in the catalog.
    public var fieldFormat: FieldFormat {
        switch self {
        case .binary: return FieldFormat("codable(binary)")
        case .json: return FieldFormat("codable(json)")
        case .propertyList: return FieldFormat("codable(plist)")
        }
    }
}

/// The key of a ``CodableRecord``: its `id`.
public struct RecordID<ID: KeyComponent & Hashable & Sendable>: RecordKey, Hashable, Sendable {
    /// The record's `id`.
    public let id: ID
    /// The key of the record whose `id` is `id`.
    public init(_ id: ID) { self.id = id }
    /// Appends `id` in the key encoding.
    public func writeKey(to key: inout KeyWriter) { key.append(id) }
}

extension CodableRecord {
    public static var keyspace: String { "\(Self.self)" }
    public static var valueFormat: CodableValueFormat { .binary }
    public static var schemaVersion: UInt32? { nil }
    public static var migrations: [CodableMigration<Self>] { [] }

    /// Reads a value of an older version through the migration for `version` in ``migrations``,
    /// or returns `nil` when there is none.
    public static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> Self? {
        guard let migration = migrations.first(where: { $0.version == version }) else { return nil }
        return try migration.convert(&key, &fields)
    }

    /// The record type: ``keyspace``, one key component `id`, one field `value` in
    /// ``valueFormat``, and ``schemaVersion`` or a derived version. Built once per type.
    public static var recordType: RecordType { CodableRecordTypes.recordType(of: Self.self) }

    /// The key: ``RecordID`` of `id`.
    public var indexKey: RecordID<ID> { RecordID(id) }

    /// Appends `id`.
    public func writeKey(to key: inout KeyWriter) { key.append(id) }

    /// Encodes the value in ``valueFormat``. A value the encoder refuses (a `Double.nan` in JSON,
    /// an `encode(to:)` that throws) makes the insert throw ``RecordError/unencodableField(type:detail:)``.
    public func writeFields(to fields: inout FieldWriter) {
        do {
            switch Self.valueFormat {
            case .binary:
                let id = self.id
                try CodableValueEncoder.encode(self, isRecordID: { ($0 as? ID) == id }, to: &fields.bytes)
            case .json:
                fields.bytes += try JSONEncoder().encode(self)
            case .propertyList:
                let encoder = PropertyListEncoder()
                encoder.outputFormat = .binary
                fields.bytes += try encoder.encode(self)
            }
        } catch {
            if fields.encodingFailure == nil { fields.encodingFailure = "cannot encode \(Self.self): \(CodableErrors.describe(error))" }
        }
    }

    /// Decodes a value written by ``writeFields(to:)``; bytes that do not decode as `Self` throw
    /// ``FieldDecodingError`` (reading the record then throws ``RecordError/corruptRecord(type:detail:)``).
    public init(key: inout KeyReader, fields: inout FieldReader) throws {
        let id = try key.read(ID.self)
        let start = fields.offset
        self = try CodableValues.decode(Self.self, format: Self.valueFormat, id: id, fields: &fields)
        guard self.id == id else {
            throw FieldDecodingError(offset: start, reason: "the value's id \(self.id) is not its key's (\(id))")
        }
    }
}

/// Decoding a stored `Codable` value in any of the formats.
enum CodableValues {
    /// Decodes the rest of `fields` as a `T` stored in `format`; `id` is what the binary form's
    /// reference to the key decodes as. A value that does not decode throws ``FieldDecodingError``.
    static func decode<T: Decodable>(_: T.Type, format: CodableValueFormat, id: Any, fields: inout FieldReader) throws -> T {
        let start = fields.offset
        let value = UnsafeRawBufferPointer(rebasing: fields.bytes[start...])
        fields.offset = fields.bytes.count
        do {
            switch format {
            case .binary: return try CodableValueDecoder.decode(T.self, from: value, recordID: id)
            case .json: return try JSONDecoder().decode(T.self, from: Data(value))
            case .propertyList: return try PropertyListDecoder().decode(T.self, from: Data(value))
            }
        } catch {
            throw FieldDecodingError(offset: start, reason: "cannot decode \(T.self): \(CodableErrors.describe(error))")
        }
    }
}

// MARK: Typed queries by id

extension CodableRecord {
    /// The record whose `id` is `id`, or `nil`.
    public static func fetch(in ctx: TransactionContext, id: ID) throws -> Self? { try ctx.fetch(Self.self, key: RecordID(id)) }

    /// Whether a record with this `id` exists (without decoding it).
    public static func exists(in ctx: TransactionContext, id: ID) throws -> Bool { try ctx.exists(Self.self, key: RecordID(id)) }

    /// Deletes the record with this `id`; returns whether there was one.
    @discardableResult
    public static func delete(in ctx: TransactionContext, id: ID) throws -> Bool { try ctx.delete(Self.self, key: RecordID(id)) }

    /// Deletes the record with this `id` and returns it, or `nil` when there was none.
    @discardableResult
    public static func remove(in ctx: TransactionContext, id: ID) throws -> Self? { try ctx.remove(Self.self, key: RecordID(id)) }

    /// The records whose `id` matches `id` (`.greaterThan(10)`, `.range("a"..<"m")`, `.oneOf(…)`), in
    /// `id` order (nearest first for `lessThan`; see ``Order``), at most `limit`.
    public static func select(in ctx: TransactionContext, limit: Int? = nil, order: Order? = nil, id: Comparison<ID>) throws -> [Self] {
        try ctx.select(Self.self, RecordQuery.all.then(id), limit: limit, order: order)
    }

    /// How many records' `id` matches `id`.
    public static func count(in ctx: TransactionContext, id: Comparison<ID>) throws -> Int {
        try ctx.count(Self.self, RecordQuery.all.then(id))
    }

    /// The records whose `id` matches, as a ``Query`` (pages, cursors, streams, observation).
    public static func query(id: Comparison<ID>) -> Query<Self> { Query(RecordQuery.all.then(id)) }
}

/// Each ``CodableRecord`` type's ``RecordType``, built on first use: a protocol extension cannot
/// keep a stored property per type.
enum CodableRecordTypes {
    private static let built = Locked<[ObjectIdentifier: RecordType]>([:])

    static func recordType<R: CodableRecord>(of _: R.Type) -> RecordType {
        let id = ObjectIdentifier(R.self)
        if let type = built.withLock({ $0[id] }) { return type }
        let type = RecordType(keyspace: R.keyspace, version: R.schemaVersion, key: [("id", R.ID.self)],
                              fields: [("value", R.valueFormat.fieldFormat)])
        built.withLock { $0[id] = type }
        return type
    }
}

/// `EncodingError` and `DecodingError` as one line: what, and where in the value.
enum CodableErrors {
    static func describe(_ error: any Error) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.isEmpty ? "the value" : keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error {
        case DecodingError.keyNotFound(let key, let context): return "\(path(context.codingPath + [key])): missing"
        case DecodingError.valueNotFound(_, let context), DecodingError.typeMismatch(_, let context),
             DecodingError.dataCorrupted(let context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        case EncodingError.invalidValue(_, let context): return "\(path(context.codingPath)): \(context.debugDescription)"
        default: return "\(error)"
        }
    }
}
