import Foundation

/// Decodes `Decodable` values from the binary Codable format (CodableValueEncoder.swift,
/// RecordFormat.md). Never traps on bad bytes: malformed ones throw `DecodingError.dataCorrupted`.
enum CodableValueDecoder {
    /// Decodes a `T` from `bytes` (the whole value: names, then the root item). `recordID` is
    /// what a reference to the record's key decodes as.
    static func decode<T: Decodable>(_: T.Type, from bytes: UnsafeRawBufferPointer, recordID: Any?) throws -> T {
        let session = try DecodingSession(bytes: bytes, recordID: recordID)
        // The bytes are lent: a decoder a type keeps past its init must not read them.
        defer { session.isOpen = false }
        let decoder = BinaryDecoder(session: session, offset: session.rootOffset, codingPath: [])
        let value = try decoder.decodeItem(T.self, at: session.rootOffset, path: [])
        guard try session.end(ofItemAt: session.rootOffset) == bytes.count else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "bytes after the value"))
        }
        return value
    }
}

/// The bytes of one value being decoded and its names table.
final class DecodingSession {
    let bytes: UnsafeRawBufferPointer
    /// Where each name of the table lies in ``bytes``. Names are compared as bytes with the
    /// keys a type asks for, so a name that is not UTF-8 is merely never found.
    let names: [Range<Int>]
    let rootOffset: Int
    let recordID: Any?
    /// How deep containers may nest: bytes can nest further than any sane value, and each level
    /// is a stack frame (JSONDecoder stops at 512 too).
    static let maximumDepth = 512
    // One decode, on one thread: no exclusivity checks (they were a tenth of a decode).
    @exclusivity(unchecked) var isOpen = true

    init(bytes: UnsafeRawBufferPointer, recordID: Any?) throws {
        self.bytes = bytes
        self.recordID = recordID
        var offset = 0
        let count = try Self.varint(in: bytes, at: &offset)
        // Each name takes a byte at least: a larger count is a lie, not an allocation to make.
        guard count <= UInt64(bytes.count) else { throw Self.corrupt(at: 0, "\(count) names in \(bytes.count) bytes") }
        var names: [Range<Int>] = []
        names.reserveCapacity(Int(count))
        for _ in 0..<count {
            let length = try Self.varint(in: bytes, at: &offset)
            guard length <= UInt64(bytes.count - offset) else { throw Self.corrupt(at: offset, "a name runs past the end") }
            names.append(offset..<(offset + Int(length)))
            offset += Int(length)
        }
        self.names = names
        rootOffset = offset
    }

    func corrupt(at offset: Int, _ detail: String, path: [any CodingKey] = []) -> DecodingError {
        Self.corrupt(at: offset, detail, path: path)
    }

    static func corrupt(at offset: Int, _ detail: String, path: [any CodingKey] = []) -> DecodingError {
        .dataCorrupted(.init(codingPath: path, debugDescription: "\(detail) (byte \(offset))"))
    }

    func checkOpen(_ path: [any CodingKey]) throws {
        guard isOpen else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "a decoder was used after its value was decoded"))
        }
    }

    func varint(at offset: inout Int) throws -> UInt64 {
        try checkOpen([])
        return try Self.varint(in: bytes, at: &offset)
    }

    static func varint(in bytes: UnsafeRawBufferPointer, at offset: inout Int) throws -> UInt64 {
        var reader = FieldReader(bytes, offset: offset)
        do {
            let value = try reader.readVarint()
            offset = reader.offset
            return value
        } catch {
            throw Self.corrupt(at: offset, error.reason)
        }
    }

    /// The tag of the item at `offset`. Every read starts here or at ``varint(at:)``: both refuse
    /// once the lent bytes are gone.
    func tag(at offset: Int) throws -> UInt8 {
        try checkOpen([])
        guard offset < bytes.count else { throw corrupt(at: offset, "truncated: an item is missing") }
        return bytes[offset]
    }

    /// The item at `offset`'s payload: `count` bytes after its varint length, which follows the tag.
    func counted(at offset: Int) throws -> Range<Int> {
        var position = offset + 1
        let length = try varint(at: &position)
        guard length <= UInt64(bytes.count - position) else { throw corrupt(at: offset, "length \(length) runs past the end") }
        return position..<(position + Int(length))
    }

    /// The offset just after the item at `offset`.
    func end(ofItemAt offset: Int) throws -> Int {
        let tag = try self.tag(at: offset)
        switch tag {
        case CodableTag.null, CodableTag.false, CodableTag.true, CodableTag.recordKey: return offset + 1
        case CodableTag.signed, CodableTag.unsigned:
            var position = offset + 1
            _ = try varint(at: &position)
            return position
        case CodableTag.double, CodableTag.float:
            let end = offset + 1 + (tag == CodableTag.double ? 8 : 4)
            guard end <= bytes.count else { throw corrupt(at: offset, "truncated number") }
            return end
        case CodableTag.string, CodableTag.bytes, CodableTag.keyed: return try counted(at: offset).upperBound
        case CodableTag.unkeyed: return try unkeyed(at: offset).items.upperBound
        default: throw corrupt(at: offset, "unknown tag \(tag)")
        }
    }

    /// An unkeyed container's item count and the bytes of its items.
    func unkeyed(at offset: Int) throws -> (count: Int, items: Range<Int>) {
        var position = offset + 1
        let count = try varint(at: &position)
        let length = try varint(at: &position)
        guard length <= UInt64(bytes.count - position), count <= length else {
            throw corrupt(at: offset, "an unkeyed container of \(count) items in \(length) bytes runs past the end")
        }
        return (Int(count), position..<(position + Int(length)))
    }

    /// Whether name `number` is `name`.
    func name(_ number: Int, is name: String) -> Bool {
        let range = names[number]
        var name = name
        return name.withUTF8 { utf8 in
            utf8.count == range.count && utf8.elementsEqual(UnsafeRawBufferPointer(rebasing: bytes[range]))
        }
    }

    func nameText(_ number: Int) -> String { String(decoding: UnsafeRawBufferPointer(rebasing: bytes[names[number]]), as: UTF8.self) }
}

/// The `Decoder` for one item.
struct BinaryDecoder: Decoder {
    let session: DecodingSession
    let offset: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy _: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try session.checkOpen(codingPath)
        let tag = try session.tag(at: offset)
        guard tag == CodableTag.keyed else {
            throw DecodingError.typeMismatch([String: Any].self, .init(codingPath: codingPath,
                debugDescription: "expected a keyed container, found \(CodableTag.name(tag))"))
        }
        let entries = try KeyedEntries(session: session, range: try session.counted(at: offset))
        return KeyedDecodingContainer(KeyedBinaryDecodingContainer<Key>(decoder: self, entries: entries))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try session.checkOpen(codingPath)
        let tag = try session.tag(at: offset)
        guard tag == CodableTag.unkeyed else {
            throw DecodingError.typeMismatch([Any].self, .init(codingPath: codingPath,
                debugDescription: "expected an unkeyed container, found \(CodableTag.name(tag))"))
        }
        let (count, items) = try session.unkeyed(at: offset)
        return UnkeyedBinaryDecodingContainer(decoder: self, count: count, items: items)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try session.checkOpen(codingPath)
        return SingleValueBinaryDecodingContainer(decoder: self)
    }

    // MARK: Items
    // Each takes the item's path as an autoclosure: built only for an error or a nested decoder
    // (building it for every property was a tenth of a decode).

    func mismatch<T>(_: T.Type, at offset: Int, path: [any CodingKey]) throws -> DecodingError {
        .typeMismatch(T.self, .init(codingPath: path, debugDescription: "expected \(T.self), found \(CodableTag.name(try session.tag(at: offset)))"))
    }

    func decodeNil(at offset: Int) throws -> Bool { try session.tag(at: offset) == CodableTag.null }

    func decodeBool(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch try session.tag(at: offset) {
        case CodableTag.true: return true
        case CodableTag.false: return false
        case CodableTag.recordKey: return try recordID(Bool.self, at: offset, path: path())
        default: throw try mismatch(Bool.self, at: offset, path: path())
        }
    }

    func decodeString(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> String {
        let tag = try session.tag(at: offset)
        if tag == CodableTag.recordKey { return try recordID(String.self, at: offset, path: path()) }
        guard tag == CodableTag.string else { throw try mismatch(String.self, at: offset, path: path()) }
        let range = try session.counted(at: offset)
        guard let string = String.strataValidating(UnsafeRawBufferPointer(rebasing: session.bytes[range])) else {
            throw session.corrupt(at: offset, "string bytes are not UTF-8", path: path())
        }
        return string
    }

    /// An integer of any width from an integer item (or a float that holds one exactly); one that
    /// does not fit `I` is refused, never truncated.
    func decodeInteger<I: FixedWidthInteger>(_: I.Type, at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> I {
        var position = offset + 1
        let result: I?
        switch try session.tag(at: offset) {
        case CodableTag.signed:
            let zigzag = try session.varint(at: &position)
            result = I(exactly: Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1))
        case CodableTag.unsigned: result = I(exactly: try session.varint(at: &position))
        case CodableTag.recordKey: return try recordID(I.self, at: offset, path: path())
        case CodableTag.double, CodableTag.float: result = I(exactly: try decodeFloating(Double.self, at: offset, path: path()))
        default: throw try mismatch(I.self, at: offset, path: path())
        }
        guard let result else {
            throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "the stored number does not fit \(I.self)"))
        }
        return result
    }

    func decodeFloating<F: BinaryFloatingPoint>(_: F.Type, at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> F {
        let tag = try session.tag(at: offset)
        switch tag {
        case CodableTag.double, CodableTag.float:
            let width = tag == CodableTag.double ? 8 : 4
            guard offset + 1 + width <= session.bytes.count else { throw session.corrupt(at: offset, "truncated number", path: path()) }
            var bits: UInt64 = 0
            for i in 0..<width { bits |= UInt64(session.bytes[offset + 1 + i]) << UInt64(8 * i) }
            return tag == CodableTag.double ? F(Double(bitPattern: bits)) : F(Float(bitPattern: UInt32(bits)))
        case CodableTag.recordKey: return try recordID(F.self, at: offset, path: path())
        case CodableTag.signed: return F(try decodeInteger(Int64.self, at: offset, path: path()))
        case CodableTag.unsigned: return F(try decodeInteger(UInt64.self, at: offset, path: path()))
        default: throw try mismatch(F.self, at: offset, path: path())
        }
    }

    /// The record's id, which a reference to the key stands for.
    func recordID<T>(_: T.Type, at offset: Int, path: [any CodingKey]) throws -> T {
        guard let id = session.recordID as? T else { throw try mismatch(T.self, at: offset, path: path) }
        return id
    }

    /// Decodes any `T` from the item at `offset`: the record's key, the standard scalars and Data
    /// directly, anything else through `T`'s own `init(from:)`. (An `[String]` asks its unkeyed
    /// container for each element as a generic `T`: through `init(from:)` each cost a decoder.)
    func decodeItem<T: Decodable>(_: T.Type, at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> T {
        try session.checkOpen(codingPath)
        let tag = try session.tag(at: offset)
        if tag == CodableTag.recordKey { return try recordID(T.self, at: offset, path: path()) }
        if T.self == String.self { return try decodeString(at: offset, path: path()) as! T }
        if T.self == Int.self { return try decodeInteger(Int.self, at: offset, path: path()) as! T }
        if T.self == Double.self { return try decodeFloating(Double.self, at: offset, path: path()) as! T }
        if T.self == Bool.self { return try decodeBool(at: offset, path: path()) as! T }
        if T.self == Data.self {
            guard tag == CodableTag.bytes else { throw try mismatch(T.self, at: offset, path: path()) }
            return Data(UnsafeRawBufferPointer(rebasing: session.bytes[try session.counted(at: offset)])) as! T
        }
        let path = path()
        guard path.count < DecodingSession.maximumDepth else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "nested deeper than \(DecodingSession.maximumDepth) levels"))
        }
        return try T(from: BinaryDecoder(session: session, offset: offset, codingPath: path))
    }
}

/// A keyed container's entries, read in place: a cursor walks them in the order they were
/// written (the order a type usually reads them), so a property is found without a table; one
/// read out of order walks around from the start.
final class KeyedEntries {
    let session: DecodingSession
    let range: Range<Int>
    /// The next entry to look at.
    @exclusivity(unchecked) private var cursor: Int

    /// The entries of the keyed container whose entries lie in `range`, each checked once (a
    /// name in the table, an item inside the container), so a damaged one is an error here and
    /// never an absent property (`decodeIfPresent` would read it as `nil`).
    init(session: DecodingSession, range: Range<Int>) throws {
        self.session = session
        self.range = range
        cursor = range.lowerBound
        _ = try names()
    }

    /// The item offset of the entry named `key`, or nil when there is none.
    func item(named key: String) throws -> Int? {
        var key = key
        return try key.withUTF8 { key in
            var offset = cursor
            var wrapped = false
            while true {
                if offset >= range.upperBound {
                    // Past the last entry: from the first, once, up to where this search began.
                    if wrapped || cursor == range.lowerBound { return nil }
                    wrapped = true
                    offset = range.lowerBound
                }
                if wrapped && offset >= cursor { return nil }
                let number = try session.varint(at: &offset)
                guard number < UInt64(session.names.count) else { throw session.corrupt(at: offset, "name \(number) is not in the table") }
                let item = offset
                offset = try session.end(ofItemAt: item)
                guard offset <= range.upperBound else { throw session.corrupt(at: item, "an item runs past its container") }
                let name = session.names[Int(number)]
                if name.count == key.count && key.elementsEqual(UnsafeRawBufferPointer(rebasing: session.bytes[name])) {
                    cursor = offset
                    return item
                }
            }
        }
    }

    /// The names of every entry, in order.
    func names() throws -> [Int] {
        var offset = range.lowerBound
        var numbers: [Int] = []
        while offset < range.upperBound {
            let number = try session.varint(at: &offset)
            guard number < UInt64(session.names.count) else { throw session.corrupt(at: offset, "name \(number) is not in the table") }
            numbers.append(Int(number))
            offset = try session.end(ofItemAt: offset)
        }
        guard offset == range.upperBound else { throw session.corrupt(at: offset, "an item runs past its container") }
        return numbers
    }
}

struct KeyedBinaryDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: BinaryDecoder
    let entries: KeyedEntries
    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] { ((try? entries.names()) ?? []).compactMap { Key(stringValue: decoder.session.nameText($0)) } }
    /// Whether the container has an entry named `key`; `true` when it cannot tell (its bytes
    /// are gone), so the decode that follows throws rather than read a property as absent.
    func contains(_ key: Key) -> Bool {
        do { return try entries.item(named: key.stringValue) != nil } catch { return true }
    }

    private func item(_ key: Key) throws -> Int {
        try decoder.session.checkOpen(codingPath)
        guard let offset = try entries.item(named: key.stringValue) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for \"\(key.stringValue)\""))
        }
        return offset
    }

    func decodeNil(forKey key: Key) throws -> Bool { try decoder.decodeNil(at: item(key)) }
    func decode(_: Bool.Type, forKey key: Key) throws -> Bool { try decoder.decodeBool(at: item(key), path: codingPath + [key]) }
    func decode(_: String.Type, forKey key: Key) throws -> String { try decoder.decodeString(at: item(key), path: codingPath + [key]) }
    func decode(_: Double.Type, forKey key: Key) throws -> Double { try decoder.decodeFloating(Double.self, at: item(key), path: codingPath + [key]) }
    func decode(_: Float.Type, forKey key: Key) throws -> Float { try decoder.decodeFloating(Float.self, at: item(key), path: codingPath + [key]) }
    func decode(_: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }
    func decode<T: Decodable>(_: T.Type, forKey key: Key) throws -> T { try decoder.decodeItem(T.self, at: item(key), path: codingPath + [key]) }

    private func integer<I: FixedWidthInteger>(_ key: Key) throws -> I {
        try decoder.decodeInteger(I.self, at: item(key), path: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try BinaryDecoder(session: decoder.session, offset: item(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try BinaryDecoder(session: decoder.session, offset: item(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let key = AnyCodingKey("super")
        guard let offset = try entries.item(named: "super") else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for \"super\""))
        }
        return BinaryDecoder(session: decoder.session, offset: offset, codingPath: codingPath + [key])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        BinaryDecoder(session: decoder.session, offset: try item(key), codingPath: codingPath + [key])
    }
}

struct UnkeyedBinaryDecodingContainer: UnkeyedDecodingContainer {
    let decoder: BinaryDecoder
    let count: Int?
    let end: Int
    private(set) var currentIndex = 0
    private var offset: Int
    var codingPath: [any CodingKey] { decoder.codingPath }
    var isAtEnd: Bool { currentIndex >= count! }

    init(decoder: BinaryDecoder, count: Int, items: Range<Int>) {
        self.decoder = decoder
        self.count = count
        end = items.upperBound
        offset = items.lowerBound
    }

    private func path(_ index: Int) -> [any CodingKey] { codingPath + [AnyCodingKey(index: index)] }

    /// The next item's offset, moving past it.
    private mutating func next<T>(_: T.Type) throws -> Int {
        try decoder.session.checkOpen(codingPath)
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: path(currentIndex), debugDescription: "the unkeyed container has no more items"))
        }
        let start = offset
        let next = try decoder.session.end(ofItemAt: start)
        guard next <= end else { throw decoder.session.corrupt(at: start, "an item runs past its container", path: path(currentIndex)) }
        offset = next
        currentIndex += 1
        return start
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, try decoder.decodeNil(at: offset) else { return false }
        _ = try next(Never.self)
        return true
    }

    mutating func decode(_: Bool.Type) throws -> Bool { try decoder.decodeBool(at: next(Bool.self), path: path(currentIndex - 1)) }
    mutating func decode(_: String.Type) throws -> String { try decoder.decodeString(at: next(String.self), path: path(currentIndex - 1)) }
    mutating func decode(_: Double.Type) throws -> Double { try decoder.decodeFloating(Double.self, at: next(Double.self), path: path(currentIndex - 1)) }
    mutating func decode(_: Float.Type) throws -> Float { try decoder.decodeFloating(Float.self, at: next(Float.self), path: path(currentIndex - 1)) }
    mutating func decode(_: Int.Type) throws -> Int { try integer() }
    mutating func decode(_: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_: UInt64.Type) throws -> UInt64 { try integer() }
    mutating func decode<T: Decodable>(_: T.Type) throws -> T { try decoder.decodeItem(T.self, at: next(T.self), path: path(currentIndex - 1)) }

    private mutating func integer<I: FixedWidthInteger>() throws -> I {
        try decoder.decodeInteger(I.self, at: next(I.self), path: path(currentIndex - 1))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let at = try next([String: Any].self)
        return try BinaryDecoder(session: decoder.session, offset: at, codingPath: path(currentIndex - 1)).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let at = try next([Any].self)
        return try BinaryDecoder(session: decoder.session, offset: at, codingPath: path(currentIndex - 1)).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let at = try next(Any.self)
        return BinaryDecoder(session: decoder.session, offset: at, codingPath: path(currentIndex - 1))
    }
}

struct SingleValueBinaryDecodingContainer: SingleValueDecodingContainer {
    let decoder: BinaryDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var at: Int { decoder.offset }

    func decodeNil() -> Bool { (try? decoder.decodeNil(at: at)) ?? false }
    func decode(_: Bool.Type) throws -> Bool { try decoder.decodeBool(at: at, path: codingPath) }
    func decode(_: String.Type) throws -> String { try decoder.decodeString(at: at, path: codingPath) }
    func decode(_: Double.Type) throws -> Double { try decoder.decodeFloating(Double.self, at: at, path: codingPath) }
    func decode(_: Float.Type) throws -> Float { try decoder.decodeFloating(Float.self, at: at, path: codingPath) }
    func decode(_: Int.Type) throws -> Int { try integer() }
    func decode(_: Int8.Type) throws -> Int8 { try integer() }
    func decode(_: Int16.Type) throws -> Int16 { try integer() }
    func decode(_: Int32.Type) throws -> Int32 { try integer() }
    func decode(_: Int64.Type) throws -> Int64 { try integer() }
    func decode(_: UInt.Type) throws -> UInt { try integer() }
    func decode(_: UInt8.Type) throws -> UInt8 { try integer() }
    func decode(_: UInt16.Type) throws -> UInt16 { try integer() }
    func decode(_: UInt32.Type) throws -> UInt32 { try integer() }
    func decode(_: UInt64.Type) throws -> UInt64 { try integer() }
    func decode<T: Decodable>(_: T.Type) throws -> T { try decoder.decodeItem(T.self, at: at, path: codingPath) }

    private func integer<I: FixedWidthInteger>() throws -> I { try decoder.decodeInteger(I.self, at: at, path: codingPath) }
}

extension CodableValueDecoder {
    /// A value in the binary Codable form read without its Swift type, for `strata dump` and
    /// `strata verify`: keyed containers as maps keyed by name (in stored order), unkeyed ones as
    /// arrays, the reference to the key as `recordKey`. Bad bytes throw `DecodingError`.
    static func storedValue(from bytes: UnsafeRawBufferPointer, recordKey: StoredValue) throws -> StoredValue {
        let session = try DecodingSession(bytes: bytes, recordID: nil)
        let decoder = BinaryDecoder(session: session, offset: session.rootOffset, codingPath: [])
        func item(at offset: Int, depth: Int) throws -> StoredValue {
            guard depth < DecodingSession.maximumDepth else { throw session.corrupt(at: offset, "nested deeper than \(DecodingSession.maximumDepth) levels") }
            let tag = try session.tag(at: offset)
            switch tag {
            case CodableTag.null: return .null
            case CodableTag.false, CodableTag.true: return .bool(tag == CodableTag.true)
            case CodableTag.signed: return .int(try decoder.decodeInteger(Int64.self, at: offset, path: []))
            case CodableTag.unsigned: return .uint(try decoder.decodeInteger(UInt64.self, at: offset, path: []))
            case CodableTag.double: return .double(try decoder.decodeFloating(Double.self, at: offset, path: []))
            case CodableTag.float: return .float(try decoder.decodeFloating(Float.self, at: offset, path: []))
            case CodableTag.string: return .string(try decoder.decodeString(at: offset, path: []))
            case CodableTag.bytes: return .bytes(Array(UnsafeRawBufferPointer(rebasing: bytes[try session.counted(at: offset)])))
            case CodableTag.recordKey: return recordKey
            case CodableTag.keyed:
                let range = try session.counted(at: offset)
                var position = range.lowerBound
                var pairs: [StoredValue.Pair] = []
                while position < range.upperBound {
                    let number = try session.varint(at: &position)
                    guard number < UInt64(session.names.count) else { throw session.corrupt(at: position, "name \(number) is not in the table") }
                    pairs.append(.init(key: .string(session.nameText(Int(number))), value: try item(at: position, depth: depth + 1)))
                    position = try session.end(ofItemAt: position)
                }
                guard position == range.upperBound else { throw session.corrupt(at: position, "an item runs past its container") }
                return .map(pairs)
            case CodableTag.unkeyed:
                let (count, items) = try session.unkeyed(at: offset)
                var position = items.lowerBound
                var elements: [StoredValue] = []
                for _ in 0..<count {
                    guard position < items.upperBound else { throw session.corrupt(at: position, "fewer items than counted") }
                    elements.append(try item(at: position, depth: depth + 1))
                    position = try session.end(ofItemAt: position)
                }
                guard position == items.upperBound else { throw session.corrupt(at: position, "more bytes than the counted items") }
                return .array(elements)
            default: throw session.corrupt(at: offset, "unknown tag \(tag)")
            }
        }
        let value = try item(at: session.rootOffset, depth: 0)
        guard try session.end(ofItemAt: session.rootOffset) == bytes.count else {
            throw session.corrupt(at: session.rootOffset, "bytes after the value")
        }
        return value
    }
}
