import Foundation
import StrataBundledEngines
import StrataCompression
import StrataEncryption
import StrataEngine
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// A record of long text, which compresses, with a covering index (its entries hold the
/// record's value, compressed too).
struct Article: Record, Equatable {
    var id: Int
    var topic: Int
    var body: String
    static let recordType = RecordType(keyspace: "Article", key: [("id", Int.self)], fields: [("topic", Int.fieldFormat), ("body", String.fieldFormat)])
    static let byTopic = RecordIndex<Article>("byTopic", .field("topic", \.topic), covering: true)
    static let indexes = [byTopic]
    init(id: Int, topic: Int, body: String) { (self.id, self.topic, self.body) = (id, topic, body) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(topic); fields.write(body) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); topic = try fields.read(); body = try fields.read() }

    static func sample(_ id: Int) -> Article {
        Article(id: id, topic: id % 4,
                body: (0..<40).map { "line \($0 % 7) of article \(id % 3): the quick brown fox jumps over the lazy dog." }.joined(separator: "\n"))
    }
}

/// Compression at rest (StrataCompression): every read path on every engine, alone and before
/// encryption; long values stored smaller, short ones as they are; malformed frames refused.
@Suite("Compression")
struct CompressionTests {
    @Test("compressed, every read path gives back what was written (short values stay as they are)", arguments: TestEngines.all)
    func readsThroughCompression(kind: EngineKind) throws {
        try ValueTransformTests.checkEveryReadPath(kind, [RecordCompression()], hidesValues: false)
    }

    @Test("compressed then encrypted, every read path gives back what was written, nothing in the clear", arguments: TestEngines.all)
    func readsThroughBoth(kind: EngineKind) throws {
        try ValueTransformTests.checkEveryReadPath(kind, [RecordCompression(), RecordEncryption(key: .random())])
    }

    @Test("long text is stored several times smaller (records and covering entries) and read back equal on every read path; a value zstd cannot shrink is stored as it is",
          arguments: TestEngines.all)
    func storedSmaller(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try ValueTransformTests.open(kind, dir.path, [RecordCompression()])
        defer { try? store.close() }
        let articles = (0..<20).map(Article.sample)
        try store.withTransaction { ctx in for article in articles { try ctx.insert(article) } }
        try store.withReadTransaction { ctx in
            #expect(try ctx.select(Article.self) == articles)
            #expect(try ctx.fetch(Article.self, .all.equal(7)) == articles[7])
            #expect(try Article.byTopic.select(in: ctx, .all.equal(2)) == articles.filter { $0.topic == 2 })  // the entries' own values
            var viewed: [Article] = []
            try ctx.forEachView(Article.self) { view in
                viewed.append(try view.record())
                return true
            }
            #expect(viewed == articles)
        }
        let verification = try store.verify()
        #expect(verification.isClean && verification.records == articles.count, "\(verification.problems)")
        var compressed = 0  // values (records and covering entries) whose fields start with zstd's flag
        let recordPrefix = KeyCodec.encode("Article"), entryName = Array("byTopic".utf8)
        try store.dumpRaw { key, value in
            let isRecord = key.starts(with: recordPrefix), isEntry = key.first == 0 && key.firstRange(of: entryName) != nil
            if isRecord || isEntry, let version = value.firstIndex(where: { $0 < 0x80 }), value[version + 1] == 1 { compressed += 1 }
            return true
        }
        #expect(compressed == 2 * articles.count, "\(compressed) compressed values stored")
        let storedKey = KeyCodec.encode("Article", 3)
        let storedSample = try #require(try store.engine.read { tx in try tx.get(storedKey) })
        #expect(storedSample.count * 4 < Article.sample(3).body.utf8.count, "\(storedSample.count) bytes stored")
        var random = SeededGenerator(seed: 7)
        let noise = (0..<2_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        var stored: [UInt8] = []
        try noise.withUnsafeBytes { try RecordCompression().apply($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &stored) }
        #expect(stored == [0] + noise, "random bytes do not shrink: stored as they are, after their flag")
        // Fields over the largest a frame may declare are stored as they are: readable.
        let huge = [UInt8](repeating: 0x61, count: RecordCompression.maximumFieldsLength + 1)
        var hugeStored: [UInt8] = []
        try huge.withUnsafeBytes { try RecordCompression().apply($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &hugeStored) }
        #expect(hugeStored.first == 0 && hugeStored.count == huge.count + 1)
        var hugeRead: [UInt8] = []
        try hugeStored.withUnsafeBytes { try RecordCompression().reverse($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &hugeRead) }
        #expect(hugeRead == huge)
        // Statistics weigh what compression made of the values: the plain bytes are those a store
        // without transforms holds for the same records.
        let plainStore = try ValueTransformTests.open(kind, dir.path + "-plain", [])
        defer { try? plainStore.close(); try? FileManager.default.removeItem(atPath: dir.path + "-plain") }
        try plainStore.withTransaction { ctx in for article in articles { try ctx.insert(article) } }
        let plainStats = try #require(try plainStore.statistics().keyspaces.first { $0.name == "Article" })
        #expect(plainStats.transformed == nil)
        var stats = try #require(try store.statistics().keyspaces.first { $0.name == "Article" })
        var transformed = try #require(stats.transformed)
        #expect(transformed == .init(opened: articles.count, storedBytes: stats.valueBytes, plainBytes: plainStats.valueBytes, unopened: 0))
        #expect(transformed.storedBytes * 4 < transformed.plainBytes, "\(transformed)")
        // A damaged value is counted as not opened, and left out of both sums.
        try store.engine.write { tx in
            var damaged = try #require(try tx.get(storedKey))
            damaged[damaged.count / 2] ^= 0x10
            try tx.put(damaged, forKey: storedKey)
        }
        stats = try #require(try store.statistics().keyspaces.first { $0.name == "Article" })
        transformed = try #require(stats.transformed)
        #expect(transformed.opened == articles.count - 1 && transformed.unopened == 1 && transformed.storedBytes == stats.valueBytes - storedSample.count,
                "\(transformed)")
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
