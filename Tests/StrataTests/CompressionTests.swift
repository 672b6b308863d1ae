import Foundation
import StrataBundledEngines
import StrataCompression
import StrataEncryption
import StrataEngine
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// A record of long text, which compresses.
struct Article: Record, Equatable {
    var id: Int
    var body: String
    static let recordType = RecordType(keyspace: "Article", key: [("id", Int.self)], fields: [("body", String.fieldFormat)])
    init(id: Int, body: String) { (self.id, self.body) = (id, body) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(body) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); body = try fields.read() }

    static func sample(_ id: Int) -> Article {
        Article(id: id, body: (0..<40).map { "line \($0 % 7) of article \(id % 3): the quick brown fox jumps over the lazy dog." }.joined(separator: "\n"))
    }
}

/// Compression at rest (StrataCompression): every read path on every engine, alone and before
/// encryption; long values stored smaller, short ones as they are; malformed frames refused.
@Suite("Compression")
struct CompressionTests {
    static let lmdb = BundledEngines.all.first { $0.name == "lmdb" }!

    @Test("compressed, every read path gives back what was written (short values stay as they are)", arguments: TestEngines.all)
    func readsThroughCompression(kind: EngineKind) throws {
        try ValueTransformTests.checkEveryReadPath(kind, [RecordCompression()], hidesValues: false)
    }

    @Test("compressed then encrypted, every read path gives back what was written, nothing in the clear", arguments: TestEngines.all)
    func readsThroughBoth(kind: EngineKind) throws {
        try ValueTransformTests.checkEveryReadPath(kind, [RecordCompression(), RecordEncryption(key: .random())])
    }

    @Test("long text is stored several times smaller, read back equal; a value zstd cannot shrink is stored as it is")
    func storedSmaller() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try ValueTransformTests.open(Self.lmdb, dir.path, [RecordCompression()])
        defer { try? store.close() }
        let articles = (0..<20).map(Article.sample)
        try store.withTransaction { ctx in for article in articles { try ctx.insert(article) } }
        #expect(try store.withReadTransaction { ctx in try ctx.select(Article.self) } == articles)
        let storedSample = try #require(try store.engine.read { tx in try tx.get(KeyCodec.encode("Article", 3)) })
        #expect(storedSample.count * 4 < Article.sample(3).body.utf8.count, "\(storedSample.count) bytes stored")
        var random = SeededGenerator(seed: 7)
        let noise = (0..<2_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        var stored: [UInt8] = []
        try noise.withUnsafeBytes { try RecordCompression().apply($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &stored) }
        #expect(stored == [0] + noise, "random bytes do not shrink: stored as they are, after their flag")
    }

    @Test("an unknown flag, a truncated frame, a frame claiming too much, an empty value: each refused as malformed")
    func malformed() throws {
        let compression = RecordCompression()
        let fields = Array(Article.sample(1).body.utf8)
        var sealed: [UInt8] = []
        try fields.withUnsafeBytes { try compression.apply($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &sealed) }
        #expect(sealed.first == 1 && sealed.count < fields.count / 4)
        func reverse(_ bytes: [UInt8]) throws -> [UInt8] {
            var out: [UInt8] = []
            try bytes.withUnsafeBytes { try compression.reverse($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &out) }
            return out
        }
        #expect(try reverse(sealed) == fields)
        #expect(try reverse([0, 1, 2, 3]) == [1, 2, 3])
        #expect(throws: ValueTransformError(.malformed, "flag byte 2, neither 0 (stored as is) nor 1 (zstd)")) { try reverse([2] + sealed.dropFirst()) }
        #expect(throws: ValueTransformError(.malformed, "an empty value, without its flag byte")) { try reverse([]) }
        #expect(throws: ValueTransformError.self) { try reverse(Array(sealed.prefix(sealed.count - 3))) }
        // A frame header claiming 1 GiB of content (zstd's single-segment header, 8-byte size).
        let bomb: [UInt8] = [1, 0x28, 0xB5, 0x2F, 0xFD, 0xE0] + withUnsafeBytes(of: UInt64(1 << 30).littleEndian, Array.init) + [0, 0, 0]
        #expect(throws: ValueTransformError(.malformed, "a zstd frame declaring 1073741824 bytes of fields, over the 67108864 a value may hold")) {
            try reverse(bomb)
        }
    }
}
