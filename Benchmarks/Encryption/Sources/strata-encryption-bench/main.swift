// Encryption's cost on every bundled engine: `strata-encryption-bench [records] [reads] [engine]`.
//
// One record set (a person: name, email, city, age, a 120-byte note), filled in transactions of
// 1,000 records and read back by random key, once on a plain store and once with every value
// sealed by RecordEncryption; each measured 5 times, medians compared. Durability is relaxed so
// that the disk's flushes, the same for both, do not hide the cipher's cost.
import Foundation
import StrataBundledEngines
import StrataEncryption
import StrataEngine
import StrataKeyCodec
import StrataRecords

struct Person: Record {
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

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let only = CommandLine.arguments.dropFirst().first { Int($0) == nil }
let records = arguments.first ?? 100_000
let reads = arguments.dropFirst().first ?? 100_000
let rounds = 5
let key = EncryptionKey.random()

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
    let directory = NSTemporaryDirectory() + "strata-encryption-bench-\(getpid())-\(UUID())"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let engine = try kind.open(directory, EngineOptions(mode: .create, durability: .relaxed))
    let store = try Store(engine: engine, transforms: encrypted ? [RecordEncryption(key: key)] : [])
    defer { try? store.close() }
    let fill = try seconds {
        for start in stride(from: 0, to: records, by: 1_000) {
            try store.withTransaction { ctx in
                for id in start..<min(start + 1_000, records) { try ctx.insert(Person(id: id)) }
            }
        }
    }
    var random = SystemRandomNumberGenerator()
    let ids = (0..<reads).map { _ in Int.random(in: 0..<records, using: &random) }
    var found = 0
    let read = try seconds {
        try store.withReadTransaction { ctx in
            for id in ids where try ctx.fetch(Person.self, .all.equal(id)) != nil { found += 1 }
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

// Targets (issue #48): on LMDB, fill and random reads with encryption at 0.85 or more of the
// plain store's speed.
print("\ntargets")
if let lmdb = lmdbRatios {
    for (name, ratio) in [("lmdb fill, sealed vs plain", lmdb.fill), ("lmdb readrandom, sealed vs plain", lmdb.read)] {
        print("  \(ratio >= 0.85 ? "met   " : "missed") \(name): \(String(format: "%.2f", ratio)) (target ≥ 0.85)")
    }
}
