import ArgumentParser
import Foundation
import StrataBundledEngines
import StrataConformance
import StrataEncryption
@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec
import StrataRecords
import StrataToolSupport

// Kill -9 during a key rotation: a child process opens an encrypted store with a new key (which
// begins the rotation) and re-seals it in small batches, printing each batch it committed; the
// driver kills it at a random moment, reopens the store, lets the rotation finish, and checks
// that every record reads as written and that no value is left under the old key.

/// A record with a covering index, whose entries hold the sealed value too.
struct SealedItem: Record, Equatable {
    var id: Int
    var group: Int
    var note: String
    static let recordType = RecordType(keyspace: "SealedItem", key: [("id", Int.self)],
                                       fields: [("group", Int.fieldFormat), ("note", String.fieldFormat)])
    static let byGroup = RecordIndex<SealedItem>("byGroup", .field("group", \.group), covering: true)
    static let indexes = [byGroup]
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(group); fields.write(note) }
    init(id: Int) { (self.id, group, note) = (id, id % 13, "a secret note of item \(id)") }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); group = try fields.read(); note = try fields.read() }
}

/// The crash test's keys: the store is made under `old` and rotated to `new`.
enum RotationKeys {
    static let old = try! EncryptionKey(bytes: (1...32).map { UInt8($0) })
    static let new = try! EncryptionKey(bytes: (33...64).map { UInt8($0) })
    static var rotating: [any ValueTransform] { [try! RecordEncryption(keys: StaticKeys(current: new, previous: [old]))] }
}

/// `strata-transforms rotation-writer`: rotates the store to the new key in batches of 25,
/// printing `batch N phase` after each commit.
struct RotationWriter: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rotation-writer", abstract: "Rotate a store's key until killed (crash-test helper).",
                                                    shouldDisplay: false)
    @Option var engine: String
    @Option var path: String

    func run() throws {
        guard let kind = BundledEngines.named(engine) else { throw ValidationError("unknown engine \(engine)") }
        let store = try Store(engine: try kind.open(path, EngineOptions(mode: .openExisting, durability: .full)), transforms: RotationKeys.rotating)
        let batches = Locked(0)
        try store.rotateKeys(batchSize: 25) { progress in
            say("batch \(batches.withLock { $0 += 1; return $0 }) \(progress.phase)")
        }.wait()
        say("finished")
    }
}

/// `strata-transforms rotation-crash-test`: SIGKILLs a rotating process at random moments;
/// checks the store after each.
struct RotationCrashTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotation-crash-test",
        abstract: "Kill a process rotating a store's key with SIGKILL; check that every record reads as written and none is left under the old key.")

    @Option(help: "lmdb, leveldb, sqlite or all.") var engine = "all"
    @Option(help: "Kills per engine.") var kills = 20
    @Option(help: "Records in the store.") var records = 600
    @Option(help: "Random seed for the kill moments.") var seed: UInt64 = 1
    @Option(help: ArgumentHelp("Put a value sealed under the old key back after each rotation (proves the check can fail): old-value.", visibility: .hidden))
    var injectFault: String?

    func run() throws {
        let kinds = engine == "all" ? BundledEngines.onDisk : try BundledEngines.onDisk.filter { $0.name == engine }.nonEmpty(engine)
        var failed = false
        for kind in kinds {
            let path = NSTemporaryDirectory() + "strata-rotation-crash-\(kind.name)-\(getpid())"
            var oldValue: (key: [UInt8], value: [UInt8])?
            // Kill after a random number of batches: records, then as many covering entries, 25 a batch.
            let (phases, problems) = try JobCrashRounds.run(
                path: path, kills: kills, seed: seed, batches: 2 * records / 25, arguments: ["rotation-writer", "--engine", kind.name, "--path", path],
                setUp: { oldValue = try Self.makeStore(kind, path, records: records) },
                check: { try Self.finishAndCheck(kind, path, records: records, inject: injectFault == "old-value" ? oldValue : nil) }, say: say)
            say("\(kind.name): \(kills) kills (\(JobCrashRounds.describe(phases))), \(problems) with records lost or changed or values under the old key")
            if problems > 0 { failed = true }
        }
        if failed { throw ExitCode.failure }
    }

    /// A store at `path` holding `records` items sealed under the old key; the stored value of item 7.
    static func makeStore(_ kind: EngineKind, _ path: String, records: Int) throws -> (key: [UInt8], value: [UInt8]) {
        let setup = try Store(engine: try kind.open(path, EngineOptions(mode: .create, durability: .relaxed)),
                              transforms: [RecordEncryption(key: RotationKeys.old)])
        defer { try? setup.close() }
        try setup.withTransaction { ctx in for id in 0..<records { try ctx.insert(SealedItem(id: id)) } }
        let key = KeyCodec.encode("SealedItem", 7)
        return (key, try setup.engine.read { tx in try tx.get(key)! })
    }

    /// Reopens the store, finishes the rotation and checks it; a description of what is wrong, or nil.
    static func finishAndCheck(_ kind: EngineKind, _ path: String, records: Int, inject: (key: [UInt8], value: [UInt8])?) throws -> String? {
        let store = try Store(engine: try kind.open(path, EngineOptions(mode: .openExisting)), transforms: RotationKeys.rotating)
        defer { try? store.close() }
        let report = try store.rotateKeys(batchSize: 25).wait()
        if report.unreadable > 0 { return "\(report.unreadable) values could not be re-sealed" }
        if let inject { try store.engine.write { tx in try tx.put(inject.value, forKey: inject.key) } }
        if try !Store.storedTransforms(in: store.engine).retiring.isEmpty { return "the manifest still retires the old key" }
        let under = try sealedUnder(store)
        if under != [RotationKeys.new.id: 2 * records] { return "values per key identifier: \(under), expected \(2 * records) under the new key" }
        let wrong = try store.withReadTransaction { ctx -> String? in
            let all = try SealedItem.select(in: ctx)
            if all != (0..<records).map(SealedItem.init(id:)) { return "\(all.count) records read, not the \(records) written" }
            let covered = try (0..<13).flatMap { try SealedItem.byGroup.select(in: ctx, .all.equal($0)) }.sorted { $0.id < $1.id }
            return covered == all ? nil : "the covering index reads \(covered.count) records otherwise"
        }
        if let wrong { return wrong }
        let check = try store.verify()
        return check.isClean ? nil : "verify: \(check.problems.map(\.description).joined(separator: "; "))"
    }

    /// The key identifiers the store's sealed values name (record values and covering entries), counted.
    static func sealedUnder(_ store: Store) throws -> [UInt32: Int] {
        let indexEntries: [UInt8] = [0] + KeyCodec.encode("ix")
        var ids: [UInt32: Int] = [:]
        try store.dumpRaw { key, value in
            guard key.first != 0 || (key.starts(with: indexEntries) && !value.isEmpty) else { return true }
            // After the version's varint: the key identifier, 4 bytes big-endian (RecordFormat.md, "Encrypted values").
            guard let start = value.firstIndex(where: { $0 < 0x80 }).map({ $0 + 1 }), value.count >= start + 4 else {
                ids[0, default: 0] += 1
                return true
            }
            ids[value[start..<(start + 4)].reduce(0) { $0 << 8 | UInt32($1) }, default: 0] += 1
            return true
        }
        return ids
    }
}

extension Array {
    /// `self`, or a validation error naming `engine` when empty.
    func nonEmpty(_ engine: String) throws -> Self {
        guard !isEmpty else { throw ValidationError("unknown engine \(engine): lmdb, leveldb, sqlite or all") }
        return self
    }
}
