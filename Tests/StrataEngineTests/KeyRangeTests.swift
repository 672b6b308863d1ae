import StrataEngine
import Testing

@Suite("KeyRange")
struct KeyRangeTests {
    @Test("prefix successor drops trailing FF bytes")
    func prefixSuccessor() {
        #expect(KeyRange.prefixSuccessor([0x61]) == [0x62])
        #expect(KeyRange.prefixSuccessor([0x61, 0xFF]) == [0x62])
        #expect(KeyRange.prefixSuccessor([0x61, 0xFE, 0xFF, 0xFF]) == [0x61, 0xFF])
        #expect(KeyRange.prefixSuccessor([0xFF, 0xFF]) == nil)
        #expect(KeyRange.prefixSuccessor([]) == nil)
    }

    @Test("resolution: empty bounds, long bounds, inverted ranges")
    func resolution() {
        #expect(KeyRange(lower: .inclusive([])).resolved() == ResolvedRange())
        #expect(KeyRange(upper: .exclusive([])).resolved() == nil)
        #expect(KeyRange.closed([2], [1]).resolved() == nil)
        #expect(KeyRange.halfOpen([1], [1]).resolved() == nil)
        #expect(KeyRange.closed([1], [1]).resolved() != nil)
        let long = [UInt8](repeating: 7, count: 600)
        let p = Array(long.prefix(511))
        // k >= b and k > b both become k > p; k <= b and k < b both become k <= p.
        #expect(KeyRange(lower: .inclusive(long)).resolved()?.lower == .init(key: p, inclusive: false))
        #expect(KeyRange(lower: .exclusive(long)).resolved()?.lower == .init(key: p, inclusive: false))
        #expect(KeyRange(upper: .exclusive(long)).resolved()?.upper == .init(key: p, inclusive: true))
        #expect(KeyRange(upper: .inclusive(long)).resolved()?.upper == .init(key: p, inclusive: true))
        // [b, b) with a long b holds no key.
        #expect(KeyRange(lower: .inclusive(long), upper: .exclusive(long)).resolved() == nil)
    }

    @Test("bytewise comparison puts a prefix first and compares bytes unsigned")
    func bytewise() {
        let ordered: [[UInt8]] = [[], [0], [0x61], [0x61, 0], [0x61, 0x61], [0x62], [0x80], [0xFF]]
        for (i, a) in ordered.enumerated() {
            for (j, b) in ordered.enumerated() {
                #expect(Bytewise.compare(a, b).signum() == (i < j ? -1 : i == j ? 0 : 1))
                let raw = a.withUnsafeBytes { ra in b.withUnsafeBytes { rb in Bytewise.compare(ra, rb) } }
                #expect(raw.signum() == (i < j ? -1 : i == j ? 0 : 1))
            }
        }
    }
}
