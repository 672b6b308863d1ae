/// Floating-point values: the IEEE bits big-endian, with every bit flipped when the sign bit is
/// set and only the sign bit flipped otherwise, so that unsigned byte order is numeric order.
///
/// Two choices make keys agree with Swift's `==`:
/// - `-0.0` is stored as `+0.0` (they are equal, so they are one key);
/// - every NaN is stored as the one canonical quiet NaN, which sorts after `+infinity`
///   (PostgreSQL's rule). It reads back as `.nan`.
extension KeyWriter {
    @inlinable
    mutating func writeOrderedBits<B: FixedWidthInteger & UnsignedInteger>(_ bits: B) {
        let signBit: B = 1 << (B.bitWidth - 1)
        let ordered = bits & signBit != 0 ? ~bits : bits | signBit
        for i in (0..<(B.bitWidth / 8)).reversed() { write(UInt8(truncatingIfNeeded: ordered >> (i * 8))) }
    }
}

extension KeyReader {
    @inlinable
    mutating func readOrderedBits<B: FixedWidthInteger & UnsignedInteger>(_: B.Type) throws(KeyDecodingError) -> B {
        var ordered: B = 0
        for byte in try read(count: B.bitWidth / 8) { ordered = ordered << 8 | B(byte) }
        let signBit: B = 1 << (B.bitWidth - 1)
        return ordered & signBit != 0 ? ordered & ~signBit : ~ordered
    }
}

extension Double: KeyComponent {
    /// The value stored for `self`: `+0.0` for `-0.0`, the canonical NaN for any NaN.
    public var canonicalKeyValue: Double { isNaN ? .nan : (self == 0 ? 0 : self) }

    @inlinable
    public func encode(to key: inout KeyWriter) {
        key.write(TypeCode.double)
        key.writeOrderedBits(canonicalKeyValue.bitPattern)
    }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> Double {
        try key.expect(TypeCode.double, for: "a Double")
        return try canonical(Double(bitPattern: try key.readOrderedBits(UInt64.self)), key)
    }
}

extension Float: KeyComponent {
    /// The value stored for `self`: `+0.0` for `-0.0`, the canonical NaN for any NaN.
    public var canonicalKeyValue: Float { isNaN ? .nan : (self == 0 ? 0 : self) }

    @inlinable
    public func encode(to key: inout KeyWriter) {
        key.write(TypeCode.float)
        key.writeOrderedBits(canonicalKeyValue.bitPattern)
    }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> Float {
        try key.expect(TypeCode.float, for: "a Float")
        return try canonical(Float(bitPattern: try key.readOrderedBits(UInt32.self)), key)
    }
}

/// Refuses the floating-point encodings the writer never produces (-0.0, other NaNs), so a
/// decoded key always re-encodes to the same bytes.
@inlinable
func canonical<F: BinaryFloatingPoint>(_ value: F, _ key: KeyReader) throws(KeyDecodingError) -> F {
    let isCanonical = value.isNaN
        ? value.significandBitPattern == F.nan.significandBitPattern && value.sign == .plus
        : !(value == 0 && value.sign == .minus)
    guard isCanonical else { throw key.error(.nonCanonical("\(F.self) \(value.isNaN ? "NaN payload" : "-0.0")")) }
    return value
}
