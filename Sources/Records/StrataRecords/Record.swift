import StrataKeyCodec
import StrataSchemaHash

/// A record: an index key (one or more components, by which it is stored and found) and fields.
///
/// The `@IndexKeyRecord` macro writes this conformance. By hand it looks like this:
///
/// ```swift
/// struct Person: Record {
///     var lastName: String
///     var firstName: String
///     var age: Int
///
///     static let recordType = RecordType(
///         keyspace: "Person",
///         key: [("lastName", String.self), ("firstName", String.self)],
///         fields: [("age", Int.fieldFormat)])
///
///     func writeKey(to key: inout KeyWriter) {
///         key.append(lastName)
///         key.append(firstName)
///     }
///     func writeFields(to fields: inout FieldWriter) { fields.write(age) }
///
///     init(key: inout KeyReader, fields: inout FieldReader) throws {
///         lastName = try key.read()
///         firstName = try key.read()
///         age = try fields.read()
///     }
/// }
/// ```
///
/// Keys are read in the order they are written; so are fields. A hand-written record gets the
/// same queries as a generated one through ``RecordQuery``, checked at run time against
/// ``RecordType/key``.
public protocol Record {
    /// The record's complete key as a value. The macro generates one with a property per key
    /// component (`Person.IndexKey(lastName:firstName:)`); a hand-written record gets
    /// ``EncodedIndexKey`` unless it declares its own.
    associatedtype IndexKey: RecordKey = EncodedIndexKey

    /// The record type's identity: keyspace, version and key layout.
    static var recordType: RecordType { get }

    /// This record's key.
    var indexKey: IndexKey { get }

    /// Writes the key components, in key order.
    func writeKey(to key: inout KeyWriter)

    /// Writes the fields (everything that is not key).
    func writeFields(to fields: inout FieldWriter)

    /// Reads a record written under the current ``RecordType/version``.
    init(key: inout KeyReader, fields: inout FieldReader) throws

    /// Converts a record written under an older (or newer) version, or returns `nil` when it
    /// cannot; reading then throws ``RecordError/versionMismatch(type:stored:current:)``.
    /// The default returns `nil`. Recognise an older type's records with
    /// `Old.recordType.isVersion(version)`: it also knows the number a format-1 store used.
    static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> Self?

    /// The type's secondary indexes (``RecordIndex``), kept in step with every write. The
    /// default is none. Declare them as `static let` values so they are built once.
    static var indexes: [RecordIndex<Self>] { get }

    /// The stored properties by name (key components and fields): what a predicate query
    /// (``Query/init(where:sortedBy:)``) reads a key path as, to seek the key instead of scanning.
    /// The macro writes it; the default is none, and predicate queries on the type then read
    /// every record (and indexes by their components' own key paths).
    ///
    /// A name here is a promise: the key component or field of that name stores this property's
    /// value in its type's own format, so a filter may compare the stored bytes instead of
    /// decoding the record (a field in a format the catalog describes: see ``FieldFormat``).
    static var storedKeyPaths: [String: PartialKeyPath<Self>] { get }
}

/// A record's complete key: the components, written in key order.
public protocol RecordKey {
    /// Appends the key's components to `key`, in key order and the key encoding (KeyEncoding.md),
    /// without the keyspace.
    func writeKey(to key: inout KeyWriter)
}

/// The key of a record type that declares no key type of its own: its encoded components.
public struct EncodedIndexKey: RecordKey, Hashable, Sendable {
    /// The components in the key encoding (KeyEncoding.md), without the keyspace.
    public let bytes: [UInt8]
    /// A key from its encoded components (`KeyCodec.encode("Dallas", "Korben")`); they are not
    /// checked against a record type's key layout here.
    public init(bytes: [UInt8]) { self.bytes = bytes }
    /// Appends ``bytes`` as they are.
    public func writeKey(to key: inout KeyWriter) { key.write(contentsOf: bytes) }
}

extension Record where IndexKey == EncodedIndexKey {
    /// The components ``Record/writeKey(to:)`` writes, as an ``EncodedIndexKey``.
    public var indexKey: EncodedIndexKey {
        var writer = KeyWriter()
        writeKey(to: &writer)
        return EncodedIndexKey(bytes: writer.bytes)
    }
}

extension Record {
    public static var indexes: [RecordIndex<Self>] { [] }

    public static var storedKeyPaths: [String: PartialKeyPath<Self>] { [:] }

    public static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> Self? { nil }
}

/// A record type's identity: keyspace, key layout, fields and schema version.
public struct RecordType: Sendable {
    /// One key component: its property name and type.
    public struct KeyComponentInfo: Sendable {
        /// The key component's property name, as the catalog stores it.
        public let name: String
        /// The Swift type's name as Swift prints it at run time (`String`, `Optional<Int>`).
        public let typeName: String
        @usableFromInline let typeID: ObjectIdentifier
    }

    /// One field: its property name and stored format.
    public struct FieldInfo: Sendable, Hashable {
        /// The field's property name.
        public let name: String
        /// The field's stored format.
        public let format: FieldFormat
        /// A field named `name`, stored in `format`.
        public init(name: String, format: FieldFormat) {
            self.name = name
            self.format = format
        }
    }

    /// The keyspace the records live in: every key starts with this name. Stable across builds;
    /// give it explicitly to rename the Swift type without losing its data.
    public let keyspace: String
    /// The schema version stored with every value. Given explicitly, or derived from the key
    /// components' names and types and the fields' names, order and formats (RecordFormat.md), so
    /// a change of fields changes it and a respelling of types does not.
    public let version: UInt32
    /// Whether ``version`` was given, rather than derived from the key and fields. A given version
    /// is a promise that the bytes changed whenever it did (a change inside a JSON field changes
    /// no field's format): values of every other version go to
    /// ``Record/migrate(fromVersion:key:fields:)``, even when the catalog lists the same fields.
    public let versionIsExplicit: Bool
    /// The number format-1 Strata derived for the same declaration from its type names as spelled:
    /// records a format-1 store holds under it read as ``version`` (see ``isVersion(_:)``).
    public let formatOneVersion: UInt32?
    /// The key components, in key order.
    public let key: [KeyComponentInfo]
    /// The fields in stored order, or `nil` when the type does not describe them (a hand-written
    /// record using ``init(keyspace:version:key:)``): the catalog then says so.
    public let fields: [FieldInfo]?

    /// A record type whose fields are not described to the catalog; the version is explicit.
    public init(keyspace: String, version: UInt32, key: [(name: String, type: any KeyComponent.Type)]) {
        self.init(keyspace: keyspace, version: version, key: key, describedFields: nil, formatOneVersion: nil)
    }

    /// A record type with described fields: the catalog stores their formats, and without an
    /// explicit `version` it is derived from them. `formatOneVersion` is for the macro only.
    public init(keyspace: String, version: UInt32? = nil, key: [(name: String, type: any KeyComponent.Type)],
                fields: [(name: String, format: FieldFormat)], formatOneVersion: UInt32? = nil) {
        self.init(keyspace: keyspace, version: version, key: key,
                  describedFields: fields.map { FieldInfo(name: $0.name, format: $0.format) }, formatOneVersion: formatOneVersion)
    }

    private init(keyspace: String, version: UInt32?, key: [(name: String, type: any KeyComponent.Type)],
                 describedFields: [FieldInfo]?, formatOneVersion: UInt32?) {
        precondition(!key.isEmpty, "a record type needs at least one key component")
        self.keyspace = keyspace
        self.key = key.map { KeyComponentInfo(name: $0.name, typeName: "\($0.type)", typeID: ObjectIdentifier($0.type)) }
        self.fields = describedFields
        self.version = version ?? Self.derivedVersion(key: self.key.map { ($0.name, $0.typeName) }, fields: describedFields ?? [])
        versionIsExplicit = version != nil
        // Only a derived version had a format-1 twin: an explicit one was stored as itself.
        self.formatOneVersion = version == nil ? formatOneVersion : nil
    }

    /// Whether values stored under `storedVersion` have this type's current layout: its
    /// ``version``, or the format-1 number of the same declaration. Use it in
    /// ``Record/migrate(fromVersion:key:fields:)`` to recognise an older type's records.
    @inlinable
    public func isVersion(_ storedVersion: UInt32) -> Bool {
        storedVersion == version || storedVersion == formatOneVersion
    }

    /// The key layout as text, for messages: `lastName: String, firstName: String`.
    public var keyLayout: String { key.map { "\($0.name): \($0.typeName)" }.joined(separator: ", ") }

    /// The default schema version (RecordFormat.md, "Schema versions"): FNV-1a 64 over
    /// `2;key:name:Type,…;fields:name:format,…`, folded to 32 bits; 0 becomes 1.
    public static func derivedVersion(key: [(name: String, typeName: String)], fields: [FieldInfo]) -> UInt32 {
        SchemaHash.version(of: "2;key:" + key.map { "\($0.name):\($0.typeName)" }.joined(separator: ",")
            + ";fields:" + fields.map { "\($0.name):\($0.format.descriptor)" }.joined(separator: ","))
    }
}
