import Foundation
import StrataConformance
import StrataKeyCodec
import Testing

@Suite("Key codec: bad bytes throw, never trap")
struct DecodingErrorTests {
    @Test("every truncation of every spec vector throws a typed error, unless it is itself a shorter key")
    func truncations() {
        var threw = 0
        for (name, bytes, _) in VectorTests.vectors where bytes.count > 1 {
            for cut in 0..<bytes.count {
                let prefix = Array(bytes.prefix(cut))
                // Decode as the vector's own schema: several components for composites.
                do {
                    try Self.decodeLikeVector(name, prefix)
                    // Only a cut at an escape's 00 leaves a complete, shorter string: "a" of "a NUL b".
                    #expect(prefix.last == 0x00 && bytes[cut] == 0xFF, "\(name) cut at \(cut) decoded")
                } catch is KeyDecodingError {
                    threw += 1
                } catch {
                    Issue.record("\(name) cut at \(cut): not a KeyDecodingError: \(error)")
                }
            }
        }
        #expect(threw > 150)
    }

    static func decodeLikeVector(_ name: String, _ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var reader = KeyReader(raw)
            switch name {
            case _ where name.hasPrefix("(\"x\""): _ = try (reader.read(String.self), reader.read(Int?.self), reader.read(Int.self))
            case _ where name.hasPrefix("("): _ = try (reader.read(String.self), reader.read(String.self))
            case _ where name.hasPrefix("Int") || name.hasPrefix("UInt") || name.contains("raw Int"): _ = try reader.read(Int64.self)
            case _ where name.hasPrefix("String") || name.contains("raw String"): _ = try reader.read(String.self)
            case _ where name.hasPrefix("bytes") || name.hasPrefix("Data"): _ = try reader.read([UInt8].self)
            case _ where name.hasPrefix("Double"): _ = try reader.read(Double.self)
            case _ where name.hasPrefix("Float"): _ = try reader.read(Float.self)
            case _ where name.hasPrefix("UUID"): _ = try reader.read(UUID.self)
            case _ where name.hasPrefix("Date"): _ = try reader.read(Date.self)
            default: _ = try reader.read(Int?.self)
            }
            try reader.finish()
        }
    }

    @Test("errors name the offset and the reason")
    func messages() throws {
        let error = try #require(throws: KeyDecodingError.self) { try decoded(hexBytes("02 61 62"), as: String.self) }
        #expect(error == KeyDecodingError(offset: 3, reason: .truncated))
        let wrongType = try #require(throws: KeyDecodingError.self) { try decoded(hexBytes("15 01"), as: String.self) }
        #expect(wrongType.description == "key decoding failed at byte 0: type code 15 where a String was expected")
        #expect(throws: KeyDecodingError(offset: 0, reason: .overflow("Int8"))) { try decoded(encoded(128), as: Int8.self) }
        #expect(throws: KeyDecodingError(offset: 0, reason: .overflow("UInt32"))) { try decoded(encoded(-1), as: UInt32.self) }
        #expect(throws: KeyDecodingError(offset: 0, reason: .nonCanonical("integer with a leading zero byte"))) { try decoded(hexBytes("16 00 05"), as: Int.self) }
        #expect(throws: KeyDecodingError(offset: 1, reason: .invalidUTF8)) { try decoded(hexBytes("02 C3 00"), as: String.self) }
        // A truncated 4-byte sequence repairs to one U+FFFD of the same length (3 bytes): the
        // bytes, not only the length, must be compared.
        #expect(throws: KeyDecodingError(offset: 1, reason: .invalidUTF8)) { try decoded(hexBytes("02 F0 9F 98 00"), as: String.self) }
        for invalid in ["F0 9F 98", "ED A0 80", "C0 AF", "FF", "61 80 62"] {
            #expect(hexBytes(invalid).withUnsafeBytes { String.strataValidating($0) } == nil, "\(invalid)")
        }
        for valid in ["", "61", "EF BF BD", "F0 9F 98 80 00 7A", "E2 82 AC"] {
            #expect(hexBytes(valid).withUnsafeBytes { String.strataValidating($0) } == String(validating: hexBytes(valid), as: UTF8.self), "\(valid)")
        }
        #expect(throws: KeyDecodingError(offset: 2, reason: .trailingBytes(1))) { try decoded(hexBytes("15 01 00"), as: Int.self) }
        #expect(throws: KeyDecodingError(offset: 0, reason: .unknownRawValue("Suit"))) { try decoded(encoded("joker"), as: Suit.self) }
        #expect(throws: KeyDecodingError(offset: 9, reason: .nonCanonical("Double -0.0"))) { try decoded(hexBytes("21 7F FF FF FF FF FF FF FF"), as: Double.self) }
        #expect(throws: KeyDecodingError(offset: 9, reason: .nonCanonical("Double NaN payload"))) { try decoded(hexBytes("21 FF F8 00 00 00 00 00 01"), as: Double.self) }
    }

    @Test("random garbage either throws or decodes to a value that re-encodes to the same bytes")
    func garbage() {
        var rng = SeededRandom(seed: 99)
        var decodedCount = 0
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...12, using: &rng)).map { _ in
                [0x00, 0x01, 0x02, 0x13, 0x14, 0x15, 0x21, 0xFF, UInt8.random(in: 0...255, using: &rng)].randomElement(using: &rng)!
            }
            if let value = try? decoded(bytes, as: String.self) { decodedCount += 1; #expect(encoded(value) == bytes) }
            if let value = try? decoded(bytes, as: Int64.self) { decodedCount += 1; #expect(encoded(value) == bytes) }
            if let value = try? decoded(bytes, as: Double.self) { decodedCount += 1; #expect(encoded(value) == bytes) }
            if let value = try? decoded(bytes, as: [UInt8].self) { decodedCount += 1; #expect(encoded(value) == bytes) }
            if let value = try? decoded(bytes, as: Int?.self) { decodedCount += 1; #expect(encoded(value) == bytes) }
        }
        #expect(decodedCount > 100, "the generator should hit valid encodings too")
    }
}
