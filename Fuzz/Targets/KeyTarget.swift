import FuzzSupport
import Foundation
import StrataKeyCodec

/// The key codec (every component type): the first byte says how many components, the next
/// ones which types, the rest is the key. A key that decodes must re-encode to the same bytes
/// (the codec is canonical: equal values have equal keys, which uniqueness relies on), and two
/// decoded values of one type must order as their bytes do.
enum KeyTarget {
    /// One component type: decode it, and append what was decoded (re-encoded) to a writer.
    struct Component: Sendable {
        let name: String
        let roundTrip: @Sendable (inout KeyReader, inout KeyWriter) throws -> Void
        let encodeSample: @Sendable (inout KeyWriter, UInt8) -> Void
        /// For ordered types: decodes one value from each key and says whether `a < b` (nil when
        /// either fails to decode or the values are unordered, such as NaN).
        var less: (@Sendable (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Bool?)? = nil
    }

    static func component<T: KeyComponent & Sendable>(_: T.Type, _ sample: @escaping @Sendable (UInt8) -> T) -> Component {
        Component(name: "\(T.self)", roundTrip: { reader, writer in writer.append(try reader.read(T.self)) },
                  encodeSample: { writer, seed in writer.append(sample(seed)) })
    }

    static func component<T: KeyComponent & Comparable & Sendable>(_: T.Type, _ sample: @escaping @Sendable (UInt8) -> T) -> Component {
        Component(name: "\(T.self)", roundTrip: { reader, writer in writer.append(try reader.read(T.self)) },
                  encodeSample: { writer, seed in writer.append(sample(seed)) },
                  less: { a, b in
                      var (ra, rb) = (KeyReader(a), KeyReader(b))
                      guard let x = try? ra.read(T.self), let y = try? rb.read(T.self), x < y || y < x else { return nil }
                      return x < y
                  })
    }

    static let components: [Component] = [
        component(Int.self) { Int($0) * 1_000_003 - 100_000 }, component(Int8.self) { Int8(bitPattern: $0) },
        component(Int16.self) { Int16($0) << 7 }, component(Int32.self) { Int32($0) - 128 },
        component(Int64.self) { Int64.min + Int64($0) }, component(UInt.self) { UInt($0) << 40 },
        component(UInt8.self) { $0 }, component(UInt16.self) { UInt16($0) &* 300 }, component(UInt32.self) { UInt32($0) },
        component(UInt64.self) { UInt64.max - UInt64($0) }, component(Bool.self) { $0 & 1 == 1 },
        component(String.self) { String(repeating: "a\u{0}é😀", count: Int($0 % 4)) },
        component([UInt8].self) { [0, $0, 0xFF, 0] }, component(Data.self) { Data([0, 0, $0]) },
        component(UUID.self) { UUID(uuid: ($0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, $0)) },
        component(Date.self) { Date(timeIntervalSinceReferenceDate: Double($0) * -1.5) },
        component(Double.self) { [Double.nan, -0.0, 0, .infinity, -.infinity, 1.5, -1e300, .leastNonzeroMagnitude][Int($0 % 8)] },
        component(Float.self) { [Float.nan, -0.0, 1, -.infinity][Int($0 % 4)] },
        component(Int?.self) { $0 % 2 == 0 ? nil : Int($0) }, component(String?.self) { $0 % 2 == 0 ? nil : "\($0)" },
    ]

    static let target = FuzzTarget(name: "key", run: run, seeds: seeds)

    static func run(_ input: UnsafeRawBufferPointer) {
        var r = InputReader(input)
        if input.first.map({ $0 & 0x80 != 0 }) == true { return order(&r) }
        let count = Int(r.byte() % 4) + 1
        let types = (0..<count).map { _ in components[Int(r.byte()) % components.count] }
        let key = r.rest()
        var reader = KeyReader(key)
        var writer = KeyWriter()
        do {
            for type in types { try type.roundTrip(&reader, &writer) }
        } catch {
            return  // refused with a typed error: fine
        }
        guard reader.offset <= key.count, writer.bytes.elementsEqual(key[..<reader.offset]) else {
            violated("\(types.map(\.name)): key \(Array(key[..<min(reader.offset, key.count)])) re-encodes as \(writer.bytes)")
        }
    }

    /// Byte order is value order: two keys of one ordered type (a length-framed one, then the
    /// rest), each decoded, compare as their canonical encodings do.
    static func order(_ r: inout InputReader) {
        _ = r.byte()
        let type = components[Int(r.byte()) % components.count]
        guard let less = type.less else { return }
        let a = r.chunk(), b = Array(r.rest())
        a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in
                guard let aFirst = less(a, b) else { return }
                // Compare the canonical encodings of what was decoded (the inputs may carry more).
                var (ra, rb, wa, wb) = (KeyReader(a), KeyReader(b), KeyWriter(), KeyWriter())
                guard (try? type.roundTrip(&ra, &wa)) != nil, (try? type.roundTrip(&rb, &wb)) != nil else { return }
                if aFirst != wa.bytes.lexicographicallyPrecedes(wb.bytes) {
                    violated("\(type.name): values order \(aFirst ? "a < b" : "b < a") but keys \(wa.bytes) and \(wb.bytes) do not")
                }
            }
        }
    }

    static func seeds() -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for (i, component) in components.enumerated() {
            for sample in [UInt8(0), 1, 7, 200] {
                var w = KeyWriter()
                component.encodeSample(&w, sample)
                seeds.append([0, UInt8(i)] + w.bytes)
            }
        }
        // Composite keys of three components.
        for i in 0..<components.count {
            let j = (i * 7 + 3) % components.count, k = (i * 5 + 1) % components.count
            var w = KeyWriter()
            for c in [i, j, k] { components[c].encodeSample(&w, UInt8(i)) }
            seeds.append([2, UInt8(i), UInt8(j), UInt8(k)] + w.bytes)
        }
        // Pairs for the order check.
        for (i, component) in components.enumerated() where component.less != nil {
            var (a, b) = (KeyWriter(), KeyWriter())
            component.encodeSample(&a, 3)
            component.encodeSample(&b, 250)
            seeds.append([0x80, UInt8(i)] + framed(a.bytes) + b.bytes)
        }
        return seeds
    }
}
