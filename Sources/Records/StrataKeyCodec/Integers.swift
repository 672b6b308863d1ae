/// Integers of every width share one encoding, so a key written as `Int32` reads as `Int64` and
/// sorts among them: zero is `14`; a positive value needing n bytes is `14+n` and its n
/// big-endian bytes; a negative one is `14-n` and the ones' complement of its magnitude's
/// n bytes. Shorter encodings of the same sign sort by their code, so order holds across lengths.
extension KeyWriter {
    /// Appends an integer given as sign and magnitude, in the shortest form: `14` for zero (a zero
    /// magnitude is zero whatever `negative` says), else `14+n` or `14-n` and the magnitude's n
    /// big-endian bytes, ones'-complemented when `negative`.
    @inlinable
    public mutating func writeInteger(negative: Bool, magnitude: UInt64) {
        if magnitude == 0 { return write(TypeCode.integerZero) }
        let n = (64 - magnitude.leadingZeroBitCount + 7) / 8
        let shown = negative ? ~magnitude : magnitude
        write(negative ? TypeCode.integerZero - UInt8(n) : TypeCode.integerZero + UInt8(n))
        for i in (0..<n).reversed() { write(UInt8(truncatingIfNeeded: shown >> (UInt64(i) * 8))) }
    }
}

extension KeyReader {
    /// Reads an integer as sign and magnitude; rejects encodings the writer never produces.
    @inlinable
    public mutating func readInteger() throws(KeyDecodingError) -> (negative: Bool, magnitude: UInt64) {
        let start = offset
        let code = try readByte()
        guard code >= TypeCode.integerZero - 8 && code <= TypeCode.integerZero + 8 else {
            throw KeyDecodingError(offset: start, reason: .unexpectedTypeCode(code, expected: "an integer"))
        }
        if code == TypeCode.integerZero { return (false, 0) }
        let negative = code < TypeCode.integerZero
        let n = Int(negative ? TypeCode.integerZero - code : code - TypeCode.integerZero)
        let raw = try read(count: n)
        var value: UInt64 = 0
        for byte in raw { value = value << 8 | UInt64(negative ? ~byte : byte) }
        // The shortest form only: the leading byte of the magnitude is never zero.
        guard value >> (UInt64(n - 1) * 8) != 0 else {
            throw KeyDecodingError(offset: start, reason: .nonCanonical("integer with a leading zero byte"))
        }
        return (negative, value)
    }
}

extension KeyComponent where Self: FixedWidthInteger {
    @inlinable
    public func encode(to key: inout KeyWriter) {
        key.writeInteger(negative: self < 0, magnitude: UInt64(truncatingIfNeeded: self.magnitude))
    }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> Self {
        let start = key.offset
        let (negative, magnitude) = try key.readInteger()
        if negative {
            // -magnitude fits when magnitude <= |min| (e.g. 128 for Int8); unsigned types hold none.
            guard Self.isSigned, magnitude <= UInt64(truncatingIfNeeded: Self.min.magnitude) else {
                throw KeyDecodingError(offset: start, reason: .overflow("\(Self.self)"))
            }
            return Self(truncatingIfNeeded: 0 &- magnitude)
        }
        guard magnitude <= UInt64(truncatingIfNeeded: Self.max) else {
            throw KeyDecodingError(offset: start, reason: .overflow("\(Self.self)"))
        }
        return Self(truncatingIfNeeded: magnitude)
    }
}

extension Int: KeyComponent {}
extension Int8: KeyComponent {}
extension Int16: KeyComponent {}
extension Int32: KeyComponent {}
extension Int64: KeyComponent {}
extension UInt: KeyComponent {}
extension UInt8: KeyComponent {}
extension UInt16: KeyComponent {}
extension UInt32: KeyComponent {}
extension UInt64: KeyComponent {}
