import Foundation

/// Strings and byte strings: a type code, the bytes with every `00` written as `00 FF`, then a
/// `00` terminator. The escape keeps NUL bytes inside a component; the terminator sorts below
/// every byte that can follow it, so ("a", "z") sorts before ("ab", "a") and a string sorts
/// before its extensions.
///
/// Strings are stored as their UTF-8 bytes, so they sort in Unicode scalar order, which is not
/// Swift's `String <`. They are not normalized: "é" (U+00E9) and "e\u{301}" are two keys, though
/// Swift calls them equal. Normalize before storing (e.g. Foundation's
/// `precomposedStringWithCanonicalMapping`) when equivalent spellings must meet.
extension KeyWriter {
    /// Appends `content` with every `00` written as `00 FF`, then the `00` terminator: the
    /// content of a string or bytes component, whose type code the caller writes first.
    @inlinable
    public mutating func writeEscaped<S: Sequence<UInt8>>(_ content: S) {
        for byte in content {
            write(byte)
            if byte == 0 { write(0xFF) }
        }
        write(0x00)
    }
}

extension KeyReader {
    /// Reads escaped bytes up to and including the terminator; returns them unescaped.
    @inlinable
    public mutating func readEscaped() throws(KeyDecodingError) -> [UInt8] {
        var result: [UInt8] = []
        while true {
            let byte = try readByte()
            if byte != 0 {
                result.append(byte)
                continue
            }
            // A 00 followed by FF is an escaped NUL; otherwise it ends the component.
            if offset < bytes.count && bytes[offset] == 0xFF {
                _ = try readByte()
                result.append(0)
            } else {
                return result
            }
        }
    }
}

extension String: KeyComponent {
    @inlinable
    public func encode(to key: inout KeyWriter) {
        key.write(TypeCode.string)
        key.writeEscaped(utf8)
    }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> String {
        try key.expect(TypeCode.string, for: "a String")
        let start = key.offset
        let bytes = try key.readEscaped()
        guard let string = bytes.withUnsafeBytes({ String.strataValidating($0) }) else {
            throw KeyDecodingError(offset: start, reason: .invalidUTF8)
        }
        return string
    }
}

extension Array: KeyComponent where Element == UInt8 {
    @inlinable
    public func encode(to key: inout KeyWriter) {
        key.write(TypeCode.bytes)
        key.writeEscaped(self)
    }

    @inlinable
    public static func decode(from key: inout KeyReader) throws(KeyDecodingError) -> [UInt8] {
        try key.expect(TypeCode.bytes, for: "bytes")
        return try key.readEscaped()
    }
}

extension String {
    /// `bytes` as a String when they are valid UTF-8, else nil: the same answer as
    /// `String(validating:as:)`, in half its time for a 100-byte field (that initializer runs a
    /// generic path for raw buffers). Decoding repairs invalid bytes, so the decoded string is
    /// compared with the input: any repair makes them differ.
    @inlinable
    package static func strataValidating(_ bytes: UnsafeRawBufferPointer) -> String? {
        var string = bytes.withMemoryRebound(to: UInt8.self) { String(decoding: $0, as: UTF8.self) }
        let same = string.withUTF8 { utf8 in
            utf8.count == bytes.count && (bytes.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
        return same ? string : nil
    }
}
