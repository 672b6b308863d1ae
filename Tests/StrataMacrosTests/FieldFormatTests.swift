import Foundation
import Strata
import Testing

// Two value types of one JSON shape: one with a FieldValue conformance (a binary format of its
// own), one without. Declared `@Field(.json)`, both are stored as JSON: a conformance added to a
// type never changes how its fields are written or read.
struct PlainTheme: Codable, Equatable { var name: String; var size: Int }

struct ConformingTheme: Codable, Equatable, FieldValue {
    var name: String
    var size: Int
    static var fieldFormat: FieldFormat { FieldFormat("theme-binary") }
    func encode(to fields: inout FieldWriter) {
        fields.write(name)
        fields.write(size)
    }
    static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> ConformingTheme {
        ConformingTheme(name: try fields.read(), size: try fields.read())
    }
}

@IndexKeyRecord("id", keyspace: "themes")
struct ThemeBefore {
    let id: Int
    @Field(.json) var theme: PlainTheme
}

@IndexKeyRecord("id", keyspace: "themes")
struct ThemeAfter {
    let id: Int
    @Field(.json) var theme: ConformingTheme
}

@IndexKeyRecord("id", keyspace: "themes-binary")
struct ThemeBinary {
    let id: Int
    var theme: ConformingTheme
}

/// Celsius stored as hundredths in a zigzag varint, through a codec.
enum Hundredths: FieldCodec {
    static var format: FieldFormat { FieldFormat("hundredths") }
    static func encode(_ value: Double, to fields: inout FieldWriter) throws {
        guard value.isFinite else { throw CodecRefusal() }
        fields.write(Int((value * 100).rounded()))
    }
    static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Double { Double(try fields.read(Int.self)) / 100 }
    struct CodecRefusal: Error {}
}

@IndexKeyRecord("city", keyspace: "weather")
struct Weather {
    let city: String
    @Field(codec: Hundredths.self) var temperature: Double
}

// Respelled and renamed twins for the derived version.
typealias Labels = [String]

@IndexKeyRecord("id", keyspace: "spelledA")
struct SpelledA { let id: Int; var labels: [String]; var counts: [String: Int]; var note: String? }

@IndexKeyRecord("id", keyspace: "spelledB")
struct SpelledB { let id: Swift.Int; var labels: Array<String>; var counts: Dictionary<String, Int>; var note: Optional<String> }

@IndexKeyRecord("id", keyspace: "spelledC")
struct SpelledC { let id: Int; var labels: Labels; var counts: [Swift.String: Swift.Int]; var note: String? }

@IndexKeyRecord("id", keyspace: "renamed")
struct Renamed { let id: Int; var tags: [String]; var counts: [String: Int]; var note: String? }

@IndexKeyRecord("id", keyspace: "reordered")
struct Reordered { let id: Int; var counts: [String: Int]; var labels: [String]; var note: String? }

@IndexKeyRecord("id", keyspace: "reformatted")
struct Reformatted { let id: Int; @Field(.json) var labels: [String]; var counts: [String: Int]; var note: String? }

@Suite("Field formats and derived schema versions")
struct FieldFormatTests {
    @Test("a field's format comes from its declaration: @Field(.json) stays JSON when the type has a FieldValue conformance")
    func conformanceNeverChangesTheFormat() throws {
        #expect(ThemeBefore.recordType.fields?.map(\.format) == [.json])
        #expect(ThemeAfter.recordType.fields?.map(\.format) == [.json])
        #expect(ThemeBinary.recordType.fields?.map(\.format) == [FieldFormat("theme-binary")])
        #expect(ThemeBefore.recordType.version == ThemeAfter.recordType.version)
        #expect(ThemeAfter.recordType.version != ThemeBinary.recordType.version)

        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var store = try Store(.lmdb(path: path))
        try store.withTransaction { ctx in
            try ctx.insert(ThemeBefore(id: 1, theme: PlainTheme(name: "dark", size: 12)))
            try ctx.insert(ThemeBinary(id: 1, theme: ConformingTheme(name: "dark", size: 12)))
        }
        let stored = try store.engine.read { tx in
            (try tx.get(KeyCodec.encode("themes", 1)), try tx.get(KeyCodec.encode("themes-binary", 1)))
        }
        let json = try #require(stored.0)
        #expect(String(decoding: json, as: UTF8.self).contains(#""value":{"#), "stored as JSON")
        let binary = try #require(stored.1)
        #expect(!String(decoding: binary, as: UTF8.self).contains("{"), "stored in the type's own binary format")
        try store.close()

        // The same keyspace read by the version of the program where the type gained the conformance.
        store = try Store(.lmdb(path: path))
        let after = try store.withTransaction { ctx in
            try ctx.insert(ThemeAfter(id: 2, theme: ConformingTheme(name: "light", size: 10)))
            return try ThemeAfter.select(in: ctx, id: .greaterThan(0))
        }
        #expect(after.map(\.theme) == [ConformingTheme(name: "dark", size: 12), ConformingTheme(name: "light", size: 10)])
        let newBytes = try store.engine.read { tx in try tx.get(KeyCodec.encode("themes", 2)) }
        #expect(String(decoding: try #require(newBytes), as: UTF8.self).contains(#""value":{"#), "still written as JSON")
        try store.close()
    }

    @Test("a field through a FieldCodec: written and read by the codec; a value it refuses stores nothing")
    func codec() throws {
        let store = try Store(.memory)
        try store.withTransaction { ctx in try ctx.insert(Weather(city: "Oslo", temperature: -3.25)) }
        #expect(try store.withReadTransaction { ctx in try Weather.select(in: ctx, city: "Oslo").map(\.temperature) } == [-3.25])
        let raw = try store.engine.read { tx in try tx.get(KeyCodec.encode("weather", "Oslo")) }
        #expect(raw?.dropFirst(5).prefix(2) == [0x89, 0x05], "-325 zigzag-encoded, after the 5-byte version")
        #expect(throws: RecordError.self) { try store.withTransaction { ctx in try ctx.insert(Weather(city: "Mars", temperature: .nan)) } }
        #expect(try store.withReadTransaction { ctx in try ctx.count(Weather.self) } == 1)
        #expect(Weather.recordType.fields?.map(\.format.descriptor) == ["hundredths"])
        try store.close()
    }

    @Test("the derived version ignores how types are spelled and tracks field names, order and formats")
    func derivedVersions() {
        let base = SpelledA.recordType.version
        #expect(SpelledB.recordType.version == base)
        #expect(SpelledC.recordType.version == base)
        #expect(Renamed.recordType.version != base)
        #expect(Reordered.recordType.version != base)
        #expect(Reformatted.recordType.version != base)
        #expect(SpelledA.recordType.fields?.map(\.format.descriptor) == ["array(string)", "map(string,i64)", "optional(string)"])
        // Format 1 hashed the spelling: the twins had different numbers there.
        #expect(SpelledA.recordType.formatOneVersion != SpelledB.recordType.formatOneVersion)
    }
}
