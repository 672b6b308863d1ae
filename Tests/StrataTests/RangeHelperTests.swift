import StrataEngine
import StrataKeyCodec
import StrataRecords
import Testing

@Suite("Component ranges over the key codec")
struct RangeHelperTests {
    /// Keys of (String, Int, Bool) with edge values, FF-heavy integers included.
    static let keys: [(String, Int, Bool)] = {
        var result: [(String, Int, Bool)] = []
        for a in ["", "a", "a\u{0}", "ab", "b"] {
            for b in [Int.min, -256, -1, 0, 1, 255, 256, Int.max] {
                for c in [false, true] { result.append((a, b, c)) }
            }
        }
        return result
    }()

    static func encodedKey(_ k: (String, Int, Bool)) -> [UInt8] { KeyCodec.encode(k.0, k.1, k.2) }

    @Test("a prefix of leading components holds exactly the keys that start with them (not (\"a\\0\") for (\"a\"))")
    func prefixes() {
        for a in ["", "a", "a\u{0}", "ab"] {
            let range = KeyRange.components(prefix: KeyCodec.encode(a))
            let inside = Self.keys.filter { range.contains(Self.encodedKey($0)) }
            #expect(inside.count == 16 && inside.allSatisfy { $0.0 == a }, "prefix \(a.debugDescription)")
        }
        for b in [Int.max, Int.min, -1] {
            let range = KeyRange.components(prefix: KeyCodec.encode("a", b))
            let inside = Self.keys.filter { range.contains(Self.encodedKey($0)) }
            #expect(inside.count == 2 && inside.allSatisfy { $0.0 == "a" && $0.1 == b }, "prefix (a, \(b)) — its encoding may end in FF")
        }
    }

    @Test("every comparison on the second component of a three-component key")
    func comparisons() {
        let pivots = [Int.min, -256, -1, 0, 255, Int.max]
        typealias Check = (String, (Int) -> ComponentBound, (Int, Int) -> Bool)
        let checks: [Check] = [
            ("<", { .below(KeyCodec.encode($0), inclusive: false) }, { $0 < $1 }),
            ("<=", { .below(KeyCodec.encode($0), inclusive: true) }, { $0 <= $1 }),
            (">", { .above(KeyCodec.encode($0), inclusive: false) }, { $0 > $1 }),
            (">=", { .above(KeyCodec.encode($0), inclusive: true) }, { $0 >= $1 }),
        ]
        for pivot in pivots {
            for (name, bound, holds) in checks {
                let range = KeyRange.components(prefix: KeyCodec.encode("a"), bound(pivot))
                let inside = Self.keys.filter { range.contains(Self.encodedKey($0)) }.map { "\($0)" }
                let expected = Self.keys.filter { $0.0 == "a" && holds($0.1, pivot) }.map { "\($0)" }
                #expect(inside == expected, "b \(name) \(pivot)")
            }
            let closed = KeyRange.components(prefix: KeyCodec.encode("a"), .above(KeyCodec.encode(-1), inclusive: true), .below(KeyCodec.encode(pivot), inclusive: true))
            let inside = Self.keys.filter { closed.contains(Self.encodedKey($0)) }.map { "\($0)" }
            #expect(inside == Self.keys.filter { $0.0 == "a" && $0.1 >= -1 && $0.1 <= pivot }.map { "\($0)" }, "-1 <= b <= \(pivot)")
        }
    }
}
