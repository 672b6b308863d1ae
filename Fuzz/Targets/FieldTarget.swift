import FuzzSupport
import Foundation
import StrataRecords

/// The record field formats (every `FieldValue` type, and JSON fields): the first byte says how
/// many fields, the next ones which formats, the rest is the record's field bytes. Each field
/// that decodes must survive a round trip: encode(decoded) decodes to an equal value whose
/// encoding is the same bytes again.
enum FieldTarget {
    struct Format: Sendable {
        let name: String
        /// Reads one field, and checks the round trip of what it read.
        let check: @Sendable (inout FieldReader) throws -> Void
        let encodeSample: @Sendable (inout FieldWriter, UInt8) -> Void
    }

    /// A JSON field's type: nested values, optionals and floats.
    struct Note: Codable, Equatable, Sendable {
        var title: String
        var weight: Double?
        var tags: [String]
        var parts: [String: [Int]]
    }

    /// `encode(v)` decodes to a value whose encoding is the same bytes (bytes, not `==`, so NaN
    /// and set/dictionary order need no special cases).
    static func format<V: FieldValue & Sendable>(_: V.Type, _ sample: @escaping @Sendable (UInt8) -> V) -> Format {
        Format(name: "\(V.self)", check: { reader in
            let value = try reader.read(V.self)
            var once = FieldWriter()
            once.write(value)
            let again = try once.bytes.withUnsafeBytes { raw in
                var r = FieldReader(raw)
                let v = try r.read(V.self)
                try r.finish()
                return v
            }
            var twice = FieldWriter()
            twice.write(again)
            if once.bytes != twice.bytes, !unordered(V.self) {
                violated("\(V.self): \(value) encodes as \(once.bytes), which decodes to \(again), encoded as \(twice.bytes)")
            }
        }, encodeSample: { writer, seed in writer.write(sample(seed)) })
    }

    /// Sets and dictionaries encode in iteration order, which two equal values need not share.
    static func unordered<V>(_: V.Type) -> Bool { V.self is Set<String>.Type || V.self is [String: Int].Type }

    static let json = Format(name: "json", check: { reader in
        let value = try reader.readJSON(Note.self)
        var w = FieldWriter()
        w.writeJSON(value)
        guard w.failure == nil else { return }  // a NaN weight: JSON cannot hold it, insert refuses it
        let again = try w.bytes.withUnsafeBytes { raw in
            var r = FieldReader(raw)
            return try r.readJSON(Note.self)
        }
        if again != value, !(value.weight.map { $0.isNaN } ?? false) { violated("json: \(value) came back as \(again)") }
    }, encodeSample: { writer, seed in
        writer.writeJSON(Note(title: "n\(seed)", weight: seed % 2 == 0 ? nil : Double(seed) / 3, tags: ["a", "é"], parts: ["x": [1, -2]]))
    })

    static let formats: [Format] = [
        format(Int.self) { Int($0) * -70_001 }, format(Int8.self) { Int8(bitPattern: $0) }, format(Int16.self) { Int16($0) * -100 },
        format(Int32.self) { Int32($0) << 20 }, format(Int64.self) { Int64.min / Int64($0 | 1) }, format(UInt.self) { UInt($0) << 50 },
        format(UInt8.self) { $0 }, format(UInt16.self) { UInt16($0) << 8 }, format(UInt32.self) { UInt32.max - UInt32($0) },
        format(UInt64.self) { UInt64($0) << 56 }, format(Bool.self) { $0 & 1 == 0 },
        format(Double.self) { [Double.nan, -0.0, .leastNonzeroMagnitude, .infinity, 3.25][Int($0 % 5)] }, format(Float.self) { Float($0) / 7 },
        format(String.self) { String(repeating: "ü\u{0}x", count: Int($0 % 5)) }, format(Data.self) { Data(repeating: $0, count: 3) },
        format(UUID.self) { UUID(uuid: ($0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)) },
        format(Date.self) { Date(timeIntervalSince1970: Double($0) * 1e6) },
        format(URL.self) { URL(string: "https://example.com/\($0)?q=é")! },
        format([Int].self) { (0..<Int($0 % 6)).map { -$0 } }, format([String].self) { ["", "\($0)"] },
        format(Set<String>.self) { Set(["a", "b\($0)"]) }, format([String: Int].self) { ["k": Int($0), "l": 2] },
        format(Int?.self) { $0 % 2 == 0 ? nil : Int($0) }, format(String?.self) { $0 % 3 == 0 ? nil : "s" },
        format([Double?].self) { [nil, Double($0)] }, json,
    ]

    static let target = FuzzTarget(name: "fields", run: run, seeds: seeds)

    static func run(_ input: UnsafeRawBufferPointer) {
        var r = InputReader(input)
        let count = Int(r.byte() % 6) + 1
        let chosen = (0..<count).map { _ in formats[Int(r.byte()) % formats.count] }
        var fields = FieldReader(r.rest())
        for format in chosen {
            do { try format.check(&fields) } catch { return }  // refused with a typed error: fine
            if fields.offset > fields.bytes.count { violated("\(format.name) read past the end") }
        }
        _ = try? fields.finish()
    }

    static func seeds() -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for (i, format) in formats.enumerated() {
            for sample in [UInt8(0), 1, 9] {
                var w = FieldWriter()
                format.encodeSample(&w, sample)
                seeds.append([0, UInt8(i)] + w.bytes)
            }
        }
        for i in 0..<formats.count {
            let picks = [i, (i + 5) % formats.count, (i + 11) % formats.count]
            var w = FieldWriter()
            for p in picks { formats[p].encodeSample(&w, UInt8(i)) }
            seeds.append([2] + picks.map(UInt8.init) + w.bytes)
        }
        return seeds
    }
}
