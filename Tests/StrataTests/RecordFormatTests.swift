import CCRC32C
import Foundation
@testable import StrataRecords
import StrataEngine
import StrataKeyCodec
import StrataMemory
import Testing
@testable import StrataEncryption
import StrataCompression

/// The record of RecordFormat.md's examples: key `id: Int`, field `text: String`, derived version.
struct Note: Record, Equatable {
    let id: Int
    var text: String
    static let recordType = RecordType(keyspace: "Note", key: [("id", Int.self)], fields: [("text", String.fieldFormat)])
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(text) }
    init(id: Int, text: String) { (self.id, self.text) = (id, text) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        text = try fields.read()
    }
}

enum FormatSuit: String, FieldValue, Equatable { case clubs, hearts }
struct FormatSettings: Codable, Equatable { var theme: String }

/// One row of RecordFormat.md: the bytes the code writes, and a check that reading the spec's
/// bytes gives the value back.
struct FormatVector: Sendable {
    let name: String
    let written: @Sendable () throws -> [UInt8]
    let readsBack: @Sendable ([UInt8]) throws -> Bool
}

private func hex(_ text: String) -> [UInt8] { text.split(separator: " ").map { UInt8($0, radix: 16)! } }
private func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02X", $0) }.joined(separator: " ") }

private func field<V: FieldValue & Equatable & Sendable>(_ name: String, _ value: V) -> FormatVector {
    FormatVector(name: name, written: {
        var w = FieldWriter()
        w.write(value)
        return w.bytes
    }, readsBack: { bytes in
        try bytes.withUnsafeBytes { raw in
            var r = FieldReader(raw)
            let read = try r.read(V.self)
            try r.finish()
            return read == value
        }
    })
}

private func key(_ name: String, _ bytes: [UInt8], components: [String]) -> FormatVector {
    FormatVector(name: name, written: { bytes }, readsBack: { stored in
        try stored.withUnsafeBytes { raw in
            var r = KeyReader(UnsafeRawBufferPointer(rebasing: raw[1...]))
            return try components.allSatisfy { try r.read(String.self) == $0 } && r.isAtEnd
        }
    })
}

private func crc(_ name: String, _ input: [UInt8]) -> FormatVector {
    // The spec lists the number most significant byte first.
    FormatVector(name: name, written: {
        let value = input.withUnsafeBytes { RecordChecksum.extend(0, $0) }
        return withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }, readsBack: { bytes in
        input.withUnsafeBytes { strata_crc32c_extend_portable(0, $0.baseAddress, $0.count) } == bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    })
}

/// The binary Codable form's vectors (RecordFormat.md, "Codable values").
struct FormatPoint: CodableRecord, Equatable, Sendable {
    var id: Int
    var x: Int
    var name: String
}
struct FormatPair: Codable, Equatable, Sendable {
    struct Inner: Codable, Equatable, Sendable { var a: Bool? }
    var a: [UInt8]
    var b: Inner
}

private func codable<V: Codable & Equatable & Sendable>(_ name: String, _ value: V, id: Int? = nil) -> FormatVector {
    FormatVector(name: name, written: {
        var bytes: [UInt8] = []
        try CodableValueEncoder.encode(value, isRecordID: id.map { id in { ($0 as? Int) == id } }, to: &bytes)
        return bytes
    }, readsBack: { bytes in
        try bytes.withUnsafeBytes { try CodableValueDecoder.decode(V.self, from: $0, recordID: id) } == value
    })
}

private let noteKey = KeyCodec.encode("Note") + KeyCodec.encode(7)

@Suite("RecordFormat.md: the spec's vectors")
struct RecordFormatTests {
    static let vectorKey = try! EncryptionKey(bytes: (1...32).map { UInt8($0) })
    static let vectorFields: [UInt8] = [0x02, 0x68, 0x69]
    /// The header the fields are sealed with: `Note(id: 7)`'s key, then its version 2932707909.
    static let vectorHeader: [UInt8] = noteKey + [0xC5, 0xA4, 0xB6, 0xF6, 0x0A]
    /// The encryption of the vectors: key 01 … 20, salt A0 … AF, every nonce B0 … BB.
    static func vectorEncryption() throws -> any ValueTransform {
        var encryption = RecordEncryption(key: vectorKey)
        encryption.fixedNonce = Array(0xB0...0xBB)
        return try encryption.bound(toStore: Array(0xA0...0xAF))
    }

    static let vectors: [FormatVector] = [
        key("manifest", SystemKey.manifest, components: ["manifest"]),
        key("sequence of keyspace `Note`", SystemKey.sequence("Note"), components: ["sequence", "Note"]),
        key("identity", SystemKey.identity, components: ["identity"]),
        key("transform salt", SystemKey.transformSalt, components: ["transform-salt"]),
        FormatVector(name: "fields `02 68 69` through zstd (shorter than 64 bytes: as they are)", written: {
            var out: [UInt8] = []
            try [UInt8]([2, 0x68, 0x69]).withUnsafeBytes { try RecordCompression().apply($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &out) }
            return out
        }, readsBack: { bytes in
            var out: [UInt8] = []
            try bytes.withUnsafeBytes { try RecordCompression().reverse($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &out) }
            return out == [2, 0x68, 0x69]
        }),
        FormatVector(name: "fields of 100 bytes 61 through zstd, level 3", written: {
            var out: [UInt8] = []
            try [UInt8](repeating: 0x61, count: 100).withUnsafeBytes {
                try RecordCompression().apply($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &out)
            }
            return out
        }, readsBack: { bytes in
            var out: [UInt8] = []
            try bytes.withUnsafeBytes { try RecordCompression().reverse($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &out) }
            return out == [UInt8](repeating: 0x61, count: 100)
        }),
        FormatVector(name: "identifier of the key 01 02 … 20", written: {
            withUnsafeBytes(of: RecordFormatTests.vectorKey.id.bigEndian, Array.init)
        }, readsBack: { bytes in bytes.reduce(0) { $0 << 8 | UInt32($1) } == RecordFormatTests.vectorKey.id }),
        FormatVector(name: "fields `02 68 69` of `Note(id: 7)`, version 2932707909, sealed by aes-256-gcm (key 01 … 20, salt A0 … AF, nonce B0 … BB)", written: {
            var sealed: [UInt8] = []
            try RecordFormatTests.vectorFields.withUnsafeBytes { f in
                try RecordFormatTests.vectorHeader.withUnsafeBytes { try RecordFormatTests.vectorEncryption().apply(f, header: $0, to: &sealed) }
            }
            return sealed
        }, readsBack: { bytes in
            var opened: [UInt8] = []
            try bytes.withUnsafeBytes { b in try RecordFormatTests.vectorHeader.withUnsafeBytes { try RecordFormatTests.vectorEncryption().reverse(b, header: $0, to: &opened) } }
            return opened == RecordFormatTests.vectorFields
        }),
        FormatVector(name: "identity 5", written: { StoreIdentity.encode(5) }, readsBack: { try StoreIdentity.decode($0) == 5 }),
        codable("codable Point(id: 7, x: -2, name: \"a\")", FormatPoint(id: 7, x: -2, name: "a"), id: 7),
        codable("codable Pair(a: [1, 200], b: Inner(a: nil))", FormatPair(a: [1, 200], b: .init(a: nil))),
        key("features", SystemKey.features, components: ["features"]),
        key("catalog entry of keyspace `Note`", SystemKey.keyspace("Note"), components: ["keyspace", "Note"]),
        key("progress of job `format-2`", SystemKey.job(FormatUpgrade.jobName), components: ["job", "format-2"]),
        key("index `byText` of `Note`", SystemKey.index(keyspace: "Note", name: "byText"), components: ["index", "Note", "byText"]),
        key("progress of building index `byText` of `Note`, generation 1", SystemKey.indexBuild(keyspace: "Note", name: "byText", generation: 1),
            components: ["job", "index/Note/byText/1"]),
        FormatVector(name: "entry of `Note(id: 7, text: \"hi\")` in index `byText`, generation 1", written: {
            SystemKey.indexEntries(keyspace: "Note", name: "byText", generation: 1) + KeyCodec.encode("hi") + KeyCodec.encode(7)
        }, readsBack: { bytes in
            try bytes.withUnsafeBytes { raw in
                var r = KeyReader(UnsafeRawBufferPointer(rebasing: raw[1...]))
                return try r.read(String.self) == "ix" && r.read(String.self) == "Note" && r.read(String.self) == "byText"
                    && r.read(Int.self) == 1 && r.read(String.self) == "hi" && r.read(Int.self) == 7 && r.isAtEnd
            }
        }),
        FormatVector(name: "index `byText` (unique, on `text: String`), readable, generation 2, generation 1 retired", written: {
            Self.byText.encoded()
        }, readsBack: { bytes in
            try bytes.withUnsafeBytes { try StoredIndex(decoding: $0, keyspace: "Note", name: "byText") } == Self.byText
        }),
        FormatVector(name: "index `byText` changed to not unique: write-only, generation 3, generation 2 previous (unique), generation 1 retired", written: {
            Self.byTextChanged.encoded()
        }, readsBack: { bytes in
            try bytes.withUnsafeBytes { try StoredIndex(decoding: $0, keyspace: "Note", name: "byText") } == Self.byTextChanged
        }),
        FormatVector(name: "index `byLength` of kind `length` (on `text: Int`), readable, generation 1", written: {
            Self.byLength.encoded()
        }, readsBack: { bytes in
            try bytes.withUnsafeBytes { try StoredIndex(decoding: $0, keyspace: "Note", name: "byLength") } == Self.byLength
        }),
        FormatVector(name: "total of 3 records summing to -2", written: { AggregateTotal(count: 3, sum: -2).encoded }, readsBack: { bytes in
            AggregateTotal(stored: bytes) == AggregateTotal(count: 3, sum: -2)
        }),
        key("change feed settings", SystemKey.changeFeed, components: ["changefeed"]),
        FormatVector(name: "chunk of feed 5, version 3, from change 0", written: {
            ChangeLog.chunkKey(feed: 5, version: 3, first: 0)
        }, readsBack: { bytes in
            try bytes.withUnsafeBytes { try ChangeLog.position(ofChunk: $0, feed: 5) } == (3, 0)
        }),
        FormatVector(name: "settings of feed 5, keeping 1 day and 1,000 transactions", written: {
            Self.feedSettings.encoded()
        }, readsBack: { bytes in
            try ChangeLog.Settings(decoding: bytes) == Self.feedSettings
        }),
        FormatVector(name: "chunk of version 3 of feed 5, committed at 1,700,000,000,000 ms by writer 9: insert of `Note(id: 7)`, delete of `Note(id: 8)`", written: {
            ChangeLog.encodeChunk(key: ChangeLog.chunkKey(feed: 5, version: 3, first: 0), committedAt: 1_700_000_000_000, writer: 9, total: 2,
                                  Self.feedChanges[...])
        }, readsBack: { bytes in
            let key = ChangeLog.chunkKey(feed: 5, version: 3, first: 0)
            let chunk = try key.withUnsafeBytes { k in try bytes.withUnsafeBytes { try ChangeLog.decodeChunk(key: k, value: $0, feed: 5) } }
            return chunk.committedAt == 1_700_000_000_000 && chunk.writer == 9 && chunk.total == 2 && chunk.version == 3 && chunk.first == 0 && chunk.changes == Self.feedChanges
        }),
        FormatVector(name: "record `Note(id: 7)`", written: { noteKey }, readsBack: { bytes in
            try bytes.withUnsafeBytes { raw in
                var r = KeyReader(raw)
                return try r.read(String.self) == "Note" && r.read(Int.self) == 7 && r.isAtEnd
            }
        }),
        FormatVector(name: "manifest of an LMDB store whose values pass through the transform `t`", written: {
            Manifest.encode(Manifest.Contents(engine: "lmdb", codec: "strata-tuple", codecVersion: 1, format: 2, transforms: ["t"]))
        }, readsBack: { bytes in
            try Manifest.decode(bytes) == Manifest.Contents(engine: "lmdb", codec: "strata-tuple", codecVersion: 1, format: 2, transforms: ["t"])
        }),
        FormatVector(name: "the same while a rotation from the transform `s` to `t` runs", written: {
            Manifest.encode(Manifest.Contents(engine: "lmdb", codec: "strata-tuple", codecVersion: 1, format: 2, transforms: ["t"], retiring: ["s"]))
        }, readsBack: { bytes in
            try Manifest.decode(bytes) == Manifest.Contents(engine: "lmdb", codec: "strata-tuple", codecVersion: 1, format: 2, transforms: ["t"], retiring: ["s"])
        }),
        FormatVector(name: "manifest of an LMDB store", written: {
            Manifest.encode(Manifest.Contents(engine: "lmdb", codec: "strata-tuple", codecVersion: 1, format: 2))
        }, readsBack: { bytes in
            try Manifest.decode(bytes) == Manifest.Contents(engine: "lmdb", codec: "strata-tuple", codecVersion: 1, format: 2)
        }),
        FormatVector(name: "catalog entry of `Note` (key `id: Int`, field `text: String`, derived version 2932707909)", written: {
            CatalogEntry(key: [("id", "Int")], schemas: [.init(version: Note.recordType.version, fields: Note.recordType.fields)]).encoded()
        }, readsBack: { bytes in
            try CatalogEntry(decoding: bytes, keyspace: "Note")
                == CatalogEntry(key: [("id", "Int")], schemas: [.init(version: 2_932_707_909, fields: [.init(name: "text", format: FieldFormat("string"))])])
        }),
        FormatVector(name: "value of `Note(id: 7, text: \"hi\")` under version 2932707909", written: {
            try Self.storedValue(Note(id: 7, text: "hi"))
        }, readsBack: { bytes in
            try Self.readBack(Note.self, key: noteKey, value: bytes) == Note(id: 7, text: "hi")
        }),
        crc("CRC-32C of the 9 bytes \"123456789\"", Array("123456789".utf8)),
        crc("CRC-32C of 32 bytes 00", [UInt8](repeating: 0, count: 32)),
        crc("CRC-32C of 32 bytes FF", [UInt8](repeating: 0xFF, count: 32)),
        crc("CRC-32C of the bytes 00 01 … 1F", Array(0...31)),
        crc("CRC-32C of the bytes 1F 1E … 00", Array((0...31).reversed())),
        field("`i64` 0", 0),
        field("`i64` -1", -1),
        field("`i64` 300", 300),
        field("`i64` Int64.min", Int64.min),
        field("`u8` 200", UInt8(200)),
        field("`bool` true", true),
        field("`f64` 1.0", 1.0),
        field("`f32` -2.5", Float(-2.5)),
        field("`string` \"\"", ""),
        field("`string` \"é\"", "é"),
        field("`bytes` 00 FF", Data([0x00, 0xFF])),
        field("`uuid` 00112233-4455-6677-8899-AABBCCDDEEFF", UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!),
        field("`date` 1.5 s after the reference date", Date(timeIntervalSinceReferenceDate: 1.5)),
        field("`url` https://example.com/a", URL(string: "https://example.com/a")!),
        field("`optional(string)` nil", String?.none),
        field("`optional(string)` \"a\"", String?.some("a")),
        field("`array(i64)` [1, 2]", [1, 2]),
        field("`map(string,i64)` [\"a\": 1]", ["a": 1]),
        field("`raw(string)` Suit.hearts", FormatSuit.hearts),
        FormatVector(name: "`json` Settings(theme: \"dark\")", written: {
            var w = FieldWriter()
            w.writeJSON(FormatSettings(theme: "dark"))
            return w.bytes
        }, readsBack: { bytes in
            try bytes.withUnsafeBytes { raw in
                var r = FieldReader(raw)
                return try r.readJSON(FormatSettings.self) == FormatSettings(theme: "dark") && r.isAtEnd
            }
        }),
        FormatVector(name: "derived version of `Note` (`2;key:id:Int;fields:text:string`), as a varint", written: {
            var w = FieldWriter()
            w.writeVarint(UInt64(RecordType.derivedVersion(key: [("id", "Int")], fields: [.init(name: "text", format: FieldFormat("string"))])))
            return w.bytes
        }, readsBack: { bytes in
            try bytes.withUnsafeBytes { raw in
                var r = FieldReader(raw)
                return try r.readVarint() == UInt64(Note.recordType.version)
            }
        }),
        FormatVector(name: "format-1 value of `Note(id: 7, text: \"hi\")` under version 1", written: {
            let body: [UInt8] = [0x01, 0x02, 0x68, 0x69]
            let sum = noteKey.withUnsafeBytes { k in body.withUnsafeBytes { FormatOneChecksum.of(key: k, value: $0) } }
            return body + withUnsafeBytes(of: sum.littleEndian) { Array($0) }
        }, readsBack: { bytes in
            // The upgrade accepts it and gives the format-2 value of the same body.
            guard let upgraded = FormatUpgrade.rewrite(key: noteKey, formatOneValue: bytes) else { return false }
            let body = Array(upgraded.dropLast(4))
            let sum = noteKey.withUnsafeBytes { k in body.withUnsafeBytes { RecordChecksum.of(key: k, value: $0) } }
            return body == [0x01, 0x02, 0x68, 0x69] && Array(upgraded.suffix(4)) == withUnsafeBytes(of: sum.littleEndian) { Array($0) }
        }),
        FormatVector(name: "format-1 catalog entry of `Note`", written: { Array("id: Int".utf8) }, readsBack: { bytes in
            try CatalogEntry(formatOneLayout: bytes, keyspace: "Note") == CatalogEntry(key: [("id", "Int")])
        }),
    ]

    static let feedSettings = ChangeLog.Settings(feed: 5, retention: ChangeFeedRetention(maxAge: .seconds(86_400), maxCommits: 1_000))

    static let feedChanges = [
        RecordChange(keyspace: "Note", key: EncodedIndexKey(bytes: KeyCodec.encode(7)), kind: .insert),
        RecordChange(keyspace: "Note", key: EncodedIndexKey(bytes: KeyCodec.encode(8)), kind: .delete),
    ]

    static let byText = StoredIndex(
        generation: 2, state: .readable,
        definition: IndexDefinition(components: [.init(name: "text", type: "String", multiValued: false)], unique: true, covering: false),
        retired: [1])

    static let byLength = StoredIndex(
        generation: 1, state: .readable,
        definition: IndexDefinition(components: [.init(name: "text", type: "Int", multiValued: false)], unique: false, covering: false, kind: "length"))

    static let byTextChanged = StoredIndex(
        generation: 3, state: .writeOnly,
        definition: IndexDefinition(components: [.init(name: "text", type: "String", multiValued: false)], unique: false, covering: false),
        retired: [1], previous: .init(generation: 2, definition: byText.definition))

    /// The value `insert` stores for `record`, read through the engine.
    static func storedValue<R: Record>(_ record: R) throws -> [UInt8] {
        let store = try Store(.memory)
        defer { try? store.close() }
        try store.withTransaction { ctx in try ctx.insert(record) }
        let key = KeyCodec.encode(R.recordType.keyspace) + { var w = KeyWriter(); record.writeKey(to: &w); return w.bytes }()
        return try store.engine.read { tx in try tx.get(key) } ?? []
    }

    /// The record Strata reads from `value` stored under `key`.
    static func readBack<R: Record>(_: R.Type, key: [UInt8], value: [UInt8]) throws -> R? {
        let store = try Store(.memory)
        defer { try? store.close() }
        try store.engine.write { tx in try tx.put(value, forKey: key) }
        return try store.withReadTransaction { ctx in try ctx.select(R.self).first }
    }

    static var specText: String {
        get throws {
            let path = #filePath.replacingOccurrences(of: "Tests/StrataTests/RecordFormatTests.swift", with: "Sources/Records/StrataRecords/StrataRecords.docc/RecordFormat.md")
            return try String(contentsOfFile: path, encoding: .utf8)
        }
    }

    /// `| name | `HEX` |…` rows of the spec's tables.
    static func specRows() throws -> [String: [UInt8]] {
        var rows: [String: [UInt8]] = [:]
        for line in try specText.split(separator: "\n") where line.hasPrefix("| ") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4, cells[2].hasPrefix("`"), cells[2].hasSuffix("`") else { continue }
            let bytes = cells[2].dropFirst().dropLast()
            guard !bytes.isEmpty, bytes.allSatisfy({ $0.isHexDigit || $0 == " " }) else { continue }
            rows[cells[1]] = hex(String(bytes))
        }
        return rows
    }

    @Test("the code writes each vector's bytes", arguments: vectors.map(\.name))
    func writes(name: String) throws {
        let vector = Self.vectors.first { $0.name == name }!
        let spec = try #require(try Self.specRows()[name], "RecordFormat.md has no row \(name)")
        let written = try vector.written()
        #expect(written == spec, "\(name): writes \(hexString(written)), the spec says \(hexString(spec))")
    }

    @Test("each vector's bytes read back to the value", arguments: vectors.map(\.name))
    func reads(name: String) throws {
        let vector = Self.vectors.first { $0.name == name }!
        let spec = try #require(try Self.specRows()[name], "RecordFormat.md has no row \(name)")
        #expect(try vector.readsBack(spec), "\(name)")
    }

    @Test("the spec's tables list exactly these vectors")
    func sameRows() throws {
        #expect(Set(try Self.specRows().keys) == Set(Self.vectors.map(\.name)))
    }

    @Test("a manifest round-trips whichever of its lists are empty (the fuzzer found a retiring chain read back as the store's own)")
    func manifestLists() throws {
        for (transforms, retiring) in [([], []), (["t"], []), (["t"], ["s"]), ([], ["s"]), ([], ["s", "r"])] as [([String], [String])] {
            let contents = Manifest.Contents(engine: "lmdb", codec: "strata-tuple", codecVersion: 1, format: 2,
                                             transforms: transforms, retiring: retiring)
            #expect(try Manifest.decode(Manifest.encode(contents)) == contents, "transforms \(transforms), retiring \(retiring)")
        }
    }

    @Test("CRC-32C: the CPU instruction and the table loop agree on random inputs of every length and alignment, and on split inputs")
    func crcPaths() {
        var random = SystemRandomNumberGenerator()
        #expect(strata_crc32c_hardware_available() != 0 || !isX86WithSSE42, "this x86-64 CPU has SSE 4.2, the hardware path must be chosen")
        for length in 0..<300 {
            let bytes = (0..<(length + 7)).map { _ in UInt8.random(in: 0...255, using: &random) }
            for offset in 0..<8 where offset + length <= bytes.count {
                bytes.withUnsafeBytes { raw in
                    let start = raw.baseAddress! + offset
                    let portable = strata_crc32c_extend_portable(0, start, length)
                    let hardware = strata_crc32c_hardware_available() != 0 ? strata_crc32c_extend_hardware(0, start, length) : portable
                    let dispatched = strata_crc32c_extend(0, start, length)
                    let split = length / 3
                    let chained = strata_crc32c_extend(strata_crc32c_extend(0, start, split), start + split, length - split)
                    #expect(portable == hardware && hardware == dispatched && dispatched == chained, "length \(length), offset \(offset)")
                }
            }
        }
    }

    private var isX86WithSSE42: Bool {
        #if arch(x86_64)
        (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.contains(" sse4_2") ?? false
        #else
        false
        #endif
    }

    @Test("a changed byte anywhere in the key or value is caught by the checksum")
    func checksumCatchesFlips() throws {
        let value = try Self.storedValue(Note(id: 7, text: "hello"))
        for index in 0..<value.count {
            var damaged = value
            damaged[index] ^= 0x10
            #expect(throws: RecordError.self) { try Self.readBack(Note.self, key: noteKey, value: damaged) }
        }
        var otherKey = noteKey
        otherKey[otherKey.count - 1] = 8
        #expect(throws: RecordError.self) { try Self.readBack(Note.self, key: otherKey, value: value) }
    }

    @Test("a keyspace whose catalog entry requires an unknown feature is refused for reading and writing; other keyspaces work")
    func unknownKeyspaceFeature() throws {
        let store = try Store(.memory)
        defer { try? store.close() }
        try store.withTransaction { ctx in try ctx.insert(Note(id: 1, text: "a")) }
        // A newer build added a feature to the keyspace (an index, say).
        var entry = CatalogEntry(key: [("id", "Int")], schemas: [.init(version: Note.recordType.version, fields: Note.recordType.fields)])
        entry.features = ["indexes-v9"]
        try store.engine.write { tx in try tx.put(entry.encoded(), forKey: SystemKey.keyspace("Note")) }
        let reopened = try Store(engine: store.engine)  // a fresh catalog, as in another process
        let refusal = RecordError.unsupportedFeature(feature: "indexes-v9", scope: "keyspace \"Note\"")
        #expect(throws: refusal) { try reopened.withReadTransaction { ctx in try ctx.select(Note.self) } }
        #expect(throws: refusal) { try reopened.withTransaction { ctx in try ctx.insert(Note(id: 2, text: "b")) } }
        #expect(try reopened.withReadTransaction { ctx in try ctx.count(Person.self) } == 0)
        #expect(refusal.description.contains("open it with a newer build"))
    }
}
