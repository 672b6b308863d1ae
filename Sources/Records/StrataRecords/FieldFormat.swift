/// How a field's value is laid out in the stored bytes, named by a descriptor such as `i64`,
/// `string`, `optional(array(string))` or `json` (RecordFormat.md lists them all).
///
/// A field's format is fixed by its declaration, never by which conformances a type happens to
/// have: the built-in ``FieldValue`` types have binary formats, and a record stores a value as JSON
/// or through a ``FieldCodec`` only when it says so for that field (`@Field(.json)`,
/// `@Field(codec:)`). The catalog stores each field's descriptor, so tools can decode records
/// without the Swift type, and the default schema version is derived from the descriptors, so
/// respelling a type (`[String]`, `Array<String>`, a typealias) never changes it.
public struct FieldFormat: Sendable, Hashable, CustomStringConvertible {
    /// The descriptor stored in the catalog.
    public let descriptor: String

    /// A format named `descriptor`; for your own ``FieldValue`` or ``FieldCodec`` types, prefer a
    /// name of your own that stays put when the Swift type is renamed.
    public init(_ descriptor: String) { self.descriptor = descriptor }

    public var description: String { descriptor }

    /// `Codable` values as length-prefixed JSON: `@Field(.json)`.
    public static let json = FieldFormat("json")

    /// The format of a ``FieldValue`` type (the macro's generated `recordType` calls this).
    @inlinable
    public static func of<V: FieldValue>(_: V.Type) -> FieldFormat { V.fieldFormat }

    /// Explains the one way a `Codable` type that is not a ``FieldValue`` can be a field.
    @available(*, unavailable, message: "this type is not a FieldValue: store the field as JSON with @Field(.json), through a FieldCodec with @Field(codec:), or conform the type to FieldValue")
    @_disfavoredOverload
    public static func of<V: Codable>(_: V.Type) -> FieldFormat { fatalError() }

    /// A value of a format inside another (`optional(…)`, `array(…)`, …).
    @inlinable
    public static func wrapping(_ name: String, _ inner: FieldFormat...) -> FieldFormat {
        FieldFormat("\(name)(" + inner.map(\.descriptor).joined(separator: ",") + ")")
    }
}

/// A field stored in a format the record chooses explicitly: `@Field(codec: Celsius.self)`.
///
/// Use it for a type whose stored form you want to control (or for a type you do not own).
/// `encode` may throw: the record is then refused with ``RecordError/unencodableField(type:detail:)``
/// and nothing is written.
public protocol FieldCodec {
    /// The type of the fields the codec stores.
    associatedtype Value
    /// The format's name in the catalog. The default is `codec(TypeName)`. Give a built-in
    /// format's name (`i64`, `string`, …) only when the bytes are that format's bytes for the
    /// same value: tools and predicate filters read such a field as that format.
    static var format: FieldFormat { get }
    /// Appends `value`'s bytes to `fields`. Throwing refuses the whole record
    /// (``RecordError/unencodableField(type:detail:)``): nothing is written.
    static func encode(_ value: Value, to fields: inout FieldWriter) throws
    /// Reads one value written by ``FieldCodec/encode(_:to:)``, leaving `fields` after its last byte.
    ///
    /// - Throws: ``FieldDecodingError`` for bytes that are not such a value (reading the record then
    ///   throws ``RecordError/corruptRecord(type:detail:)``); never trap on them.
    static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Value
}

extension FieldCodec {
    public static var format: FieldFormat { FieldFormat("codec(\(Self.self))") }
}

/// The argument of `@Field(_:)`: how to store a field that is not a built-in ``FieldValue``.
public enum FieldStorage: Sendable {
    /// As JSON, through `Codable` (RecordFormat.md, `json`).
    case json
}
