import ArgumentParser
import Foundation
import StrataBundledEngines
import StrataCompression
import StrataEncryption
import StrataEngine
import StrataKeyCodec
import StrataRecords

/// The encryption set's record: a person with a 120-byte note.
struct BenchPerson: Record {
    var id: Int, name: String, email: String, city: String, age: Int, note: String
    static let recordType = RecordType(keyspace: "Person", key: [("id", Int.self)],
                                       fields: [("name", String.fieldFormat), ("email", String.fieldFormat), ("city", String.fieldFormat),
                                                ("age", Int.fieldFormat), ("note", String.fieldFormat)])
    init(id: Int) {
        self.id = id
        name = "Person \(id)"
        email = "person\(id)@example.org"
        city = ["Paris", "Lyon", "Berlin", "Oslo", "Lisbon"][id % 5]
        age = 18 + id % 70
        note = Self.notes[id % 97]
    }
    static let notes = (0..<97).map { String(repeating: "note \($0) ", count: 12).prefix(120).description }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) {
        fields.write(name); fields.write(email); fields.write(city); fields.write(age); fields.write(note)
    }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read(); name = try fields.read(); email = try fields.read(); city = try fields.read(); age = try fields.read()
        note = try fields.read()
    }
}

/// The compression set's record: an article of prose drawn from a fixed vocabulary, text that
/// compresses as text does.
struct BenchArticle: Record {
    var id: Int, title: String, body: String
    static let recordType = RecordType(keyspace: "Article", key: [("id", Int.self)], fields: [("title", String.fieldFormat), ("body", String.fieldFormat)])
    static let words = ("the a of to and in that is was he for it with as his on be at by had this not but from or have an they which one you "
        + "were her all she there would their we him been has when who will more no if out so said what up its about into than them can only "
        + "other new some could time these two may then do first any my now such like our over man me even most made after also did many before "
        + "must through back years where much your way well down should because each just those people how too little state good very make world "
        + "still own see men work long get here between both life being under never day same another know while last might us great old year off "
        + "come since against go came right used take three store record index engine value key transaction commit query").split(separator: " ")
    init(id: Int) {
        self.id = id
        var state = UInt64(id) &* 0x9E37_79B9_7F4A_7C15 | 1
        func word() -> Substring {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Self.words[Int(state % UInt64(Self.words.count))]
        }
        title = (0..<6).map { _ in word() }.joined(separator: " ")
        body = (0..<260).map { _ in word() }.joined(separator: " ")
    }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(title); fields.write(body) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); title = try fields.read(); body = try fields.read() }
}

/// `bench [--records N] [--reads N] [--engine NAME]`: the value transforms' cost and gain on every
/// bundled engine, with their targets (issue #48). `make run` runs it after `strata`'s benchmarks.
///
/// Encryption: one record set (a person: name, email, city, age, a 120-byte note), filled in
/// transactions of 1,000 records and read back by random key, once on a plain store and once with
/// every value sealed by RecordEncryption. Compression: a text-heavy set (articles of about 1.2 KB
/// of prose from a fixed vocabulary), plain, through RecordCompression, and through it with a
/// dictionary trained on other articles: its size on disk and its random reads. Each measured 5
/// times, medians compared. Durability is relaxed so that the disk's flushes, the same for both,
/// do not hide the transforms' cost.
struct TransformsBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Encryption's and compression's cost and gain on every bundled engine, with their targets (release build: make run).")

    @Option(help: "Records of the encryption set (the text set has a fifth as many).")
    var records = 100_000
    @Option(help: "Random reads of the encryption set.")
    var reads = 100_000
    @Option(help: "Only this engine (lmdb, leveldb, sqlite, memory).")
    var engine: String?

    func run() throws {
        let (records, reads, only, rounds, key) = (records, reads, engine, 5, EncryptionKey.random())

        /// Seconds `body` took.
        func seconds(_ body: () throws -> Void) rethrows -> Double {
            let start = ContinuousClock.now
            try body()
            let elapsed = ContinuousClock.now - start
            return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }

        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

        /// One round on a new store: the fill's and the random reads' seconds.
        func round(_ kind: EngineKind, encrypted: Bool) throws -> (fill: Double, read: Double) {
            let directory = NSTemporaryDirectory() + "strata-transforms-bench-\(getpid())-\(UUID())"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let engine = try kind.open(directory, EngineOptions(mode: .create, durability: .relaxed))
            let store = try Store(engine: engine, transforms: encrypted ? [RecordEncryption(key: key)] : [])
            defer { try? store.close() }
            let fill = try seconds {
                for start in stride(from: 0, to: records, by: 1_000) {
                    try store.withTransaction { ctx in
                        for id in start..<min(start + 1_000, records) { try ctx.insert(BenchPerson(id: id)) }
                    }
                }
            }
            var random = SystemRandomNumberGenerator()
            let ids = (0..<reads).map { _ in Int.random(in: 0..<records, using: &random) }
            var found = 0
            let read = try seconds {
                try store.withReadTransaction { ctx in
                    for id in ids where try ctx.fetch(BenchPerson.self, .all.equal(id)) != nil { found += 1 }
                }
            }
            precondition(found == reads, "random reads found \(found) of \(reads) records")
            return (fill, read)
        }

        print("Encryption's cost: \(records) records filled in transactions of 1,000, \(reads) random reads; medians of \(rounds)")
        print("engine    fill plain  fill sealed  ratio   read plain  read sealed  ratio")
        var lmdbRatios: (fill: Double, read: Double)?
        for kind in BundledEngines.all where only.map({ kind.name == $0 }) ?? true {
            var plain: [(fill: Double, read: Double)] = [], sealed: [(fill: Double, read: Double)] = []
            for _ in 0..<rounds {  // alternated, so that the machine's drifts touch both alike
                plain.append(try round(kind, encrypted: false))
                sealed.append(try round(kind, encrypted: true))
            }
            let fill = (median(plain.map(\.fill)), median(sealed.map(\.fill)))
            let read = (median(plain.map(\.read)), median(sealed.map(\.read)))
            // A ratio of speeds: plain time over sealed time (1.00: no cost; 0.85: 15% slower).
            let ratios = (fill: fill.0 / fill.1, read: read.0 / read.1)
            if kind.name == "lmdb" { lmdbRatios = ratios }
            print(kind.name.padding(toLength: 8, withPad: " ", startingAt: 0),
                  String(format: "%9.3f s  %9.3f s  %5.2f   %8.3f s  %9.3f s  %5.2f", fill.0, fill.1, ratios.fill, read.0, read.1, ratios.read))
        }

        /// Bytes the files under `directory` take on disk (allocated blocks: LMDB's map is sparse).
        func diskBytes(_ directory: String) -> Int {
            guard let files = FileManager.default.enumerator(atPath: directory) else { return 0 }
            var total = 0
            for case let name as String in files {
                var info = stat()
                if stat(directory + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { total += Int(info.st_blocks) * 512 }
            }
            return total
        }

        /// One round of the text-heavy set on a new store: its size on disk and the random reads' seconds.
        func textRound(_ kind: EngineKind, _ compression: RecordCompression?, count: Int) throws -> (bytes: Int, read: Double) {
            let directory = NSTemporaryDirectory() + "strata-transforms-bench-\(getpid())-\(UUID())"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let store = try Store(engine: try kind.open(directory, EngineOptions(mode: .create, durability: .relaxed)),
                                  transforms: compression.map { [$0] } ?? [])
            for start in stride(from: 0, to: count, by: 500) {
                try store.withTransaction { ctx in for id in start..<min(start + 500, count) { try ctx.insert(BenchArticle(id: id)) } }
            }
            var random = SystemRandomNumberGenerator()
            let ids = (0..<count).map { _ in Int.random(in: 0..<count, using: &random) }
            var found = 0
            let read = try seconds {
                try store.withReadTransaction { ctx in for id in ids where try ctx.fetch(BenchArticle.self, .all.equal(id)) != nil { found += 1 } }
            }
            precondition(found == count, "random reads found \(found) of \(count) articles")
            try store.close()
            return (diskBytes(directory), read)
        }

        let articles = max(records / 5, 1)
        // A dictionary trained on 1,000 articles of a store made for it (not timed): what a user does
        // once, with ZstdDictionary.train(from:), before opening their store with it.
        let dictionary: ZstdDictionary = try {
            let directory = NSTemporaryDirectory() + "strata-transforms-bench-\(getpid())-\(UUID())"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let store = try Store(engine: try EngineKind.memory.open(directory, EngineOptions(mode: .create, durability: .relaxed)))
            defer { try? store.close() }
            try store.withTransaction { ctx in for id in 0..<1_000 { try ctx.insert(BenchArticle(id: 1_000_000 + id)) } }
            return try ZstdDictionary.train(from: store)
        }()
        print("\nCompression: \(articles) articles of about \(BenchArticle(id: 1).body.utf8.count) bytes, through zstd (level 3) without and with a "
              + "\(dictionary.bytes.count)-byte dictionary; medians of \(rounds)")
        print("engine    size plain   size zstd   smaller   read plain   read zstd   ratio   size dict   smaller   read dict   ratio")
        var lmdbText: (smaller: Double, read: Double, dictSmaller: Double, dictRead: Double)?
        for kind in BundledEngines.onDisk where only.map({ kind.name == $0 }) ?? true {
            var plain: [(bytes: Int, read: Double)] = [], packed: [(bytes: Int, read: Double)] = [], withDictionary: [(bytes: Int, read: Double)] = []
            for _ in 0..<rounds {
                plain.append(try textRound(kind, nil, count: articles))
                packed.append(try textRound(kind, RecordCompression(), count: articles))
                withDictionary.append(try textRound(kind, RecordCompression(dictionary: dictionary), count: articles))
            }
            func medians(_ runs: [(bytes: Int, read: Double)]) -> (bytes: Int, read: Double) { (runs.map(\.bytes).sorted()[rounds / 2], median(runs.map(\.read))) }
            let (p, z, d) = (medians(plain), medians(packed), medians(withDictionary))
            let result = (smaller: Double(p.bytes) / Double(z.bytes), read: p.read / z.read, dictSmaller: Double(p.bytes) / Double(d.bytes), dictRead: p.read / d.read)
            if kind.name == "lmdb" { lmdbText = result }
            print(kind.name.padding(toLength: 8, withPad: " ", startingAt: 0),
                  String(format: "%8.1f MB  %8.1f MB  %6.2fx   %8.3f s  %8.3f s  %5.2f  %7.1f MB  %6.2fx  %8.3f s  %5.2f", Double(p.bytes) / 1e6, Double(z.bytes) / 1e6,
                         result.smaller, p.read, z.read, result.read, Double(d.bytes) / 1e6, result.dictSmaller, d.read, result.dictRead))
        }

        // Targets (issue #48): on LMDB, fill and random reads with encryption at 0.85 or more of the
        // plain store's speed; the text-heavy set compressed at least 2x smaller on disk, with random
        // reads at 0.8 or more of the plain store's speed.
        print("\ntargets")
        func report(_ name: String, _ value: Double, _ target: Double, _ unit: String = "") {
            print("  \(value >= target ? "met   " : "missed") \(name): \(String(format: "%.2f", value))\(unit) (target ≥ \(target)\(unit))")
        }
        if let lmdb = lmdbRatios {
            report("lmdb fill, sealed vs plain", lmdb.fill, 0.85)
            report("lmdb readrandom, sealed vs plain", lmdb.read, 0.85)
        }
        if let text = lmdbText {
            report("lmdb text set on disk, plain / zstd", text.smaller, 2, "x")
            report("lmdb text readrandom, zstd vs plain", text.read, 0.8)
            report("lmdb text set on disk, plain / zstd with a dictionary", text.dictSmaller, 2, "x")
            report("lmdb text readrandom, zstd with a dictionary vs plain", text.dictRead, 0.8)
        }
    }
}
