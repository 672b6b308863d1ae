import Foundation

// Strata's binary form of a `Codable` value (RecordFormat.md, "Codable values"): the coding keys'
// names once, in a table, then the value as tagged items. Self-describing, like JSON, so a type
// may add and drop optional properties without a new version, and a tool can print a record
// without its Swift type; a name is written once per value however many times it is used.
//
//     value    := varint(name count) (varint(byte count) UTF-8)*  item
//     item     := 0x00                              nil
//               | 0x01 | 0x02                       false, true
//               | 0x03 zigzag-varint                a signed integer
//               | 0x04 varint                       an unsigned integer
//               | 0x05 8 bytes | 0x06 4 bytes       a Double, a Float (IEEE 754, little-endian)
//               | 0x07 varint(byte count) UTF-8     a string
//               | 0x08 varint(byte count) bytes     Data
//               | 0x09 varint(byte count) (varint(name index) item)*     a keyed container
//               | 0x0A varint(item count) varint(byte count) item*       an unkeyed container
//               | 0x0B                              the record's key (the top-level `id`)

/// The first byte of each item of the binary Codable format.
enum CodableTag {
    static let null: UInt8 = 0x00
    static let `false`: UInt8 = 0x01
    static let `true`: UInt8 = 0x02
    static let signed: UInt8 = 0x03
    static let unsigned: UInt8 = 0x04
    static let double: UInt8 = 0x05
    static let float: UInt8 = 0x06
    static let string: UInt8 = 0x07
    static let bytes: UInt8 = 0x08
    static let keyed: UInt8 = 0x09
    static let unkeyed: UInt8 = 0x0A
    static let recordKey: UInt8 = 0x0B

    /// The tag's meaning, for messages.
    static func name(_ tag: UInt8) -> String {
        switch tag {
        case null: return "nil"
        case `false`, `true`: return "a Bool"
        case signed, unsigned: return "an integer"
        case double, float: return "a floating-point number"
        case string: return "a string"
        case bytes: return "Data"
        case keyed: return "a keyed container"
        case unkeyed: return "an unkeyed container"
        case recordKey: return "the record's key"
        default: return "tag \(tag)"
        }
    }
}

/// Encodes `Encodable` values in the binary Codable format.
enum CodableValueEncoder {
    /// Appends `value`'s encoding to `bytes`. A top-level `id` equal to the record's (as
    /// `isRecordID` says) is written as a reference to the key, which holds it already.
    static func encode<T: Encodable>(_ value: T, isRecordID: ((Any) -> Bool)?, to bytes: inout [UInt8]) throws {
        let session = EncodingSession(isRecordID: isRecordID)
        let root = EncodingNode()
        try value.encode(to: BinaryEncoder(session: session, node: root, codingPath: [], isTopLevel: true))
        var item: [UInt8] = []
        root.write(to: &item)
        bytes.appendVarint(UInt64(session.names.count))
        for name in session.names { bytes.appendCounted(name.utf8) }
        bytes.append(contentsOf: item)
    }
}

/// The names a value's coding keys use, each numbered once.
// The classes below belong to one encode, on one thread: their fields skip exclusivity checks.
final class EncodingSession {
    @exclusivity(unchecked) private(set) var names: [String] = []
    /// Filled once there are more names than a linear search should walk.
    @exclusivity(unchecked) private var numbers: [String: Int] = [:]
    let isRecordID: ((Any) -> Bool)?

    init(isRecordID: ((Any) -> Bool)?) { self.isRecordID = isRecordID }

    /// The number of `name` in the table, added on first use. Compared by UTF-8 length first:
    /// most names of a type differ in it, and `String ==` of two different names is slow.
    func number(of name: String) -> Int {
        if numbers.isEmpty {
            let length = name.utf8.count
            for i in names.indices where names[i].utf8.count == length && names[i] == name { return i }
            if names.isEmpty { names.reserveCapacity(8) }
            names.append(name)
            if names.count == 16 { for (i, name) in names.enumerated() { numbers[name] = i } }
            return names.count - 1
        }
        if let number = numbers[name] { return number }
        names.append(name)
        numbers[name] = names.count - 1
        return names.count - 1
    }
}

/// One item being encoded: nothing yet, a finished item, or a container still open to writes.
final class EncodingNode {
    enum Content {
        case empty
        case item([UInt8])
        case keyed(ContainerBytes)
        case unkeyed(ContainerBytes)
    }
    @exclusivity(unchecked) var content = Content.empty

    /// Appends the item. A value that wrote nothing is an empty keyed container, as JSON's `{}`.
    func write(to out: inout [UInt8]) {
        switch content {
        case .empty: out += [CodableTag.keyed, 0]
        case .item(let bytes): out += bytes
        case .keyed(let container): container.write(tag: CodableTag.keyed, to: &out)
        case .unkeyed(let container): container.write(tag: CodableTag.unkeyed, to: &out)
        }
    }
}

/// A container's entries as written so far, with the nested containers still open (each written
/// at its offset when the container is).
final class ContainerBytes {
    @exclusivity(unchecked) var bytes: [UInt8] = []
    @exclusivity(unchecked) var count = 0
    @exclusivity(unchecked) var nested: [(offset: Int, node: EncodingNode)] = []

    /// An entry whose item is written later, through `node`.
    init() { bytes.reserveCapacity(64) }

    func openNested() -> EncodingNode {
        let node = EncodingNode()
        nested.append((bytes.count, node))
        return node
    }

    func write(tag: UInt8, to out: inout [UInt8]) {
        var body = bytes
        if !nested.isEmpty {
            body = []
            var start = 0
            for (offset, node) in nested {
                body += bytes[start..<offset]
                node.write(to: &body)
                start = offset
            }
            body += bytes[start...]
        }
        out.append(tag)
        if tag == CodableTag.unkeyed { out.appendVarint(UInt64(count)) }
        out.appendVarint(UInt64(body.count))
        out += body
    }
}

extension [UInt8] {
    mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        append(UInt8(v))
    }

    mutating func appendCounted<C: Collection<UInt8>>(_ content: C) {
        appendVarint(UInt64(content.count))
        append(contentsOf: content)
    }

    mutating func appendSigned(_ value: Int64) {
        append(CodableTag.signed)
        appendVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func appendUnsigned(_ value: UInt64) {
        append(CodableTag.unsigned)
        appendVarint(value)
    }

    mutating func appendDouble(_ value: Double) {
        append(CodableTag.double)
        let bits = value.bitPattern
        for shift in stride(from: 0, to: 64, by: 8) { append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
    }

    mutating func appendFloat(_ value: Float) {
        append(CodableTag.float)
        let bits = value.bitPattern
        for shift in stride(from: 0, to: 32, by: 8) { append(UInt8(truncatingIfNeeded: bits >> UInt32(shift))) }
    }

    mutating func appendString(_ value: String) {
        append(CodableTag.string)
        appendCounted(value.utf8)
    }

    mutating func appendBool(_ value: Bool) { append(value ? CodableTag.true : CodableTag.false) }
}

/// The `Encoder` for one item.
struct BinaryEncoder: Encoder {
    let session: EncodingSession
    let node: EncodingNode
    let codingPath: [any CodingKey]
    /// Whether this is the record itself, whose `id` is the key's.
    let isTopLevel: Bool
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy _: Key.Type) -> KeyedEncodingContainer<Key> {
        // Asking again (a subclass, then its superclass) continues the same container.
        let container: ContainerBytes
        if case .keyed(let open) = node.content {
            container = open
        } else {
            container = ContainerBytes()
            node.content = .keyed(container)
        }
        return KeyedEncodingContainer(KeyedBinaryEncodingContainer(encoder: self, container: container))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let container: ContainerBytes
        if case .unkeyed(let open) = node.content {
            container = open
        } else {
            container = ContainerBytes()
            node.content = .unkeyed(container)
        }
        return UnkeyedBinaryEncodingContainer(encoder: self, container: container)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueBinaryEncodingContainer(encoder: self) }

    /// Appends `value` as one item: the standard scalars and Data directly, anything else through
    /// its own `encode(to:)` (an `[String]` hands each element to its container as a generic `T`:
    /// through `encode(to:)` each cost an encoder). The path is built only for a nested encoder.
    func appendItem<T: Encodable>(_ value: T, at path: @autoclosure () -> [any CodingKey], to bytes: inout [UInt8]) throws {
        if T.self == String.self { return bytes.appendString(value as! String) }
        if T.self == Int.self { return bytes.appendSigned(Int64(value as! Int)) }
        if T.self == Double.self { return bytes.appendDouble(value as! Double) }
        if T.self == Bool.self { return bytes.appendBool(value as! Bool) }
        if T.self == Data.self {
            bytes.append(CodableTag.bytes)
            bytes.appendCounted(value as! Data)
            return
        }
        let node = EncodingNode()
        try value.encode(to: BinaryEncoder(session: session, node: node, codingPath: path(), isTopLevel: false))
        node.write(to: &bytes)
    }
}

struct KeyedBinaryEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: BinaryEncoder
    let container: ContainerBytes
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func entry(_ key: Key) {
        container.bytes.appendVarint(UInt64(encoder.session.number(of: key.stringValue)))
        container.count += 1
    }

    /// Writes the top-level `id`, when it is the record's, as a reference to the key (which holds
    /// it); `false` for any other entry.
    private func wroteRecordKey(_ value: @autoclosure () -> Any, forKey key: Key) -> Bool {
        guard encoder.isTopLevel, let isRecordID = encoder.session.isRecordID, key.stringValue == "id", isRecordID(value()) else { return false }
        entry(key)
        container.bytes.append(CodableTag.recordKey)
        return true
    }

    mutating func encodeNil(forKey key: Key) { entry(key); container.bytes.append(CodableTag.null) }
    mutating func encode(_ value: Bool, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendBool(value) }
    mutating func encode(_ value: String, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendString(value) }
    mutating func encode(_ value: Double, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendDouble(value) }
    mutating func encode(_ value: Float, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendFloat(value) }
    mutating func encode(_ value: Int, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendSigned(Int64(value)) }
    mutating func encode(_ value: Int8, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendSigned(Int64(value)) }
    mutating func encode(_ value: Int16, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendSigned(Int64(value)) }
    mutating func encode(_ value: Int32, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendSigned(Int64(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendSigned(value) }
    mutating func encode(_ value: UInt, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) { if wroteRecordKey(value, forKey: key) { return }; entry(key); container.bytes.appendUnsigned(value) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if wroteRecordKey(value, forKey: key) { return }
        entry(key)
        try encoder.appendItem(value, at: codingPath + [key], to: &container.bytes)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        nestedEncoder(forKey: key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        nestedEncoder(forKey: key).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { nestedEncoder(forKey: nil) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { nestedEncoder(forKey: key) }

    /// An encoder for an entry written later (`super` when `key` is nil, as JSONEncoder names it).
    private func nestedEncoder(forKey key: Key?) -> BinaryEncoder {
        let name = key?.stringValue ?? "super"
        container.bytes.appendVarint(UInt64(encoder.session.number(of: name)))
        container.count += 1
        return BinaryEncoder(session: encoder.session, node: container.openNested(),
                             codingPath: codingPath + [key ?? AnyCodingKey(name)], isTopLevel: false)
    }
}

struct UnkeyedBinaryEncodingContainer: UnkeyedEncodingContainer {
    let encoder: BinaryEncoder
    let container: ContainerBytes
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { container.count }

    private func entry() { container.count += 1 }

    mutating func encodeNil() { entry(); container.bytes.append(CodableTag.null) }
    mutating func encode(_ value: Bool) { entry(); container.bytes.appendBool(value) }
    mutating func encode(_ value: String) { entry(); container.bytes.appendString(value) }
    mutating func encode(_ value: Double) { entry(); container.bytes.appendDouble(value) }
    mutating func encode(_ value: Float) { entry(); container.bytes.appendFloat(value) }
    mutating func encode(_ value: Int) { entry(); container.bytes.appendSigned(Int64(value)) }
    mutating func encode(_ value: Int8) { entry(); container.bytes.appendSigned(Int64(value)) }
    mutating func encode(_ value: Int16) { entry(); container.bytes.appendSigned(Int64(value)) }
    mutating func encode(_ value: Int32) { entry(); container.bytes.appendSigned(Int64(value)) }
    mutating func encode(_ value: Int64) { entry(); container.bytes.appendSigned(value) }
    mutating func encode(_ value: UInt) { entry(); container.bytes.appendUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt8) { entry(); container.bytes.appendUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt16) { entry(); container.bytes.appendUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt32) { entry(); container.bytes.appendUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt64) { entry(); container.bytes.appendUnsigned(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let index = container.count
        entry()
        try encoder.appendItem(value, at: codingPath + [AnyCodingKey(index: index)], to: &container.bytes)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        nestedEncoder().container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { nestedEncoder().unkeyedContainer() }

    mutating func superEncoder() -> any Encoder { nestedEncoder() }

    private func nestedEncoder() -> BinaryEncoder {
        let path = codingPath + [AnyCodingKey(index: container.count)]
        entry()
        return BinaryEncoder(session: encoder.session, node: container.openNested(), codingPath: path, isTopLevel: false)
    }
}

struct SingleValueBinaryEncodingContainer: SingleValueEncodingContainer {
    let encoder: BinaryEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ write: (inout [UInt8]) -> Void) {
        var bytes: [UInt8] = []
        write(&bytes)
        encoder.node.content = .item(bytes)
    }

    mutating func encodeNil() { set { $0.append(CodableTag.null) } }
    mutating func encode(_ value: Bool) { set { $0.appendBool(value) } }
    mutating func encode(_ value: String) { set { $0.appendString(value) } }
    mutating func encode(_ value: Double) { set { $0.appendDouble(value) } }
    mutating func encode(_ value: Float) { set { $0.appendFloat(value) } }
    mutating func encode(_ value: Int) { set { $0.appendSigned(Int64(value)) } }
    mutating func encode(_ value: Int8) { set { $0.appendSigned(Int64(value)) } }
    mutating func encode(_ value: Int16) { set { $0.appendSigned(Int64(value)) } }
    mutating func encode(_ value: Int32) { set { $0.appendSigned(Int64(value)) } }
    mutating func encode(_ value: Int64) { set { $0.appendSigned(value) } }
    mutating func encode(_ value: UInt) { set { $0.appendUnsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt8) { set { $0.appendUnsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt16) { set { $0.appendUnsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt32) { set { $0.appendUnsigned(UInt64(value)) } }
    mutating func encode(_ value: UInt64) { set { $0.appendUnsigned(value) } }

    mutating func encode<T: Encodable>(_ value: T) throws {
        var bytes: [UInt8] = []
        try encoder.appendItem(value, at: codingPath, to: &bytes)
        encoder.node.content = .item(bytes)
    }
}

/// A coding key for paths in messages: an array index, or `super`.
struct AnyCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(_ name: String) { stringValue = name; intValue = nil }
    init(index: Int) { stringValue = "Index \(index)"; intValue = index }
    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}
