import ArgumentParser
import Foundation
import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataRecords
import StrataToolSupport

// Kill -9 during a bulk import: a child process imports records (half of them replacing records
// already stored) in small batches and prints each batch it committed; the driver kills it at a
// random moment, reopens the store, runs the same import again (it resumes), and checks that no
// record was lost or written twice and that every index and total equals a recomputation.

/// An imported record: an index on its group, a unique code, a count per group.
struct ImportItem: Record, Equatable {
    var id: Int
    var group: Int
    var code: String
    static let recordType = RecordType(keyspace: "ImportItem", version: 1, key: [("id", Int.self)])
    static let byGroup = RecordIndex<ImportItem>("byGroup", .field("group", \.group))
    static let byCode = RecordIndex<ImportItem>("byCode", .field("code", \.code), unique: true)
    static let perGroup = RecordIndex<ImportItem>("perGroup", AggregateIndex.count(by: .field("group", \.group)))
    static let indexes = [byGroup, byCode, perGroup]
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(group); fields.write(code) }
    init(id: Int, group: Int, code: String) { (self.id, self.group, self.code) = (id, group, code) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); group = try fields.read(); code = try fields.read() }

    /// The records stored before the import: ids 0..<200.
    static func before() -> [ImportItem] { (0..<200).map { ImportItem(id: $0, group: $0 * 7 % 13, code: "old-\($0)") } }

    /// What the import writes: ids 100..<records + 100 in a shuffled order (so batches are not
    /// sorted); ids 100..<200, scattered through it, replace stored records.
    static func source(records: Int) -> [ImportItem] {
        var random = SeededRandom(seed: 77)
        return (100..<(records + 100)).shuffled(using: &random).map { ImportItem(id: $0, group: $0 % 13, code: "new-\($0)") }
    }

    /// The store once the import finished.
    static func expected(records: Int) -> [ImportItem] {
        (before().prefix(100) + source(records: records)).sorted { $0.id < $1.id }
    }
}

/// `strata-harness import-writer`: imports `ImportItem.source` in batches of 40, printing `batch N importing` after each commit.
struct ImportWriter: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "import-writer", abstract: "Import records until killed (crash-test helper).",
                                                    shouldDisplay: false)
    @Option var engine: EngineChoice
    @Option var path: String
    @Option var records = 1_000

    func run() throws {
        let store = try Store(engine: try engine.open(path, EngineOptions(mode: .openExisting, durability: .full)))
        var batch = 0
        try store.importRecords(ImportItem.source(records: records), job: "crash", batchSize: 40) { _ in
            batch += 1
            say("batch \(batch) importing")
        }
        say("finished")
    }
}

/// `strata-harness import-crash-test`: SIGKILLs an importing process at random moments; checks the store after each.
struct ImportCrashTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-crash-test",
        abstract: "Kill a process importing records with SIGKILL; check that resuming the import lost and duplicated nothing.")

    @Option(help: "lmdb, leveldb, sqlite or all.") var engine: EngineChoice = .all
    @Option(help: "Kills per engine.") var kills = 20
    @Option(help: "Records the import writes.") var records = 1_000
    @Option(help: "Random seed for the kill moments.") var seed: UInt64 = 1
    @Option(help: ArgumentHelp("Damage the store after each kill (proves the checks can fail): lost or stale.", visibility: .hidden))
    var injectFault: String?

    func run() throws {
        var failed = false
        for kind in engine.engines where kind.declaration.capabilities.contains(.persistent) {
            let path = NSTemporaryDirectory() + "strata-import-crash-\(kind.name)-\(getpid())"
            let (phases, problems) = try JobCrashRounds.run(
                path: path, kills: kills, seed: seed, batches: records / 40,
                arguments: ["import-writer", "--engine", kind.name, "--path", path, "--records", "\(records)"],
                setUp: {
                    let store = try Store(engine: try kind.open(path, EngineOptions(mode: .create, durability: .relaxed)))
                    try store.withTransaction { ctx in for item in ImportItem.before() { try ctx.insert(item) } }
                    try store.close()
                },
                check: {
                    if let injectFault { try Self.damage(kind, path, injectFault) }
                    return try Self.resumeAndCheck(kind, path, records: records)
                }, say: say)
            say("\(kind.name): \(kills) kills (\(JobCrashRounds.describe(phases))), \(problems) with lost, duplicated or stale data")
            if problems > 0 { failed = true }
        }
        if failed { throw ExitCode.failure }
    }

    /// What the checks must catch: a record deleted under the record layer (`lost`), or an
    /// index entry for a record that is not there (`stale`).
    static func damage(_ kind: EngineKind, _ path: String, _ fault: String) throws {
        let engine = try kind.open(path, EngineOptions(mode: .openExisting))
        defer { try? engine.close() }
        try engine.write { tx in
            switch fault {
            case "lost": try tx.delete(KeyCodec.encode("ImportItem", 150))
            case "stale": try tx.put([], forKey: [0] + KeyCodec.encode("ix", "ImportItem", "byGroup", 1, 3, 5_000_000))
            default: throw ValidationError("unknown fault \(fault)")
            }
        }
    }

    /// Reopens the store, runs the import again (it resumes after what the killed one committed)
    /// and checks the result; a description of what is wrong, or nil.
    static func resumeAndCheck(_ kind: EngineKind, _ path: String, records: Int) throws -> String? {
        let store = try Store(engine: try kind.open(path, EngineOptions(mode: .openExisting)))
        defer { try? store.close() }
        // Where the killed import stopped, as it stored it: 8 bytes of count, then a key.
        let position = try store.engine.read { tx in try tx.get([0] + KeyCodec.encode("job", "import/ImportItem/crash")) }
        let committed = position.map { bytes in Int(bytes.prefix(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) } ?? 0
        let source = ImportItem.source(records: records)
        let storedIDs = Set(try store.withReadTransaction { ctx in try ImportItem.select(in: ctx) }.map(\.id))
        let report = try store.importRecords(source, job: "crash", batchSize: 40)
        if report.resumedAfter != committed { return "the import resumed after \(report.resumedAfter) elements, its position said \(committed)" }
        if report.resumedAfter + report.imported != records {
            return "the resumed import passed over \(report.resumedAfter) and wrote \(report.imported) of \(records) records"
        }
        // What the resumed part replaced: exactly the records of its elements that were stored
        // when it began (a kill after the last batch leaves no position: all of them).
        let replacing = source[report.resumedAfter...].filter { storedIDs.contains($0.id) }.count
        if report.replaced != replacing { return "the resumed import replaced \(report.replaced) records, expected \(replacing)" }
        if try store.engine.read({ tx in try tx.get([0] + KeyCodec.encode("job", "import/ImportItem/crash")) }) != nil {
            return "the import's position was left behind"
        }
        return try store.withReadTransaction { ctx in
            let all = try ImportItem.select(in: ctx)
            let expected = ImportItem.expected(records: records)
            if all.count != expected.count { return "\(all.count) records, expected \(expected.count)" }
            if all != expected { return "records differ from the expected ones" }
            for result in try ctx.verifyIndexes(ImportItem.self) where !result.isExact {
                return "index \(result.index): \(result.missingCount) missing, \(result.staleCount) stale entries"
            }
            for group in 0..<13 {
                let counted = expected.filter { $0.group == group }.count
                if try ImportItem.perGroup.total(in: ctx, .all.equal(group)).count != counted { return "the total of group \(group) is wrong" }
                if try ImportItem.byGroup.count(in: ctx, .all.equal(group)) != counted { return "the index counts group \(group) wrongly" }
            }
            return nil
        }
    }
}
