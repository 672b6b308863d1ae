import Foundation

extension Bool: KeyComponent {
    @inlinable
    public func encode(to key: inout KeyWriter) { key.write(self ? TypeCode.true : TypeCode.false) }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> Bool {
        let start = key.offset
        switch try key.readByte() {
        case TypeCode.false: return false
        case TypeCode.true: return true
        case let code: throw KeyDecodingError(offset: start, reason: .unexpectedTypeCode(code, expected: "a Bool"))
        }
    }
}

extension Data: KeyComponent {
    @inlinable
    public func encode(to key: inout KeyWriter) {
        key.write(TypeCode.bytes)
        key.writeEscaped(self)
    }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> Data {
        Data(try [UInt8].decode(from: &key))
    }
}

/// UUIDs: the 16 bytes in RFC 4122 order, so they sort as their uppercase text does.
extension UUID: KeyComponent {
    @inlinable
    public func encode(to key: inout KeyWriter) {
        key.write(TypeCode.uuid)
        withUnsafeBytes(of: uuid) { key.write(contentsOf: $0) }
    }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> UUID {
        try key.expect(TypeCode.uuid, for: "a UUID")
        let raw = try key.read(count: 16)
        var tuple: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &tuple) { $0.copyMemory(from: raw) }
        return UUID(uuid: tuple)
    }
}

/// Dates: `timeIntervalSinceReferenceDate` (the Double a `Date` holds) in the Double layout under
/// their own type code, so they round-trip exactly and dates before 2001 sort first.
extension Date: KeyComponent {
    @inlinable
    public func encode(to key: inout KeyWriter) {
        key.write(TypeCode.date)
        key.writeOrderedBits(timeIntervalSinceReferenceDate.canonicalKeyValue.bitPattern)
    }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> Date {
        try key.expect(TypeCode.date, for: "a Date")
        return Date(timeIntervalSinceReferenceDate: try canonical(Double(bitPattern: try key.readOrderedBits(UInt64.self)), key))
    }
}

/// Optionals: `nil` is the single byte `00`, which sorts before every value (all other type codes
/// are above it); a value is its own encoding. Optionals of optionals are not supported: the
/// outer and inner `nil` would be the same key.
extension Optional: KeyComponent where Wrapped: KeyComponent {
    @inlinable
    public func encode(to key: inout KeyWriter) {
        switch self {
        case .none: key.write(TypeCode.null)
        case .some(let value): value.encode(to: &key)
        }
    }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> Wrapped? {
        if try key.peek() == TypeCode.null {
            _ = try key.readByte()
            return nil
        }
        return try Wrapped.decode(from: &key)
    }
}

/// Enums with a raw value are stored as the raw value: declare `extension Suit: KeyComponent {}`.
extension KeyComponent where Self: RawRepresentable, RawValue: KeyComponent {
    @inlinable
    public func encode(to key: inout KeyWriter) { rawValue.encode(to: &key) }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> Self {
        let start = key.offset
        guard let value = Self(rawValue: try RawValue.decode(from: &key)) else {
            throw KeyDecodingError(offset: start, reason: .unknownRawValue("\(Self.self)"))
        }
        return value
    }
}
