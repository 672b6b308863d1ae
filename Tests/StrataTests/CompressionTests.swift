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

    /// Short log lines: alike, and too short to compress well alone.
    static func logLine(_ id: Int) -> Note {
        let cities = ["Paris", "Lyon", "Oslo", "Berlin", "Lisbon"], devices = ["iPhone 15", "Pixel 8", "ThinkPad X1", "iPad Air"]
        return Note(id: id, text: "{\"event\":\"login\",\"user\":\(1_000 + id * 7 % 613),\"city\":\"\(cities[id % 5])\","
                    + "\"device\":\"\(devices[id % 4])\",\"ok\":\(id % 9 != 0),\"ms\":\(id * 37 % 900)}")
    }

    @Test("a dictionary trained from the store's records: opening with it re-compresses every value through the rotation job, smaller; the store then opens only with that dictionary",
          arguments: TestEngines.all)
    func dictionary(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let notes = (0..<400).map(Self.logLine)
        // One engine for every store: a memory store ends with its engine.
        let engine = try kind.open(dir.path, EngineOptions(mode: .create, durability: .full))
        func open(_ compression: RecordCompression) throws -> Store { try Store(engine: engine, readOnly: false, transforms: [compression]) }
        let first = try open(RecordCompression(minimumLength: 16))
        var store = first
        try store.withTransaction { ctx in for note in notes { try ctx.insert(note) } }
        let withoutDictionary = try #require(try store.statistics().keyspaces.first { $0.name == "Note" }?.transformed)
        let dictionary = try ZstdDictionary.train(from: store, keyspace: "Note", samples: 300, size: 2_048)
        #expect(try store.fieldSamples(keyspace: "Note", limit: 50).count == 50)

        let compression = RecordCompression(minimumLength: 16, dictionary: dictionary)
        #expect(compression.name == "zstd dictionary \(dictionary.idDescription)")
        store = try open(compression)
        #expect(try store.statistics().manifest?.retiring == ["zstd"])
        let report = try store.rotateKeys(batchSize: 64).wait()
        #expect(report.finished && report.records == notes.count && report.unreadable == 0, "\(report)")
        #expect(try store.withReadTransaction { ctx in try ctx.select(Note.self) } == notes)
        let stats = try store.statistics()
        #expect(stats.manifest?.transforms == [compression.name] && stats.manifest?.retiring == [])
        let withDictionary = try #require(stats.keyspaces.first { $0.name == "Note" }?.transformed)
        #expect(withDictionary.plainBytes == withoutDictionary.plainBytes && withDictionary.opened == notes.count)
        #expect(withDictionary.storedBytes * 2 < withoutDictionary.storedBytes, "with \(withDictionary), without \(withoutDictionary)")
        var flags: [UInt8: Int] = [:]  // the flag byte after each value's version
        try store.dumpRaw(.prefix(KeyCodec.encode("Note"))) { _, value in
            if let version = value.firstIndex(where: { $0 < 0x80 }) { flags[value[version + 1], default: 0] += 1 }
            return true
        }
        #expect(flags == [2: notes.count], "\(flags)")
        #expect(try store.verify().isClean)

        store = try open(RecordCompression(level: 9, minimumLength: 16, dictionary: dictionary))
        #expect(try store.withReadTransaction { ctx in try ctx.fetch(Note.self, .all.equal(17)) } == notes[17])

        // With another dictionary, or without one, the store is refused at open (a refused open
        // closes the engine it was given: the open's own check first, then one open).
        let other = try ZstdDictionary.train(samples: (0..<300).map { Array("other text \($0) ".utf8) + Array(repeating: UInt8($0 % 200), count: 40) }, size: 1_024)
        #expect(other.id != dictionary.id)
        #expect(throws: RecordError.self) { _ = try Manifest.check(engine, readOnly: false, transforms: [RecordCompression(dictionary: other)]) }
        #expect(throws: RecordError.self) { _ = try open(RecordCompression()) }
        _ = first
    }

    @Test("a dictionary refuses bytes that are not one, and samples too few to train on")
    func dictionaryRefusals() throws {
        #expect(throws: ZstdDictionaryError.notADictionary(3)) { _ = try ZstdDictionary(bytes: [1, 2, 3]) }
        #expect(throws: ZstdDictionaryError.self) { _ = try ZstdDictionary.train(samples: [Array("one".utf8), Array("two".utf8)], size: 1_024) }
        let dictionary = try ZstdDictionary.train(samples: (0..<400).map { Array(Self.logLine($0).text.utf8) }, size: 2_048)
        #expect(try ZstdDictionary(bytes: dictionary.bytes) == dictionary)
        #expect(RecordCompression(dictionary: dictionary).minimumLength == 16 && RecordCompression().minimumLength == 64)
        // A truncated dictionary, or one whose tables were damaged, still names its identifier:
        // refused when made, not when a store is opened with it.
        #expect(throws: ZstdDictionaryError.damaged(id: dictionary.id, 64)) { _ = try ZstdDictionary(bytes: Array(dictionary.bytes.prefix(64))) }
        var damaged = dictionary.bytes
        for offset in 8..<48 { damaged[offset] = 0xFF }
        #expect(throws: ZstdDictionaryError.damaged(id: dictionary.id, damaged.count)) { _ = try ZstdDictionary(bytes: damaged) }
        // A frame made with one dictionary is refused by a transform that holds another.
        let other = try ZstdDictionary.train(samples: (0..<400).map { Array(Self.logLine($0 + 5_000).text.utf8.reversed()) }, size: 2_048)
        let fields = Array(Self.logLine(3).text.utf8)
        var sealed: [UInt8] = []
        try fields.withUnsafeBytes { try RecordCompression(minimumLength: 16, dictionary: dictionary).apply($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &sealed) }
        #expect(sealed.first == 2)
        var opened: [UInt8] = []
        try sealed.withUnsafeBytes { try RecordCompression(dictionary: dictionary).reverse($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &opened) }
        #expect(opened == fields)
        #expect(throws: ValueTransformError(.missingKey, "a zstd frame made with dictionary \(dictionary.idDescription), not with this transform's \(other.idDescription)")) {
            try sealed.withUnsafeBytes { try RecordCompression(dictionary: other).reverse($0, header: UnsafeRawBufferPointer(start: nil, count: 0), to: &opened) }
        }
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
        #expect(throws: ValueTransformError(.malformed, "flag byte 3, neither 0 (stored as is), 1 (zstd) nor 2 (zstd with a dictionary)")) {
            try reverse([3] + sealed.dropFirst())
        }
        #expect(throws: ValueTransformError(.malformed, "flag 2 (zstd with a dictionary) before bytes that are not a zstd frame naming its dictionary")) {
            try reverse([2] + sealed.dropFirst())
        }
        #expect(throws: ValueTransformError(.malformed, "an empty value, without its flag byte")) { try reverse([]) }
        #expect(throws: ValueTransformError.self) { try reverse(Array(sealed.prefix(sealed.count - 3))) }
        // A frame header claiming 1 GiB of content (zstd's single-segment header, 8-byte size).
        let bomb: [UInt8] = [1, 0x28, 0xB5, 0x2F, 0xFD, 0xE0] + withUnsafeBytes(of: UInt64(1 << 30).littleEndian, Array.init) + [0, 0, 0]
        #expect(throws: ValueTransformError(.malformed, "a zstd frame declaring 1073741824 bytes of fields, over the 67108864 a value may hold")) {
            try reverse(bomb)
        }
    }
}
