import ArgumentParser
import Foundation
import StrataBundledEngines
import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataRecords
import StrataToolSupport

/// A book as `@IndexKeyRecord("id") struct Book { var id: Int; var title: String; … }` stores it:
/// the members the macro generates, written out (this command is built without the macro, to
/// keep swift-syntax out of `make run`).
struct MacroBook: Record {
    var id: Int
    var title: String
    var author: String
    var year: Int
    var rating: Double
    var tags: [String]

    static let recordType = RecordType(keyspace: "Book", key: [("id", Int.self)],
                                       fields: [("title", .of(String.self)), ("author", .of(String.self)), ("year", .of(Int.self)),
                                                ("rating", .of(Double.self)), ("tags", .of([String].self))])
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) {
        fields.write(title); fields.write(author); fields.write(year); fields.write(rating); fields.write(tags)
    }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read(Int.self)
        title = try fields.read(String.self); author = try fields.read(String.self); year = try fields.read(Int.self)
        rating = try fields.read(Double.self); tags = try fields.read([String].self)
    }
    init(_ book: CodableBook) {
        id = book.id; title = book.title; author = book.author; year = book.year; rating = book.rating; tags = book.tags
    }
}

/// The same book as a plain `Codable` type: no macro, no members.
struct CodableBook: CodableRecord {
    var id: Int
    var title: String
    var author: String
    var year: Int
    var rating: Double
    var tags: [String]
    static var keyspace: String { "Book" }
}

/// `strata bench-codable`: what a plain Codable record costs against the macro's record of the
/// same fields (release build), per engine: inserts and point fetches.
struct CodableBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-codable",
        abstract: "Measure a plain Codable record (CodableRecord) against the macro's record of the same fields: inserts and point fetches.")

    @Option(help: "Records per store.") var records = 100_000
    @Option(help: "Point fetches per round.") var lookups = 50_000
    @Option(parsing: .upToNextOption, help: "Engines: lmdb leveldb sqlite memory.") var engines: [String] = ["lmdb", "leveldb", "sqlite"]
    @Option(help: "Scratch directory for the stores (removed afterwards).") var scratch = NSTemporaryDirectory()

    /// The target: a Codable record runs at ≥ 0.8 of the macro record's speed (#45).
    static let target = 0.8

    func run() throws {
        #if DEBUG
        say("note: this is a debug build; figures mean little. Use: swift run -c release strata bench-codable")
        #endif
        let root = (scratch as NSString).appendingPathComponent("strata-bench-codable-\(getpid())")
        defer { try? FileManager.default.removeItem(atPath: root) }
        var random = SeededRandom(seed: 45)
        let words = ["the", "sea", "of", "glass", "night", "orbit", "winter", "machine", "river", "atlas"]
        let books = (0..<records).map { id in
            CodableBook(id: id, title: (0..<4).map { _ in words.randomElement(using: &random)! }.joined(separator: " "),
                        author: "Author \(Int.random(in: 0..<5_000, using: &random))", year: Int.random(in: 1800...2026, using: &random),
                        rating: Double(Int.random(in: 0...50, using: &random)) / 10, tags: (0..<Int.random(in: 0...3, using: &random)).map { words[$0] })
        }.shuffled(using: &random)
        let macroBooks = books.map(MacroBook.init)
        let probes = (0..<lookups).map { _ in Int.random(in: 0..<records, using: &random) }
        say("Codable benchmark: \(records) books (Int id; title, author, year, rating, tags), inserts of 1,000 per transaction, \(lookups) point fetches a round; "
            + "CodableRecord (binary Codable value) against the macro's record of the same fields")
        for engine in engines {
            guard let kind = BundledEngines.named(engine) else { throw ValidationError("unknown engine \(engine)") }
            func store(_ name: String) throws -> Store {
                try Store(engine: try kind.open("\(root)/\(engine)-\(name)", EngineOptions(durability: .relaxed)))
            }
            let macroStore = try store("macro"), codableStore = try store("codable")
            // Inserts in five fifths, alternating; fetches in five interleaved rounds: a ratio is
            // the median of five (one slow moment on a shared machine moves one round).
            var macroInserts: [Double] = [], codableInserts: [Double] = [], macroFetches: [Double] = [], codableFetches: [Double] = []
            for round in 0..<IndexBench.rounds {
                let slice = (records * round / IndexBench.rounds)..<(records * (round + 1) / IndexBench.rounds)
                macroInserts.append(try Self.insert(macroStore, macroBooks[slice]))
                codableInserts.append(try Self.insert(codableStore, books[slice]))
            }
            for _ in 0..<IndexBench.rounds {
                macroFetches.append(try IndexBench.time(probes.count) {
                    // What the macro's `Book.fetch(in: ctx, id: id)` calls.
                    try macroStore.withReadTransaction { ctx in for id in probes { _ = try ctx.fetch(MacroBook.self) { $0.append(id) } } }
                })
                codableFetches.append(try IndexBench.time(probes.count) {
                    try codableStore.withReadTransaction { ctx in for id in probes { _ = try CodableBook.fetch(in: ctx, id: id) } }
                })
            }
            let coding = (macro: try Self.coding(macroBooks), codable: try Self.coding(books), json: try Self.jsonCoding(books))
            let sizes = [try macroStore.withReadTransaction { ctx in try ctx.count(MacroBook.self) },
                         try codableStore.withReadTransaction { ctx in try ctx.count(CodableBook.self) }]
            guard sizes == [records, records] else { throw ValidationError("\(engine): stores hold \(sizes) books, not \(records)") }
            let valueBytes = (try Self.valueBytes(macroStore, MacroBook(books[0])), try Self.valueBytes(codableStore, books[0]))
            try macroStore.close()
            try codableStore.close()
            // Speed ratios: the macro record's time over the Codable record's (1 = as fast).
            let insertRatio = IndexBench.medianRatio(macroInserts, codableInserts), fetchRatio = IndexBench.medianRatio(macroFetches, codableFetches)
            say("")
            say("\(engine):")
            say(String(format: "  insert (µs)   macro %6.2f   Codable %6.2f   Codable at %.2f× the macro's speed",
                       IndexBench.median(macroInserts) * 1e6, IndexBench.median(codableInserts) * 1e6, insertRatio))
            say(String(format: "  fetch (µs)    macro %6.2f   Codable %6.2f   Codable at %.2f× the macro's speed",
                       IndexBench.median(macroFetches) * 1e6, IndexBench.median(codableFetches) * 1e6, fetchRatio))
            say(String(format: "  in memory (µs) encode: macro %5.2f, Codable %5.2f   decode: macro %5.2f, Codable %5.2f   (no engine: the value alone; Foundation's JSONEncoder %5.2f, JSONDecoder %5.2f)",
                       coding.macro.encode * 1e6, coding.codable.encode * 1e6, coding.macro.decode * 1e6, coding.codable.decode * 1e6,
                       coding.json.encode * 1e6, coding.json.decode * 1e6))
            say("  stored value of the first book: macro \(valueBytes.0) bytes, Codable \(valueBytes.1) bytes")
            let met = { (ratio: Double) in ratio >= Self.target ? "met" : "missed" }
            say("  targets (median of \(IndexBench.rounds) rounds): Codable insert ≥ \(Self.target)× the macro's speed: \(met(insertRatio)); fetch ≥ \(Self.target)×: \(met(fetchRatio))")
        }
    }

    /// Seconds per record to insert `books`, 1,000 per transaction.
    static func insert<R: Record>(_ store: Store, _ books: ArraySlice<R>) throws -> Double {
        try IndexBench.time(books.count) {
            var start = books.startIndex
            while start < books.endIndex {
                let end = min(start + 1_000, books.endIndex)
                try store.withTransaction { ctx in for book in books[start..<end] { try ctx.insert(book) } }
                start = end
            }
        }
    }

    /// Seconds per record to encode the fields of the first 10,000 `records` and to decode them
    /// back (key and fields), without an engine: the medians of five rounds.
    static func coding<R: Record>(_ records: [R]) throws -> (encode: Double, decode: Double) {
        let sample = Array(records.prefix(10_000))
        var keys: [[UInt8]] = [], values: [[UInt8]] = []
        for record in sample {
            var key = KeyWriter(), fields = FieldWriter()
            record.writeKey(to: &key)
            record.writeFields(to: &fields)
            keys.append(key.bytes)
            values.append(fields.bytes)
        }
        var encodes: [Double] = [], decodes: [Double] = []
        for _ in 0..<IndexBench.rounds {
            var fields = FieldWriter()
            encodes.append(try IndexBench.time(sample.count) {
                for record in sample {
                    fields.removeAll()
                    record.writeFields(to: &fields)
                }
            })
            decodes.append(try IndexBench.time(sample.count) {
                for (key, value) in zip(keys, values) {
                    _ = try key.withUnsafeBytes { key in
                        try value.withUnsafeBytes { value in
                            var keyReader = KeyReader(key), fieldReader = FieldReader(value)
                            return try R(key: &keyReader, fields: &fieldReader)
                        }
                    }
                }
            })
        }
        return (IndexBench.median(encodes), IndexBench.median(decodes))
    }

    /// ``coding(_:)`` through Foundation's JSONEncoder and JSONDecoder, for scale.
    static func jsonCoding(_ books: [CodableBook]) throws -> (encode: Double, decode: Double) {
        let sample = Array(books.prefix(10_000))
        let encoder = JSONEncoder(), decoder = JSONDecoder()
        let encoded = try sample.map { try encoder.encode($0) }
        var encodes: [Double] = [], decodes: [Double] = []
        for _ in 0..<IndexBench.rounds {
            encodes.append(try IndexBench.time(sample.count) { for book in sample { _ = try encoder.encode(book) } })
            decodes.append(try IndexBench.time(sample.count) { for data in encoded { _ = try decoder.decode(CodableBook.self, from: data) } })
        }
        return (IndexBench.median(encodes), IndexBench.median(decodes))
    }

    /// The stored value's size of `record` (envelope included), as the engine holds it.
    static func valueBytes<R: Record>(_ store: Store, _ record: R) throws -> Int {
        var key = KeyWriter()
        key.append(R.recordType.keyspace)
        record.writeKey(to: &key)
        return try store.engine.read { tx in try tx.get(key.bytes)?.count ?? -1 }
    }
}
