import Foundation
import StrataConformance
import StrataKeyCodec
import Testing

/// Random round-trip and order: thousands of values per type from generators over the whole
/// domain (full integer ranges, every double bit pattern, every Unicode scalar), checked
/// pairwise against an order written without the codec and never with Swift's String <.
@Suite("Key codec: random round-trip and order")
struct RandomTests {
    static let count = 3_000

    /// Checks round-trip, and that bytewise order of encodings agrees with `less` on
    /// neighbouring pairs after sorting by `less` plus random pairs.
    static func check<C: KeyComponent>(_ values: [C], less: (C, C) -> Bool, same: (C, C) -> Bool, _ type: String, rng: inout SeededRandom) {
        var failures = 0
        for value in values where failures < 5 {
            let back = try? decoded(encoded(value), as: C.self)
            if back.map({ same($0, value) }) != true { failures += 1; Issue.record("\(type): \(value) did not round-trip") }
        }
        let sorted = values.sorted(by: less)
        var pairs = zip(sorted, sorted.dropFirst()).map { ($0, $1) }
        for _ in 0..<values.count { pairs.append((values.randomElement(using: &rng)!, values.randomElement(using: &rng)!)) }
        for (a, b) in pairs where failures < 5 {
            let (ea, eb) = (encoded(a), encoded(b))
            let expected = less(a, b) ? -1 : (less(b, a) ? 1 : 0)
            let actual = ea == eb ? 0 : (bytesLess(ea, eb) ? -1 : 1)
            if expected != actual { failures += 1; Issue.record("\(type): order of \(a) and \(b) is \(actual), expected \(expected)") }
        }
    }

    /// Random integers over the full range, half of them with a random bit width so that small
    /// magnitudes (1 to 8 bytes) all occur.
    static func integers<T: FixedWidthInteger>(_: T.Type, _ rng: inout SeededRandom) -> [T] {
        (0..<count).map { i in
            let raw = T(truncatingIfNeeded: rng.next())
            return i % 2 == 0 ? raw : raw >> T(Int.random(in: 0..<T.bitWidth, using: &rng))
        }
    }

    @Test("integers of every width, full range")
    func integers() {
        var rng = SeededRandom(seed: 1)
        Self.check(Self.integers(Int64.self, &rng), less: <, same: ==, "Int64", rng: &rng)
        Self.check(Self.integers(UInt64.self, &rng), less: <, same: ==, "UInt64", rng: &rng)
        Self.check(Self.integers(Int32.self, &rng), less: <, same: ==, "Int32", rng: &rng)
        Self.check(Self.integers(UInt32.self, &rng), less: <, same: ==, "UInt32", rng: &rng)
        Self.check(Self.integers(Int16.self, &rng), less: <, same: ==, "Int16", rng: &rng)
        Self.check(Self.integers(UInt16.self, &rng), less: <, same: ==, "UInt16", rng: &rng)
        Self.check(Self.integers(Int8.self, &rng), less: <, same: ==, "Int8", rng: &rng)
        Self.check(Self.integers(UInt8.self, &rng), less: <, same: ==, "UInt8", rng: &rng)
        Self.check(Self.integers(Int.self, &rng), less: <, same: ==, "Int", rng: &rng)
    }

    /// Numeric order with -0.0 equal to 0.0 and every NaN equal to each other, above +inf.
    static func floatLess<F: BinaryFloatingPoint>(_ a: F, _ b: F) -> Bool {
        if a.isNaN { return false }
        if b.isNaN { return true }
        return a < b
    }

    static func floatSame<F: BinaryFloatingPoint>(_ a: F, _ b: F) -> Bool { a == b || (a.isNaN && b.isNaN) }

    @Test("doubles and floats from every bit pattern")
    func floats() {
        var rng = SeededRandom(seed: 2)
        let doubles = (0..<Self.count).map { _ in Double(bitPattern: rng.next()) }
        Self.check(doubles, less: Self.floatLess, same: Self.floatSame, "Double", rng: &rng)
        let floats = (0..<Self.count).map { _ in Float(bitPattern: UInt32(truncatingIfNeeded: rng.next())) }
        Self.check(floats, less: Self.floatLess, same: Self.floatSame, "Float", rng: &rng)
        let dates = doubles.filter(\.isFinite).map { Date(timeIntervalSinceReferenceDate: $0) }
        Self.check(dates, less: <, same: ==, "Date", rng: &rng)
    }

    /// A string of 0 to 8 scalars drawn from every plane (surrogates excluded), NUL included.
    static func randomString(_ rng: inout SeededRandom) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...8, using: &rng) {
            let pick = Int.random(in: 0..<4, using: &rng)
            let value: UInt32 = pick == 0 ? UInt32.random(in: 0...0x7F, using: &rng) : UInt32.random(in: 0...0x10FFFF, using: &rng)
            if let scalar = Unicode.Scalar(value) { scalars.append(scalar) }
        }
        return String(scalars)
    }

    /// Unicode scalar order, the codec's documented string order.
    static func scalarLess(_ a: String, _ b: String) -> Bool {
        a.unicodeScalars.map(\.value).lexicographicallyPrecedes(b.unicodeScalars.map(\.value))
    }

    static func scalarSame(_ a: String, _ b: String) -> Bool { Array(a.unicodeScalars) == Array(b.unicodeScalars) }

    @Test("strings over all Unicode scalars, byte strings over all bytes")
    func strings() {
        var rng = SeededRandom(seed: 3)
        let strings = (0..<Self.count).map { _ in Self.randomString(&rng) }
        Self.check(strings, less: Self.scalarLess, same: Self.scalarSame, "String", rng: &rng)
        let bytes = (0..<Self.count).map { _ in
            (0..<Int.random(in: 0...6, using: &rng)).map { _ in [0x00, 0xFF, UInt8.random(in: 0...255, using: &rng)].randomElement(using: &rng)! }
        }
        Self.check(bytes, less: { $0.lexicographicallyPrecedes($1) }, same: ==, "[UInt8]", rng: &rng)
        let uuids = (0..<Self.count).map { _ in UUID() }
        Self.check(uuids, less: { withUnsafeBytes(of: $0.uuid, Array.init).lexicographicallyPrecedes(withUnsafeBytes(of: $1.uuid, Array.init)) },
                   same: ==, "UUID", rng: &rng)
    }

    struct Composite: CustomStringConvertible {
        let name: String
        let age: Int?
        let score: Double
        var key: [UInt8] { KeyCodec.encode(name, age, score) }
        var description: String { "(\(name.debugDescription), \(age.map(String.init) ?? "nil"), \(score))" }
    }

    @Test("composite keys with an optional component in the middle")
    func composites() throws {
        var rng = SeededRandom(seed: 4)
        let values = (0..<Self.count).map { _ in
            Composite(name: ["", "a", "a\u{0}", "ab", Self.randomString(&rng)].randomElement(using: &rng)!,
                      age: Bool.random(using: &rng) ? nil : Int.random(in: -3...3, using: &rng),
                      score: [-0.0, 0, 1, -.infinity, .nan, Double(bitPattern: rng.next())].randomElement(using: &rng)!)
        }
        func less(_ a: Composite, _ b: Composite) -> Bool {
            if !Self.scalarSame(a.name, b.name) { return Self.scalarLess(a.name, b.name) }
            if a.age != b.age { return a.age == nil || (b.age != nil && a.age! < b.age!) }
            return Self.floatLess(a.score, b.score)
        }
        let sorted = values.sorted(by: less)
        for (a, b) in zip(sorted, sorted.dropFirst()) {
            #expect(!bytesLess(b.key, a.key), "\(b) sorts before \(a)")
        }
        for value in values.prefix(500) {
            try value.key.withUnsafeBytes { raw in
                var reader = KeyReader(raw)
                let name: String = try reader.read()
                let age: Int? = try reader.read()
                let score: Double = try reader.read()
                try reader.finish()
                #expect(Self.scalarSame(name, value.name) && age == value.age && Self.floatSame(score, value.score.canonicalKeyValue))
            }
        }
    }
}
