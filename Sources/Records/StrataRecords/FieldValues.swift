import Foundation

// The built-in field types (RecordFormat.md has the table). Integers are LEB128 varints (signed ones zigzag-encoded), so small
// numbers take one byte; strings and bytes are length-prefixed, so they may hold NUL and have
// no size cap below the engine's.

extension FieldValue where Self: FixedWidthInteger & SignedInteger {
    /// `i8`, `i16`, `i32`, `i64` (`Int` is `i64` on every platform Swift runs 64-bit).
    public static var fieldFormat: FieldFormat { FieldFormat("i\(Self.bitWidth)") }

    /// Writes the value as a zigzag varint (RecordFormat.md, `i8` … `i64`): small magnitudes of
    /// either sign take one byte.
    @inlinable
    public func encode(to fields: inout FieldWriter) {
        let v = Int64(self)
        fields.writeVarint(UInt64(bitPattern: (v << 1) ^ (v >> 63)))
    }

    /// Reads a zigzag varint; throws ``FieldDecodingError`` when it is malformed or does not fit `Self`.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Self {
        let start = fields.offset
        let z = try fields.readVarint()
        let v = Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1)))
        guard let value = Self(exactly: v) else { throw FieldDecodingError(offset: start, reason: "\(v) does not fit \(Self.self)") }
        return value
    }
}

extension FieldValue where Self: FixedWidthInteger & UnsignedInteger {
    /// `u8`, `u16`, `u32`, `u64`.
    public static var fieldFormat: FieldFormat { FieldFormat("u\(Self.bitWidth)") }

    /// Writes the value as a varint (RecordFormat.md, `u8` … `u64`).
    @inlinable
    public func encode(to fields: inout FieldWriter) { fields.writeVarint(UInt64(self)) }

    /// Reads a varint; throws ``FieldDecodingError`` when it is malformed or does not fit `Self`.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Self {
        let start = fields.offset
        let v = try fields.readVarint()
        guard let value = Self(exactly: v) else { throw FieldDecodingError(offset: start, reason: "\(v) does not fit \(Self.self)") }
        return value
    }
}

extension Int: FieldValue {}
extension Int8: FieldValue {}
extension Int16: FieldValue {}
extension Int32: FieldValue {}
extension Int64: FieldValue {}
extension UInt: FieldValue {}
extension UInt8: FieldValue {}
extension UInt16: FieldValue {}
extension UInt32: FieldValue {}
extension UInt64: FieldValue {}

extension Bool: FieldValue {
    public static var fieldFormat: FieldFormat { FieldFormat("bool") }
    /// Writes one byte, `00` for `false` or `01` for `true` (RecordFormat.md, `bool`).
    @inlinable
    public func encode(to fields: inout FieldWriter) { fields.writeRaw([self ? 1 : 0]) }

    /// Reads one byte; throws ``FieldDecodingError`` when none is left or it is neither `00` nor `01`.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Bool {
        let start = fields.offset
        switch try fields.readRaw(1)[0] {
        case 0: return false
        case 1: return true
        case let b: throw FieldDecodingError(offset: start, reason: "\(b) is not a Bool")
        }
    }
}

extension Double: FieldValue {
    public static var fieldFormat: FieldFormat { FieldFormat("f64") }
    /// Writes the IEEE 754 bits, 8 bytes little-endian (RecordFormat.md, `f64`): every value, NaNs
    /// and signed zeros included, reads back bit for bit.
    @inlinable
    public func encode(to fields: inout FieldWriter) { withUnsafeBytes(of: bitPattern.littleEndian) { fields.writeRaw($0) } }

    /// Reads 8 bytes of IEEE 754 bits, little-endian; throws ``FieldDecodingError`` when fewer are left.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Double {
        Double(bitPattern: UInt64(littleEndian: try fields.readRaw(8).loadUnaligned(as: UInt64.self)))
    }
}

extension Float: FieldValue {
    public static var fieldFormat: FieldFormat { FieldFormat("f32") }
    /// Writes the IEEE 754 bits, 4 bytes little-endian (RecordFormat.md, `f32`): every value, NaNs
    /// and signed zeros included, reads back bit for bit.
    @inlinable
    public func encode(to fields: inout FieldWriter) { withUnsafeBytes(of: bitPattern.littleEndian) { fields.writeRaw($0) } }

    /// Reads 4 bytes of IEEE 754 bits, little-endian; throws ``FieldDecodingError`` when fewer are left.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Float {
        Float(bitPattern: UInt32(littleEndian: try fields.readRaw(4).loadUnaligned(as: UInt32.self)))
    }
}

extension String: FieldValue {
    public static var fieldFormat: FieldFormat { FieldFormat("string") }
    /// Writes the UTF-8 bytes after their count as a varint (RecordFormat.md, `string`); NUL is allowed.
    @inlinable
    public func encode(to fields: inout FieldWriter) { fields.writeBytes(utf8) }

    /// Reads a length-prefixed string; throws ``FieldDecodingError`` when it is truncated or not UTF-8.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> String {
        let start = fields.offset
        guard let string = String.strataValidating(try fields.readBytes()) else {
            throw FieldDecodingError(offset: start, reason: "string bytes are not UTF-8")
        }
        return string
    }
}

extension Data: FieldValue {
    public static var fieldFormat: FieldFormat { FieldFormat("bytes") }
    /// Writes the bytes after their count as a varint (RecordFormat.md, `bytes`).
    @inlinable
    public func encode(to fields: inout FieldWriter) { fields.writeBytes(self) }
    /// Reads a length-prefixed byte string into a new `Data`; throws ``FieldDecodingError`` when it is
    /// truncated.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Data { Data(try fields.readBytes()) }
}

extension UUID: FieldValue {
    public static var fieldFormat: FieldFormat { FieldFormat("uuid") }
    /// Writes the 16 bytes in RFC 4122 order, with no length (RecordFormat.md, `uuid`).
    @inlinable
    public func encode(to fields: inout FieldWriter) { withUnsafeBytes(of: uuid) { fields.writeRaw($0) } }

    /// Reads 16 bytes; throws ``FieldDecodingError`` when fewer are left.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> UUID {
        let raw = try fields.readRaw(16)
        var tuple: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &tuple) { $0.copyMemory(from: raw) }
        return UUID(uuid: tuple)
    }
}

/// Dates keep the exact `Double` they hold.
extension Date: FieldValue {
    public static var fieldFormat: FieldFormat { FieldFormat("date") }
    /// Writes `timeIntervalSinceReferenceDate` as an `f64` (RecordFormat.md, `date`): seconds since
    /// 2001-01-01 UTC, exactly.
    @inlinable
    public func encode(to fields: inout FieldWriter) { timeIntervalSinceReferenceDate.encode(to: &fields) }

    /// Reads an `f64` of seconds since 2001-01-01 UTC; throws ``FieldDecodingError`` when fewer than 8
    /// bytes are left.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Date {
        Date(timeIntervalSinceReferenceDate: try Double.decode(from: &fields))
    }
}

extension URL: FieldValue {
    public static var fieldFormat: FieldFormat { FieldFormat("url") }
    /// Writes `absoluteString` as a `string` (RecordFormat.md, `url`): a relative URL is stored resolved
    /// against its base, and reads back without one.
    @inlinable
    public func encode(to fields: inout FieldWriter) { absoluteString.encode(to: &fields) }

    /// Reads a `string` and parses it with `URL(string:)`; throws ``FieldDecodingError`` when it is
    /// truncated, not UTF-8 or not a URL.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> URL {
        let start = fields.offset
        let text = try String.decode(from: &fields)
        guard let url = URL(string: text) else { throw FieldDecodingError(offset: start, reason: "not a URL: \(text)") }
        return url
    }
}

extension Optional: FieldValue where Wrapped: FieldValue {
    public static var fieldFormat: FieldFormat { .wrapping("optional", Wrapped.fieldFormat) }
    /// Writes `00` for `nil`, or `01` then the wrapped value in its format (RecordFormat.md,
    /// `optional(F)`).
    @inlinable
    public func encode(to fields: inout FieldWriter) {
        switch self {
        case .none: fields.writeRaw([0])
        case .some(let value):
            fields.writeRaw([1])
            value.encode(to: &fields)
        }
    }

    /// Reads the flag byte, then the wrapped value when it is `01`; throws ``FieldDecodingError`` for
    /// any other flag, or when the wrapped value does not decode.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Wrapped? {
        try Bool.decode(from: &fields) ? try Wrapped.decode(from: &fields) : nil
    }
}

/// Arrays: a count, then the elements. `[UInt8]` is stored as raw bytes.
extension Array: FieldValue where Element: FieldValue {
    /// `bytes` for `[UInt8]`, else `array(element)`.
    public static var fieldFormat: FieldFormat { Element.self == UInt8.self ? FieldFormat("bytes") : .wrapping("array", Element.fieldFormat) }
    /// Writes the element count as a varint, then each element in its format, in order
    /// (RecordFormat.md, `array(F)`); a `[UInt8]` is written as `bytes`.
    @inlinable
    public func encode(to fields: inout FieldWriter) {
        // The same type, told apart without a cast (a cast converts element by element).
        if Element.self == UInt8.self { return fields.writeBytes(unsafeBitCast(self, to: [UInt8].self)) }
        fields.writeVarint(UInt64(count))
        for element in self { element.encode(to: &fields) }
    }

    /// Reads a count and that many elements (a byte string for `[UInt8]`); throws
    /// ``FieldDecodingError`` when the count exceeds the bytes left or an element does not decode.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> [Element] {
        if Element.self == UInt8.self { return unsafeBitCast(Array<UInt8>(try fields.readBytes()), to: [Element].self) }
        let count = try fields.readCount()
        var result: [Element] = []
        result.reserveCapacity(count)
        for _ in 0..<count { result.append(try Element.decode(from: &fields)) }
        return result
    }
}

extension Set: FieldValue where Element: FieldValue {
    public static var fieldFormat: FieldFormat { .wrapping("set", Element.fieldFormat) }
    /// Writes the elements as `array(F)` does, in the set's iteration order (RecordFormat.md,
    /// `set(F)`): equal sets may be stored as different bytes.
    @inlinable
    public func encode(to fields: inout FieldWriter) { Array(self).encode(to: &fields) }
    /// Reads an `array(F)`; repeated elements collapse into one. Throws ``FieldDecodingError`` when
    /// the count exceeds the bytes left or an element does not decode.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Set<Element> {
        Set(try [Element].decode(from: &fields))
    }
}

extension Dictionary: FieldValue where Key: FieldValue, Value: FieldValue {
    public static var fieldFormat: FieldFormat { .wrapping("map", Key.fieldFormat, Value.fieldFormat) }
    /// Writes the entry count as a varint, then each key and its value in their formats, in the
    /// dictionary's iteration order (RecordFormat.md, `map(K,V)`).
    @inlinable
    public func encode(to fields: inout FieldWriter) {
        fields.writeVarint(UInt64(count))
        for (key, value) in self {
            key.encode(to: &fields)
            value.encode(to: &fields)
        }
    }

    /// Reads a count and that many key and value pairs; a repeated key keeps its last value. Throws
    /// ``FieldDecodingError`` when the count exceeds the bytes left or a key or value does not decode.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> [Key: Value] {
        let count = try fields.readCount()
        var result: [Key: Value] = [:]
        for _ in 0..<count { result[try Key.decode(from: &fields)] = try Value.decode(from: &fields) }
        return result
    }
}

/// Enums with a raw value are stored as the raw value: declare `extension Mood: FieldValue {}`.
extension FieldValue where Self: RawRepresentable, RawValue: FieldValue {
    /// `raw(format of the raw value)`.
    public static var fieldFormat: FieldFormat { .wrapping("raw", RawValue.fieldFormat) }

    /// Writes the raw value in its own format (RecordFormat.md, `raw(F)`).
    @inlinable
    public func encode(to fields: inout FieldWriter) { rawValue.encode(to: &fields) }

    /// Reads a raw value; throws ``FieldDecodingError`` when it does not decode or no case has it.
    @inlinable
    public static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Self {
        let start = fields.offset
        guard let value = Self(rawValue: try RawValue.decode(from: &fields)) else {
            throw FieldDecodingError(offset: start, reason: "no case of \(Self.self) has this raw value")
        }
        return value
    }
}

extension FieldReader {
    /// A collection count, refused when it cannot fit in the bytes left (each element takes at
    /// least one byte), so corrupt counts never allocate huge arrays.
    @inlinable
    mutating func readCount() throws(FieldDecodingError) -> Int {
        let start = offset
        let count = try readVarint()
        guard count <= UInt64(bytes.count - offset) else {
            throw FieldDecodingError(offset: start, reason: "count \(count) exceeds the bytes left")
        }
        return Int(count)
    }
}
