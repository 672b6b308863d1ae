import Foundation
import StrataKeyCodec
import Testing

/// One test vector per row of KeyEncoding.md's table. Keep the two in step.
@Suite("Key codec: the spec's test vectors")
struct VectorTests {
    static let vectors: [(String, [UInt8], [UInt8])] = [
        ("Int 0", encoded(0), hexBytes("14")),
        ("Int 1", encoded(1), hexBytes("15 01")),
        ("Int 255", encoded(255), hexBytes("15 FF")),
        ("Int 256", encoded(256), hexBytes("16 01 00")),
        ("Int -1", encoded(-1), hexBytes("13 FE")),
        ("Int -255", encoded(-255), hexBytes("13 00")),
        ("Int -256", encoded(-256), hexBytes("12 FE FF")),
        ("Int64.max", encoded(Int64.max), hexBytes("1C 7F FF FF FF FF FF FF FF")),
        ("Int64.min", encoded(Int64.min), hexBytes("0C 7F FF FF FF FF FF FF FF")),
        ("UInt64.max", encoded(UInt64.max), hexBytes("1C FF FF FF FF FF FF FF FF")),
        ("Int8 -128", encoded(Int8(-128)), hexBytes("13 7F")),
        ("UInt8 200", encoded(UInt8(200)), hexBytes("15 C8")),
        ("false", encoded(false), hexBytes("26")),
        ("true", encoded(true), hexBytes("27")),
        ("String empty", encoded(""), hexBytes("02 00")),
        ("String a", encoded("a"), hexBytes("02 61 00")),
        ("String a NUL b", encoded("a\u{0}b"), hexBytes("02 61 00 FF 62 00")),
        ("String é", encoded("é"), hexBytes("02 C3 A9 00")),
        ("String e + U+0301", encoded("e\u{301}"), hexBytes("02 65 CC 81 00")),
        ("bytes empty", encoded([UInt8]()), hexBytes("01 00")),
        ("bytes 00 FF", encoded([UInt8]([0x00, 0xFF])), hexBytes("01 00 FF FF 00")),
        ("Data 01 02", encoded(Data([1, 2])), hexBytes("01 01 02 00")),
        ("Double 0.0", encoded(0.0), hexBytes("21 80 00 00 00 00 00 00 00")),
        ("Double -0.0", encoded(-0.0), hexBytes("21 80 00 00 00 00 00 00 00")),
        ("Double 1.0", encoded(1.0), hexBytes("21 BF F0 00 00 00 00 00 00")),
        ("Double -1.0", encoded(-1.0), hexBytes("21 40 0F FF FF FF FF FF FF")),
        ("Double +inf", encoded(Double.infinity), hexBytes("21 FF F0 00 00 00 00 00 00")),
        ("Double -inf", encoded(-Double.infinity), hexBytes("21 00 0F FF FF FF FF FF FF")),
        ("Double NaN", encoded(Double.nan), hexBytes("21 FF F8 00 00 00 00 00 00")),
        ("Double signaling NaN", encoded(Double.signalingNaN), hexBytes("21 FF F8 00 00 00 00 00 00")),
        ("Float 1.0", encoded(Float(1)), hexBytes("20 BF 80 00 00")),
        ("Float -2.5", encoded(Float(-2.5)), hexBytes("20 3F DF FF FF")),
        ("UUID", encoded(UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!),
         hexBytes("30 00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF")),
        ("Date reference date", encoded(Date(timeIntervalSinceReferenceDate: 0)), hexBytes("33 80 00 00 00 00 00 00 00")),
        ("Date 1.5 s after", encoded(Date(timeIntervalSinceReferenceDate: 1.5)), hexBytes("33 BF F8 00 00 00 00 00 00")),
        ("Date 1 s before", encoded(Date(timeIntervalSinceReferenceDate: -1)), hexBytes("33 40 0F FF FF FF FF FF FF")),
        ("Optional nil", encoded(Int?.none), hexBytes("00")),
        ("Optional 5", encoded(Int?.some(5)), hexBytes("15 05")),
        ("enum by raw String", encoded(Suit.hearts), hexBytes("02 68 65 61 72 74 73 00")),
        ("enum by raw Int", encoded(Rank.ace), hexBytes("15 0E")),
        ("(\"a\", \"z\")", KeyCodec.encode("a", "z"), hexBytes("02 61 00 02 7A 00")),
        ("(\"ab\", \"a\")", KeyCodec.encode("ab", "a"), hexBytes("02 61 62 00 02 61 00")),
        ("(\"x\", nil, 7)", KeyCodec.encode("x", Int?.none, 7), hexBytes("02 78 00 00 15 07")),
    ]

    @Test("every vector encodes to the spec's bytes", arguments: vectors.map { $0.0 })
    func vector(name: String) {
        let (_, actual, expected) = Self.vectors.first { $0.0 == name }!
        #expect(actual == expected, "\(name)")
    }

    @Test("the table in KeyEncoding.md lists exactly these vectors")
    func specTable() throws {
        let spec = try String(contentsOfFile: #filePath.replacingOccurrences(of: "Tests/StrataKeyCodecTests/VectorTests.swift", with: "Sources/Records/StrataKeyCodec/StrataKeyCodec.docc/KeyEncoding.md"), encoding: .utf8)
        for (name, _, bytes) in Self.vectors {
            let hex = bytes.map { String(format: "%02X", $0) }.joined(separator: " ")
            #expect(spec.contains("| \(name) |") && spec.contains("`\(hex)`"), "KeyEncoding.md lacks the row \(name) | \(hex)")
        }
    }

    @Test("the composite pitfall: (\"a\", \"z\") sorts before (\"ab\", \"a\")")
    func compositeOrder() {
        #expect(bytesLess(KeyCodec.encode("a", "z"), KeyCodec.encode("ab", "a")))
    }

    @Test("the codec has a name and version for manifests")
    func identity() {
        #expect(KeyCodec.name == "strata-tuple")
        #expect(KeyCodec.version == 1)
    }
}
