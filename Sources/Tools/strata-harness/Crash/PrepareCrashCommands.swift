import ArgumentParser
import Foundation
import StrataConformance
@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec
import StrataRecords
import StrataToolSupport

// Kill -9 during online jobs: a child process prepares a record type (building a new index,
// then migrating every record to a new version) in small batches and prints each batch it
// committed; the driver kills it at a random moment, reopens the store, lets a preparation
// finish, and checks that no record was lost or duplicated, every record was migrated and the
// index equals a recomputation from the records.

/// The records before: version 1, no index.
struct CrashItemV1: Record {
    var id: Int
    var group: Int
    static let recordType = RecordType(keyspace: "CrashItem", version: 1, key: [("id", Int.self)])
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(group) }
    init(id: Int, group: Int) { (self.id, self.group) = (id, group) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); group = try fields.read() }
}

/// The records after: version 2 (the group also as text), an index on the group, a total per
/// label, a migration from 1.
struct CrashItemV2: Record {
    var id: Int
    var group: Int
    var label: String
    static let recordType = RecordType(keyspace: "CrashItem", version: 2, key: [("id", Int.self)])
    static let byGroup = RecordIndex<CrashItemV2>("byGroup", .field("group", \.group), .field("label", \.label))
    /// An index of totals: a build that counted a batch twice, or missed one, is off by its records.
    static let perLabel = RecordIndex<CrashItemV2>("perLabel", AggregateIndex.sum("group", \.group, by: .field("label", \.label)))
    static let indexes = [byGroup, perLabel]
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(group); fields.write(label) }
    init(id: Int, group: Int, label: String) { (self.id, self.group, self.label) = (id, group, label) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read(); group = try fields.read(); label = try fields.read()
    }
    static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> CrashItemV2? {
        guard version == 1 else { return nil }
        let old = try CrashItemV1(key: &key, fields: &fields)
        return CrashItemV2(id: old.id, group: old.group, label: "g\(old.group)")
    }
}

/// `strata-harness prepare-writer`: prepares CrashItemV2 in batches of 25, printing `batch N phase` after each commit.
struct PrepareWriter: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "prepare-writer", abstract: "Prepare a store until killed (crash-test helper).",
                                                    shouldDisplay: false)
    @Option var engine: EngineChoice
    @Option var path: String
    @Option(help: "After the first batch, wait (holding the store) until this file exists.") var holdUntil: String?

    func run() throws {
        let store = try Store(engine: try engine.open(path, EngineOptions(mode: .openExisting, durability: .full)))
        let counter = Counter()
        let holdUntil = holdUntil
        try store.prepare(CrashItemV2.self, batchSize: 25) { progress in
            let batch = counter.next()
            say("batch \(batch) \(progress.phase)")
            if batch == 1, let holdUntil {
                let deadline = ContinuousClock.now + .seconds(120)
                while !FileManager.default.fileExists(atPath: holdUntil) && ContinuousClock.now < deadline { usleep(10_000) }
            }
        }.wait()
        say("finished")
    }
}

/// A count shared by the progress callbacks.
final class Counter: Sendable {
    private let value = Locked(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}

/// `strata-harness prepare-crash-test`: SIGKILLs a preparing process at random moments; checks the store after each.
struct PrepareCrashTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare-crash-test",
        abstract: "Kill a process building an index and migrating records with SIGKILL; check that the finished job lost and duplicated nothing.")

    @Option(help: "lmdb, leveldb, sqlite or all.") var engine: EngineChoice = .all
    @Option(help: "Kills per engine.") var kills = 20
    @Option(help: "Records in the store.") var records = 1_500
    @Option(help: "Random seed for the kill moments.") var seed: UInt64 = 1
    @Option(help: ArgumentHelp("Damage the store after each kill (proves the checks can fail): lost, stale or total.", visibility: .hidden))
    var injectFault: String?

    func run() throws {
        var failed = false
        for kind in engine.engines where kind.declaration.capabilities.contains(.persistent) {
            let path = NSTemporaryDirectory() + "strata-prepare-crash-\(kind.name)-\(getpid())"
            // Kill after a random number of batches: 3 × records / 25 batches in all (two builds, then migration).
            let (phases, problems) = try JobCrashRounds.run(
                path: path, kills: kills, seed: seed, batches: 3 * records / 25, arguments: ["prepare-writer", "--engine", kind.name, "--path", path],
                setUp: { try Self.makeStore(kind, path, records: records) },
                phase: { $0.hasPrefix("building") ? "build" : $0.hasPrefix("migrating") ? "migration" : $0 },
                check: {
                    if let injectFault { try Self.damage(kind, path, injectFault) }
                    return try Self.finishAndCheck(kind, path, records: records)
                }, say: say)
            say("\(kind.name): \(kills) kills (\(JobCrashRounds.describe(phases))), \(problems) with lost, duplicated or stale data")
            if problems > 0 { failed = true }
        }
        if failed { throw ExitCode.failure }
    }

    /// A store at `path` holding `records` version-1 items, nothing indexed or migrated yet.
    static func makeStore(_ kind: EngineKind, _ path: String, records: Int) throws {
        let setup = try Store(engine: try kind.open(path, EngineOptions(mode: .create, durability: .relaxed)))
        try setup.withTransaction { ctx in for id in 0..<records { try ctx.insert(CrashItemV1(id: id, group: id % 17)) } }
        try setup.close()
    }

    /// What the checks must catch: a record deleted (`lost`), an index entry for a record that
    /// is not there (`stale`), or a total no records call for (`total`), written underneath the record layer.
    static func damage(_ kind: EngineKind, _ path: String, _ fault: String) throws {
        let engine = try kind.open(path, EngineOptions(mode: .openExisting))
        defer { try? engine.close() }
        try engine.write { tx in
            switch fault {
            case "lost": try tx.delete(KeyCodec.encode("CrashItem", 7))
            case "stale":
                // Generation 1 of byGroup: an entry naming record 1,000,000 in group 3.
                try tx.put([], forKey: [0] + KeyCodec.encode("ix", "CrashItem", "byGroup", 1, 3, "g3", 1_000_000))
            case "total":
                // Generation 1 of perLabel: a total of one record (count 1, sum 3) in a label no record has.
                try tx.put([1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0], forKey: [0] + KeyCodec.encode("ix", "CrashItem", "perLabel", 1, "g999"))
            default: throw ValidationError("unknown fault \(fault)")
            }
        }
    }

    /// Reopens the store, finishes the preparation and checks it; a description of what is wrong, or nil.
    static func finishAndCheck(_ kind: EngineKind, _ path: String, records: Int) throws -> String? {
        let store = try Store(engine: try kind.open(path, EngineOptions(mode: .openExisting)))
        defer { try? store.close() }
        let report = try store.prepare(CrashItemV2.self, batchSize: 25).wait()
        if report.unconvertible + report.unindexed > 0 { return "\(report.unconvertible + report.unindexed) records unreadable" }
        return try store.withReadTransaction { ctx in
            let all = try CrashItemV2.select(in: ctx)
            if all.count != records { return "\(all.count) records, expected \(records)" }
            if all.map(\.id) != Array(0..<records) { return "records lost or out of order" }
            if let wrong = all.first(where: { $0.group != $0.id % 17 || $0.label != "g\($0.group)" }) { return "record \(wrong.id) migrated wrongly" }
            for result in try ctx.verifyIndexes(CrashItemV2.self) where !result.isExact {
                return "index \(result.index): \(result.missingCount) missing, \(result.staleCount) stale entries"
            }
            let perGroup = try (0..<17).map { try CrashItemV2.byGroup.count(in: ctx, .all.equal($0)) }
            if perGroup.reduce(0, +) != records { return "the index counts \(perGroup.reduce(0, +)) records" }
            let total = try CrashItemV2.perLabel.total(in: ctx)
            let sum = Int64((0..<records).reduce(0) { $0 + $1 % 17 })
            if total != AggregateTotal(count: Int64(records), sum: sum) { return "the totals are \(total), expected count \(records), sum \(sum)" }
            return nil
        }
    }
}
