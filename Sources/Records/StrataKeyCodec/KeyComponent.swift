/// A value that can be one component of an index key.
///
/// The encoding is order-preserving: for two values `a` and `b` of one type, `a < b` exactly
/// when the encoded bytes of `a` sort before those of `b` (unsigned bytewise, a proper prefix
/// first). It is self-delimiting, so components concatenate into composite keys that sort
/// component by component. The KeyEncoding article of this module's catalog
/// (`StrataKeyCodec.docc/KeyEncoding.md`) is the specification.
public protocol KeyComponent {
    /// Appends this value's encoding.
    func encode(to key: inout KeyWriter)
    /// Reads one value of this type, or throws ``KeyDecodingError`` naming the offset.
    static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> Self
}

/// The key codec's identity, stored by every store so data is never read with another encoding.
public enum KeyCodec {
    /// The encoding's name.
    public static let name = "strata-tuple"
    /// The encoding's version; any change to the bytes of an existing type bumps it.
    public static let version = 1

    /// The encoding of a composite key made of `components`, in order.
    @inlinable
    public static func encode(_ components: any KeyComponent...) -> [UInt8] {
        var writer = KeyWriter()
        for component in components { component.encode(to: &writer) }
        return writer.bytes
    }
}

/// Builds an encoded key, one component after another.
public struct KeyWriter: Sendable {
    /// The encoded key so far: the components appended, in order.
    public var bytes: [UInt8]

    /// An empty key with room reserved for `capacity` bytes (default 32), so that typical keys
    /// are built without reallocating.
    @inlinable
    public init(capacity: Int = 32) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// A writer that appends to `bytes` (a buffer kept for reuse, say).
    @inlinable
    public init(appendingTo bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Appends `component`'s encoding.
    @inlinable
    public mutating func append<C: KeyComponent>(_ component: C) { component.encode(to: &self) }

    /// Appends raw bytes (for the encodings themselves).
    @inlinable
    public mutating func write(_ byte: UInt8) { bytes.append(byte) }

    /// Appends raw bytes as they are, unescaped (for the encodings themselves).
    @inlinable
    public mutating func write<S: Sequence<UInt8>>(contentsOf bytes: S) { self.bytes.append(contentsOf: bytes) }

    /// Forgets the bytes written, keeping the buffer (for encoding many keys without allocating).
    @inlinable
    public mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }
}

/// Reads the components of an encoded key, in order.
public struct KeyReader {
    /// The encoded key being read, borrowed from the caller (see ``init(_:)``).
    public let bytes: UnsafeRawBufferPointer
    /// The offset of the next unread byte.
    public var offset = 0

    /// Reads `bytes`, which must stay valid while the reader is used.
    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Whether every byte was read.
    public var isAtEnd: Bool { offset == bytes.count }

    /// Reads one component of type `C`.
    @inlinable
    public mutating func read<C: KeyComponent>(_: C.Type = C.self) throws(KeyDecodingError) -> C {
        try C.decode(from: &self)
    }

    /// Throws unless every byte was read (a key with trailing bytes is not a key of this schema).
    @inlinable
    public func finish() throws(KeyDecodingError) {
        if !isAtEnd { throw KeyDecodingError(offset: offset, reason: .trailingBytes(bytes.count - offset)) }
    }

    /// The next byte, without consuming it.
    @inlinable
    public func peek() throws(KeyDecodingError) -> UInt8 {
        guard offset < bytes.count else { throw KeyDecodingError(offset: offset, reason: .truncated) }
        return bytes[offset]
    }

    /// Reads the next byte; throws ``KeyDecodingError/Reason/truncated`` at the end of the key.
    @inlinable
    public mutating func readByte() throws(KeyDecodingError) -> UInt8 {
        let byte = try peek()
        offset += 1
        return byte
    }

    /// Reads exactly `count` bytes.
    @inlinable
    public mutating func read(count: Int) throws(KeyDecodingError) -> UnsafeRawBufferPointer {
        guard count <= bytes.count - offset else { throw KeyDecodingError(offset: bytes.count, reason: .truncated) }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }

    /// Reads a type code and throws unless it is `expected`.
    @inlinable
    public mutating func expect(_ expected: UInt8, for type: String) throws(KeyDecodingError) {
        let start = offset
        let code = try readByte()
        if code != expected { throw KeyDecodingError(offset: start, reason: .unexpectedTypeCode(code, expected: type)) }
    }

    /// A decoding failure at the current offset.
    @inlinable
    public func error(_ reason: KeyDecodingError.Reason) -> KeyDecodingError { KeyDecodingError(offset: offset, reason: reason) }
}

/// A key that could not be decoded: where, and why. Decoding never traps.
public struct KeyDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why a key could not be decoded.
    public enum Reason: Sendable, Hashable {
        /// The key ended inside a component.
        case truncated
        /// A type code other than the schema's.
        case unexpectedTypeCode(UInt8, expected: String)
        /// An integer that does not fit the schema's type.
        case overflow(String)
        /// An encoding the codec never writes (a non-minimal integer, a bad escape).
        case nonCanonical(String)
        /// String bytes that are not UTF-8.
        case invalidUTF8
        /// A raw value with no enum case.
        case unknownRawValue(String)
        /// Bytes left after the last component.
        case trailingBytes(Int)
    }

    /// The byte offset in the key where decoding failed.
    public let offset: Int
    /// Why decoding failed there.
    public let reason: Reason

    /// A failure at byte `offset` of the key (for decoders of custom components;
    /// ``KeyReader/error(_:)`` makes one at the reader's current offset).
    @inlinable
    public init(offset: Int, reason: Reason) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        let what: String
        switch reason {
        case .truncated: what = "the key ends inside a component"
        case let .unexpectedTypeCode(code, expected): what = "type code \(hexByte(code)) where \(expected) was expected"
        case let .overflow(type): what = "the integer does not fit \(type)"
        case let .nonCanonical(detail): what = "non-canonical encoding: \(detail)"
        case .invalidUTF8: what = "string bytes are not UTF-8"
        case let .unknownRawValue(type): what = "no case of \(type) has this raw value"
        case let .trailingBytes(n): what = "\(n) bytes after the last component"
        }
        return "key decoding failed at byte \(offset): \(what)"
    }
}

func hexByte(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
}

/// The type codes: the first byte of every component. No code is FF, so FF can never start a
/// component, and the byte after a string terminator is always another component's code.
public enum TypeCode {
    /// `00`: `nil`, an `Optional` with no value. No content; sorts before every value.
    public static let null: UInt8 = 0x00
    /// `01`: bytes (`[UInt8]`, `Data`): the bytes, each `00` written `00 FF`, then a `00` terminator.
    public static let bytes: UInt8 = 0x01
    /// `02`: a `String`: its UTF-8 bytes, escaped and terminated as ``TypeCode/bytes`` are.
    public static let string: UInt8 = 0x02
    /// Integers use 0x0C...0x1C: 0x14 is zero, 0x14 ± n a value of n bytes.
    public static let integerZero: UInt8 = 0x14
    /// `20`: a `Float`: 4 bytes, the IEEE bits big-endian, all bits flipped when the sign bit is
    /// set, else only the sign bit. −0.0 is stored as +0.0, every NaN as the canonical quiet NaN.
    public static let float: UInt8 = 0x20
    /// `21`: a `Double`: 8 bytes, transformed as for ``TypeCode/float``.
    public static let double: UInt8 = 0x21
    /// `26`: `false`. No content; sorts before `true`.
    public static let `false`: UInt8 = 0x26
    /// `27`: `true`. No content.
    public static let `true`: UInt8 = 0x27
    /// `30`: a `UUID`: its 16 bytes in RFC 4122 order.
    public static let uuid: UInt8 = 0x30
    /// `33`: a `Date`: its `timeIntervalSinceReferenceDate` as 8 bytes, encoded as a
    /// ``TypeCode/double``'s content (exact, no truncation; dates before 2001 sort first).
    public static let date: UInt8 = 0x33
}

extension KeyReader {
    /// Reads past one component of any type, by its type code (KeyEncoding.md): for keys whose
    /// leading components are not needed, such as an index entry before its primary key.
    @inlinable
    public mutating func skipComponent() throws(KeyDecodingError) {
        let start = offset
        let code = try readByte()
        switch code {
        case TypeCode.null, TypeCode.false, TypeCode.true: return
        case TypeCode.bytes, TypeCode.string:
            // Escaped bytes up to a 00 that is not followed by FF.
            while true {
                let byte = try readByte()
                if byte == 0 {
                    if offset < bytes.count && bytes[offset] == 0xFF { offset += 1 } else { return }
                }
            }
        case (TypeCode.integerZero - 8)...(TypeCode.integerZero + 8):
            _ = try read(count: Int(code > TypeCode.integerZero ? code - TypeCode.integerZero : TypeCode.integerZero - code))
        case TypeCode.float: _ = try read(count: 4)
        case TypeCode.double, TypeCode.date: _ = try read(count: 8)
        case TypeCode.uuid: _ = try read(count: 16)
        default: throw KeyDecodingError(offset: start, reason: .unexpectedTypeCode(code, expected: "a component"))
        }
    }
}
