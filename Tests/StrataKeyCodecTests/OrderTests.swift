import Foundation
import StrataKeyCodec
import Testing

/// Pairwise order of edge values: each list is in ascending order, so for every i < j the
/// encodings must sort i before j, and every value must round-trip.
@Suite("Key codec: pairwise order of edge values")
struct OrderTests {
    static func checkAscending<C: KeyComponent>(_ values: [C], same: (C, C) -> Bool, _ type: String) {
        let keys = values.map(encoded)
        for i in keys.indices {
            for j in keys.indices where i < j {
                #expect(bytesLess(keys[i], keys[j]), "\(type): \(values[i]) should sort before \(values[j])")
            }
            let back = try? decoded(keys[i], as: C.self)
            #expect(back.map { same($0, values[i]) } == true, "\(type): \(values[i]) did not round-trip")
        }
    }

    static func integerEdges<T: FixedWidthInteger>(_: T.Type) -> [T] {
        var values: Set<T> = [T.min, T.max, 0, 1, T.min + 1, T.max - 1]
        if T.isSigned { values.formUnion([-1, -2]) }
        for shift in 0..<(T.bitWidth - 1) {
            let power: T = 1 << shift
            let around: [T] = [power - 1, power, power + 1]
            values.formUnion(around)
            if T.isSigned {
                let negatives: [T] = [0 - power, 0 - power - 1, 0 - power + 1]
                values.formUnion(negatives)
            }
        }
        return values.sorted()
    }

    @Test("integers of every width")
    func integers() {
        Self.checkAscending(Self.integerEdges(Int8.self), same: ==, "Int8")
        Self.checkAscending(Self.integerEdges(Int16.self), same: ==, "Int16")
        Self.checkAscending(Self.integerEdges(Int32.self), same: ==, "Int32")
        Self.checkAscending(Self.integerEdges(Int64.self), same: ==, "Int64")
        Self.checkAscending(Self.integerEdges(Int.self), same: ==, "Int")
        Self.checkAscending(Self.integerEdges(UInt8.self), same: ==, "UInt8")
        Self.checkAscending(Self.integerEdges(UInt16.self), same: ==, "UInt16")
        Self.checkAscending(Self.integerEdges(UInt32.self), same: ==, "UInt32")
        Self.checkAscending(Self.integerEdges(UInt64.self), same: ==, "UInt64")
        Self.checkAscending(Self.integerEdges(UInt.self), same: ==, "UInt")
    }

    @Test("integers keep one order across widths")
    func acrossWidths() {
        #expect(encoded(Int8(-5)) == encoded(Int64(-5)))
        #expect(encoded(UInt16(300)) == encoded(300))
        #expect(bytesLess(encoded(Int8.max), encoded(UInt64(128))))
    }

    @Test("doubles: -inf, negatives, subnormals, zero, positives, +inf, NaN")
    func doubles() {
        let values: [Double] = [
            -.infinity, -.greatestFiniteMagnitude, -1e300, -2, -1, -.ulpOfOne, -Double.leastNormalMagnitude,
            -Double.leastNonzeroMagnitude, 0, Double.leastNonzeroMagnitude, Double.leastNormalMagnitude / 2,
            Double.leastNormalMagnitude, .ulpOfOne, 0.1, 1, 1 + .ulpOfOne, 2, 1e300, .greatestFiniteMagnitude, .infinity, .nan,
        ]
        Self.checkAscending(values, same: { $0 == $1 || ($0.isNaN && $1.isNaN) }, "Double")
    }

    @Test("floats: -inf, negatives, subnormals, zero, positives, +inf, NaN")
    func floats() {
        let values: [Float] = [
            -.infinity, -.greatestFiniteMagnitude, -1, -Float.leastNormalMagnitude, -Float.leastNonzeroMagnitude, 0,
            Float.leastNonzeroMagnitude, Float.leastNormalMagnitude, 1, .greatestFiniteMagnitude, .infinity, .nan,
        ]
        Self.checkAscending(values, same: { $0 == $1 || ($0.isNaN && $1.isNaN) }, "Float")
    }

    @Test("-0.0 is +0.0 and every NaN is one key")
    func canonicalFloats() throws {
        #expect(encoded(-0.0) == encoded(0.0))
        #expect(try decoded(encoded(-0.0), as: Double.self).sign == .plus)
        #expect(encoded(Double(nan: 0x1234, signaling: false)) == encoded(Double.nan))
        #expect(encoded(-Double.nan) == encoded(Double.nan))
        #expect(encoded(Float(-0.0)) == encoded(Float(0)))
    }

    @Test("strings: empty, NUL, prefixes, non-ASCII, in Unicode scalar order")
    func strings() {
        let values = ["", "\u{0}", "\u{0}\u{0}", "\u{1}", "A", "Z", "a", "a\u{0}", "a\u{0}\u{0}", "a\u{1}", "aa", "ab", "b",
                      "\u{7F}", "\u{80}", "é", "\u{FFFF}", "😀", "\u{10FFFF}"]
        Self.checkAscending(values, same: { Array($0.utf8) == Array($1.utf8) }, "String")
    }

    @Test("Unicode scalar order differs from Swift's String < and the codec follows the scalars")
    func notSwiftOrder() {
        // Swift's < compares by grapheme clusters under canonical equivalence; the codec by scalars.
        let a = "\u{FB01}"       // LATIN SMALL LIGATURE FI
        let b = "\u{1F600}"      // an emoji, a larger scalar
        #expect(bytesLess(encoded(a), encoded(b)))
        #expect(encoded("é") != encoded("e\u{301}"), "canonically equivalent strings are two keys")
        #expect("é" == "e\u{301}", "though Swift calls them equal")
    }

    @Test("byte strings sort lexicographically, not by length")
    func bytes() {
        let values: [[UInt8]] = [[], [0x00], [0x00, 0x00], [0x00, 0xFF], [0x01], [0x01, 0x00], [0x7F], [0x80], [0xFF], [0xFF, 0x00], [0xFF, 0xFF]]
        Self.checkAscending(values, same: ==, "[UInt8]")
        Self.checkAscending(values.map { Data($0) }, same: ==, "Data")
        #expect(bytesLess(encoded([UInt8]([0x01, 0x02, 0x03])), encoded([UInt8]([0x02]))), "longer but smaller first byte sorts first")
    }

    @Test("dates: negative before positive, sub-millisecond precision kept")
    func dates() throws {
        let values = [-1e12, -1, -0.000_001, 0, 0.000_000_1, 0.000_001, 1, 1e9, 1e12].map { Date(timeIntervalSinceReferenceDate: $0) }
        Self.checkAscending(values, same: ==, "Date")
        let precise = Date(timeIntervalSince1970: 1_700_000_000.123_456_7)
        #expect(try decoded(encoded(precise), as: Date.self) == precise)
    }

    @Test("booleans, UUIDs, enums, optionals (nil first)")
    func others() {
        Self.checkAscending([false, true], same: ==, "Bool")
        Self.checkAscending(["00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000001",
                             "7FFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "80000000-0000-0000-0000-000000000000",
                             "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"].map { UUID(uuidString: $0)! }, same: ==, "UUID")
        Self.checkAscending(Suit.allCases, same: ==, "Suit (by raw String)")
        Self.checkAscending([Rank.two, .ten, .ace], same: ==, "Rank (by raw Int)")
        Self.checkAscending([nil, Int.min, -1, 0, 1, Int.max], same: ==, "Int?")
        Self.checkAscending([nil, "", "\u{0}", "a"], same: ==, "String?")
        Self.checkAscending([nil, -Double.infinity, 0, .nan], same: { $0 == $1 || ($0?.isNaN == true && $1?.isNaN == true) }, "Double?")
    }
}
