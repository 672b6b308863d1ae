import StrataKeyCodec

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
///         keyspace: "Person", version: 1,
///         key: [("lastName", String.self), ("firstName", String.self)])
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
    /// The record type's identity: keyspace, version and key layout.
    static var recordType: RecordType { get }

    /// Writes the key components, in key order.
    func writeKey(to key: inout KeyWriter)

    /// Writes the fields (everything that is not key).
    func writeFields(to fields: inout FieldWriter)

    /// Reads a record written under the current ``RecordType/version``.
    init(key: inout KeyReader, fields: inout FieldReader) throws

    /// Converts a record written under an older (or newer) version, or returns `nil` when it
    /// cannot; reading then throws ``RecordError/versionMismatch(type:stored:current:)``.
    /// The default returns `nil`.
    static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> Self?
}

extension Record {
    public static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> Self? { nil }
}

/// A record type's identity and key layout.
public struct RecordType: Sendable {
    /// One key component: its property name and type.
    public struct KeyComponentInfo: Sendable {
        public let name: String
        public let typeName: String
        @usableFromInline let typeID: ObjectIdentifier
    }

    /// The keyspace the records live in: every key starts with this name. Stable across builds;
    /// give it explicitly to rename the Swift type without losing its data.
    public let keyspace: String
    /// The schema version stored with every value (a change of fields changes it).
    public let version: UInt32
    /// The key components, in key order.
    public let key: [KeyComponentInfo]

    public init(keyspace: String, version: UInt32, key: [(name: String, type: any KeyComponent.Type)]) {
        precondition(!key.isEmpty, "a record type needs at least one key component")
        self.keyspace = keyspace
        self.version = version
        self.key = key.map { KeyComponentInfo(name: $0.name, typeName: "\($0.type)", typeID: ObjectIdentifier($0.type)) }
    }

    /// The key layout as text, stored in the catalog: `lastName: String, firstName: String`.
    public var keyLayout: String { key.map { "\($0.name): \($0.typeName)" }.joined(separator: ", ") }
}
