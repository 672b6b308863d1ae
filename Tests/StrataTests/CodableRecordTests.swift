import Foundation
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// A small record (RecordFormat.md's vectors are in RecordFormatTests).
private struct Point: CodableRecord, Equatable {
    var id: Int
    var x: Int
    var name: String
}

/// A stored shape and its later versions, on one keyspace.
private struct ItemV1: CodableRecord, Equatable {
    var id: Int
    var name: String
    static var keyspace: String { "Item" }
}

/// A property added, optional: version 1's values read with `nil`, no new version needed.
private struct ItemAdded: CodableRecord, Equatable {
    var id: Int
    var name: String
    var note: String?
    static var keyspace: String { "Item" }
}

/// `name` became a number without a new version: version 1's values do not decode.
private struct ItemRetyped: CodableRecord {
    var id: Int
    var name: Int
    static var keyspace: String { "Item" }
}

/// `name` became a number with an explicit version: version 1's values reach `migrate`.
private struct ItemV2: CodableRecord, Equatable {
    var id: Int
    var name: Int
    static var keyspace: String { "Item" }
    static var schemaVersion: UInt32? { 2 }
    static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> ItemV2? {
        guard ItemV1.recordType.isVersion(version) else { return nil }
        let old = try ItemV1(key: &key, fields: &fields)
        return ItemV2(id: old.id, name: old.name.count)
    }
}

private struct Measurement: CodableRecord {
    var id: Int
    var value: Double
}

private struct JSONMeasurement: CodableRecord {
    var id: Int
    var value: Double
    static var valueFormat: CodableValueFormat { .json }
}

/// A class hierarchy: the superclass's properties go through `superEncoder()`.
private class Animal: Codable, @unchecked Sendable {
    var legs: Int
    init(legs: Int) { self.legs = legs }
}

private final class Dog: Animal, CodableRecord, @unchecked Sendable {
    let id: String
    var name: String
    init(id: String, name: String, legs: Int) {
        self.id = id
        self.name = name
        super.init(legs: legs)
    }
    private enum CodingKeys: String, CodingKey { case id, name }
    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        try super.init(from: container.superDecoder())
    }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try super.encode(to: container.superEncoder())
    }
}

/// Keeps its decoder past `init(from:)`, which a type must not do: using it later must throw.
private struct Hoarder: Decodable {
    nonisolated(unsafe) static var kept: (any Decoder)?
    init(from decoder: any Decoder) throws { Hoarder.kept = decoder }
}

/// Values of many shapes, for round trips through the encoder alone.
private struct Shapes: Codable, Equatable {
    enum Kind: Codable, Equatable { case none, one(Int), two(String, [Double?]) }
    var int8: Int8 = .min, int16: Int16 = .max, int32: Int32 = -1, int64: Int64 = .min, int: Int = .max
    var uint8: UInt8 = .max, uint16: UInt16 = 0, uint32: UInt32 = .max, uint64: UInt64 = .max, uint: UInt = 1
    var float: Float = -.infinity, double: Double = .pi, bool: Bool = true, string = "caf\u{e9} \u{0} \u{1F600}"
    var optional: Int?, optionalSome: String? = "x", nestedOptional: Int?? = 5
    var data = Data([0, 1, 255]), date = Date(timeIntervalSinceReferenceDate: -1.5), url = URL(string: "https://example.com/a?b")!
    var kinds: [Kind] = [.none, .one(-3), .two("t", [1.5, nil])]
    var dictionary: [String: [Int]] = ["a": [1], "": []], intKeyed: [Int: String] = [3: "three", -1: "minus one"]
    var set: Set<Int16> = [1, 2, 3], empty: [String] = [], deep: [[[Int]]] = [[[1], []], []]
    var decimal = Decimal(string: "12345678901234567890.123")!
}

private func encoded<T: Encodable>(_ value: T, id: Int? = nil) throws -> [UInt8] {
    var bytes: [UInt8] = []
    try CodableValueEncoder.encode(value, isRecordID: id.map { id in { ($0 as? Int) == id } }, to: &bytes)
    return bytes
}

private func decoded<T: Decodable>(_: T.Type, _ bytes: [UInt8], id: Any? = nil) throws -> T {
    try bytes.withUnsafeBytes { try CodableValueDecoder.decode(T.self, from: $0, recordID: id) }
}

@Suite("Codable records")
struct CodableRecordTests {
    @Test("every Codable shape round-trips through the encoder, and is smaller than JSON")
    func shapes() throws {
        let value = Shapes()
        let bytes = try encoded(value)
        #expect(try decoded(Shapes.self, bytes) == value)
        let json = JSONEncoder()
        json.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        #expect(bytes.count < (try json.encode(value)).count)
        // Scalars at the top level, and an empty value.
        #expect(try decoded(Int.self, try encoded(-5)) == -5)
        #expect(try decoded([String?].self, try encoded(["a", nil])) == ["a", nil])
        struct Empty: Codable, Equatable {}
        #expect(try decoded(Empty.self, try encoded(Empty())) == Empty())
    }

    @Test("properties are found in any order, each once; an absent one is keyNotFound, an optional one nil")
    func lookupOrder() throws {
        struct Written: Codable { var a = 1, b = "two", c = 3.5, d: [Int] = [4] }
        struct ReadBackwards: Decodable, Equatable {
            var a: Int, b: String, c: Double, d: [Int], e: Int?
            enum Keys: String, CodingKey { case a, b, c, d, e }
            init(a: Int, b: String, c: Double, d: [Int], e: Int?) { self.a = a; self.b = b; self.c = c; self.d = d; self.e = e }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: Keys.self)
                e = try container.decodeIfPresent(Int.self, forKey: .e)
                d = try container.decode([Int].self, forKey: .d)
                b = try container.decode(String.self, forKey: .b)
                c = try container.decode(Double.self, forKey: .c)
                a = try container.decode(Int.self, forKey: .a)
                #expect(try container.decode(Int.self, forKey: .a) == 1, "read twice")
                #expect(container.allKeys.map(\.rawValue) == ["a", "b", "c", "d"])
            }
        }
        #expect(try decoded(ReadBackwards.self, try encoded(Written())) == ReadBackwards(a: 1, b: "two", c: 3.5, d: [4], e: nil))
        struct NeedsE: Decodable { var e: Int }
        #expect(throws: DecodingError.self) { try decoded(NeedsE.self, try encoded(Written())) }
    }

    @Test("numbers are read into any type that holds them exactly, and refused when they do not fit")
    func numbers() throws {
        #expect(try decoded(UInt8.self, try encoded(Int64(200))) == 200)
        #expect(try decoded(Double.self, try encoded(3)) == 3)
        #expect(try decoded(Int.self, try encoded(4.0)) == 4)
        #expect(throws: DecodingError.self) { try decoded(Int8.self, try encoded(300)) }
        #expect(throws: DecodingError.self) { try decoded(UInt.self, try encoded(-1)) }
        #expect(throws: DecodingError.self) { try decoded(Int.self, try encoded(4.5)) }
        #expect(throws: DecodingError.self) { try decoded(String.self, try encoded(4)) }
    }

    @Test("bad bytes never trap: every truncation and 20,000 random mutations of stored values decode or throw DecodingError")
    func mutations() throws {
        let samples: [[UInt8]] = [try encoded(Shapes()), try encoded(Point(id: 1, x: 2, name: "p"), id: 1)]
        var random = SeededGenerator(seed: 0xC0DAB1E)
        var refused = 0
        for sample in samples {
            for length in 0..<sample.count {
                #expect(throws: DecodingError.self) { try decoded(Shapes.self, Array(sample[..<length])) }
            }
            for _ in 0..<10_000 {
                var bytes = sample
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let position = Int.random(in: 0..<bytes.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
                    case 1: bytes.remove(at: position)
                    default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
                    }
                    if bytes.isEmpty { bytes = [0] }
                }
                do {
                    _ = try decoded(Shapes.self, bytes, id: 1)
                    _ = try decoded(Point.self, bytes, id: 1)
                } catch is DecodingError {
                    refused += 1
                }
            }
        }
        #expect(refused > 10_000, "most mutations must be refused: \(refused)")
    }

    @Test("a decoder kept past its value's init throws instead of reading the lent bytes")
    func keptDecoder() throws {
        _ = try decoded(Hoarder.self, try encoded(Point(id: 1, x: 1, name: "x")))
        let kept = try #require(Hoarder.kept)
        #expect(throws: DecodingError.self) { _ = try kept.container(keyedBy: AnyCodingKey.self) }
    }

    @Test("an optional property added later reads as nil; a property retyped without a new version is corruptRecord naming it; with one, migrate converts",
          arguments: BundledEngines.all.filter { $0.declaration.capabilities.contains(.persistent) })
    func evolution(kind: EngineKind) throws {
        // Each build of the program is a type of its own on keyspace "Item", so each opens the store anew.
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        func withBuild<T>(_ body: (Store) throws -> T) throws -> T {
            let store = try Store(kind.configuration(path: directory.path))
            defer { try? store.close() }
            return try body(store)
        }
        try withBuild { store in try store.withTransaction { ctx in for id in 0..<5 { try ctx.insert(ItemV1(id: id, name: "item \(id)")) } } }
        try withBuild { store in
            let added = try store.withReadTransaction { ctx in try ItemAdded.select(in: ctx) }
            #expect(added == (0..<5).map { ItemAdded(id: $0, name: "item \($0)", note: nil) })
            try store.withTransaction { ctx in try ctx.insert(ItemAdded(id: 9, name: "nine", note: "n")) }
        }
        // The older type reads the newer value: it ignores the property it does not know.
        #expect(try withBuild { store in try store.withReadTransaction { ctx in try ItemV1.fetch(in: ctx, id: 9) } } == ItemV1(id: 9, name: "nine"))
        try withBuild { store in
            do {
                _ = try store.withReadTransaction { ctx in try ItemRetyped.fetch(in: ctx, id: 1) }
                Issue.record("a retyped property read without an error")
            } catch let RecordError.corruptRecord(type, detail) {
                #expect(type == "ItemRetyped")
                #expect(detail.contains(".name: expected Int, found a string"), "\(detail)")
            }
        }
        let migrated = try withBuild { store in try store.withReadTransaction { ctx in try ItemV2.select(in: ctx) } }
        #expect(migrated.map(\.name) == [6, 6, 6, 6, 6, 4])
    }

    @Test("a value an encoder refuses is unencodableField and writes nothing; the binary form keeps NaN", arguments: BundledEngines.all)
    func unencodable(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            do {
                try store.withTransaction { ctx in try ctx.insert(JSONMeasurement(id: 1, value: .nan)) }
                Issue.record("JSON stored a NaN")
            } catch let RecordError.unencodableField(type, detail) {
                #expect(type == "JSONMeasurement")
                #expect(detail.hasPrefix("cannot encode JSONMeasurement: .value: Unable to encode Double.nan directly in JSON"), "\(detail)")
            }
            #expect(try store.withReadTransaction { ctx in try JSONMeasurement.count(in: ctx) } == 0)
            try store.withTransaction { ctx in try ctx.insert(Measurement(id: 1, value: .nan)) }
            #expect(try store.withReadTransaction { ctx in try Measurement.fetch(in: ctx, id: 1) }?.value.isNaN == true)
        }
    }

    @Test("dump prints a Codable record's value without its Swift type: names, nesting, the id from the key")
    func dumped() throws {
        struct Shelf: CodableRecord { var id: Int; var name: String; var sizes: [Double]; var owner: Owner?; var cover: Data
            struct Owner: Codable { var first: String } }
        try withStore(.memory) { store, _ in
            try store.withTransaction { ctx in try ctx.insert(Shelf(id: 4, name: "top", sizes: [1.5, -2], owner: .init(first: "Ann"), cover: Data([0xFF]))) }
            var lines: [String] = []
            try store.dump(keyspace: "Shelf") { item in
                lines.append(try item.get().jsonLine)
                return true
            }
            #expect(lines.count == 1)
            #expect(lines.first?.contains(#""value":{"id":4,"name":"top","sizes":[1.5,-2.0],"owner":{"first":"Ann"},"cover":{"hex":"ff"}}"#) == true, "\(lines)")
        }
    }

    @Test("verify lists the key-path indexes of Codable records as not checked, saying why; verifyIndexes, with the Swift type, checks them")
    func verified() throws {
        struct Tag: CodableRecord { var id: Int; var label: String; var parts: [String]; var at: UUID
            static let label = UniqueIndex("label", \Tag.label)
            static let parts = EachIndex("parts", \Tag.parts)
            static let at = FieldIndex("at", \Tag.at)
            static let indexes = [label.index, parts.index, at.index] }
        try withStore(.lmdb) { store, _ in
            try store.withTransaction { ctx in for n in 0..<20 { try ctx.insertNew { Tag(id: $0, label: "l\(n)", parts: ["p\(n % 3)", "q"], at: UUID()) } } }
            let report = try store.verify()
            #expect(report.isClean, "\(report.problems)")
            #expect(report.indexes.count == 3 && report.indexes.allSatisfy { !$0.checked && $0.reason?.contains("verifyIndexes") == true }, "\(report.indexes)")
            #expect(try store.withReadTransaction { ctx in try ctx.verifyIndexes(Tag.self) }.allSatisfy(\.isExact))
            // An entry of label's removed around the record layer: verifyIndexes sees it.
            try store.engine.write { tx in
                var doomed: [UInt8]?
                try tx.scan(.prefix([0x00] + KeyCodec.encode("ix", "Tag", "label")), reverse: false, limit: 1) { key, _ in doomed = Array(key); return false }
                try tx.delete(#require(doomed))
            }
            let label = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Tag.self) }.first { $0.index == "label" }
            #expect(label?.missingCount == 1)
        }
    }

    @Test("bytes nested deeper than 512 levels are refused, by the typed decoder and by dump's, never a stack overflow")
    func deepNesting() throws {
        // 100,000 unkeyed containers, each holding the next.
        var bytes: [UInt8] = [0x00]  // no names
        var inner: [UInt8] = [0x0A, 0x00, 0x00]
        for _ in 0..<100_000 {
            var outer: [UInt8] = [0x0A, 0x01]
            outer.appendVarint(UInt64(inner.count))
            inner = outer + inner
        }
        bytes += inner
        /// An array of itself: a type that follows the bytes as deep as they go.
        struct Nest: Decodable {
            init(from decoder: any Decoder) throws {
                var container = try decoder.unkeyedContainer()
                while !container.isAtEnd { _ = try container.decode(Nest.self) }
            }
        }
        #expect(throws: DecodingError.self) { try decoded(Nest.self, bytes) }
        #expect(throws: DecodingError.self) { try bytes.withUnsafeBytes { try CodableValueDecoder.storedValue(from: $0, recordKey: .null) } }
        // 500 levels are fine.
        var shallow: [UInt8] = [0x0A, 0x00, 0x00]
        for _ in 0..<500 {
            var outer: [UInt8] = [0x0A, 0x01]
            outer.appendVarint(UInt64(shallow.count))
            shallow = outer + shallow
        }
        _ = try decoded(Nest.self, [0x00] + shallow)
    }

    @Test("a class hierarchy round-trips through superEncoder; value formats are part of the version")
    func classesAndFormats() throws {
        try withStore(.memory) { store, _ in
            try store.withTransaction { ctx in try ctx.insert(Dog(id: "rex", name: "Rex", legs: 3)) }
            let dog = try #require(try store.withReadTransaction { ctx in try Dog.fetch(in: ctx, id: "rex") })
            #expect(dog.name == "Rex" && dog.legs == 3)
        }
        #expect(Measurement.recordType.version != JSONMeasurement.recordType.version)
        #expect(Measurement.recordType.fields == [.init(name: "value", format: FieldFormat("codable(binary)"))])
        #expect(Measurement.recordType.key.map(\.name) == ["id"])
        #expect(Measurement.recordType.keyspace == "Measurement")
    }
}
