@testable import StrataEngine
import Testing

@Suite("Pending writes (the core's overlay)")
struct PendingWritesTests {
    /// A small deterministic generator (the tests must not depend on the conformance kit).
    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    @Test("random puts, overwrites and deletes of 20,000 keys read back as a dictionary model, in key order", arguments: [1, 2, 3] as [UInt64])
    func matchesModel(seed: UInt64) {
        var random = Random(state: seed)
        let overlay = PendingWrites()
        var model: [[UInt8]: [UInt8]?] = [:]
        #expect(overlay.isEmpty)
        // Keys of 1 to 40 bytes over a small alphabet: many share prefixes, and lengths cross the
        // hash's 8-byte steps.
        func key() -> [UInt8] { (0..<(1 + random.next(40))).map { _ in UInt8(random.next(3)) } }
        var keys: [[UInt8]] = []
        for _ in 0..<20_000 {
            let k = keys.isEmpty || random.next(3) > 0 ? key() : keys[random.next(keys.count)]
            keys.append(k)
            if random.next(5) == 0 {
                k.withUnsafeBytes { overlay.set($0, nil) }
                model[k] = .some(nil)
            } else {
                let v = (0..<random.next(300)).map { _ in UInt8(random.next(256)) }
                k.withUnsafeBytes { key in v.withUnsafeBytes { overlay.set(key, $0) } }
                model[k] = .some(v)
            }
        }
        for (k, expected) in model {
            let found: [UInt8]?? = k.withUnsafeBytes { key in
                switch overlay.lookup(key) {
                case .untouched: nil
                case .deleted: .some(nil)
                case let .value(v): .some(Array(v))
                }
            }
            #expect(found == expected, "key \(k)")
        }
        #expect([UInt8(9), 9].withUnsafeBytes { if case .untouched = overlay.lookup($0) { true } else { false } })
        let slots = overlay.sortedSlots()
        let inOrder = slots.map { Array(overlay.key(Int($0))) }
        #expect(inOrder == model.keys.sorted { $0.lexicographicallyPrecedes($1) })
        for slot in slots {
            #expect(overlay.value(Int(slot)).map { Array($0) } == model[Array(overlay.key(Int(slot)))]!)
        }
        // Binary search over the sorted slots.
        let bound = inOrder[inOrder.count / 2]
        #expect(overlay.firstIndex(in: slots, atOrAbove: bound, inclusive: true) == inOrder.count / 2)
        #expect(overlay.firstIndex(in: slots, atOrAbove: bound, inclusive: false) == inOrder.count / 2 + 1)
    }
}
