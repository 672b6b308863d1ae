import Foundation
import Strata
import Testing

/// The committed format-1 stores (Tests/Fixtures/StoreV1) upgraded in place by this build.
@Suite("Upgrading format-1 stores")
struct FormatUpgradeTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/StoreV1").standardized.path
    static let onDisk: [Engines] = [.lmdb, .leveldb, .sqlite]
    /// Every key outside the system part: the fixture's records and its one raw key.
    static let recordCount = FormatV1Fixture.peopleCount + FormatV1Fixture.eventCount + FormatV1Fixture.pinnedCount

    /// A fresh copy of the engine's fixture store.
    static func copy(_ engine: Engines) throws -> String {
        let path = temporaryPath()
        try FileManager.default.copyItem(atPath: fixtures + "/" + engine.rawValue, toPath: path)
        return path
    }

    /// Every record of the fixture reads back equal, and the raw key is as it was.
    static func expectContents(_ store: Store) throws {
        try store.withReadTransaction { ctx in
            let people = try ctx.select(FixturePerson.self)
            let expected = Dictionary(uniqueKeysWithValues: FormatV1Fixture.people().map { ("\($0.lastName)|\($0.firstName)", $0) })
            #expect(people.count == expected.count)
            #expect(people.allSatisfy { expected["\($0.lastName)|\($0.firstName)"] == $0 })
            #expect(try ctx.select(FixtureEvent.self) == FormatV1Fixture.events().sorted { $0.id < $1.id })
            let pinned = try ctx.select(FixturePinned.self)
            #expect(Set(pinned.map(\.id)) == Set(FormatV1Fixture.pinned().map(\.id)) && pinned.allSatisfy { FormatV1Fixture.pinned().contains($0) })
        }
        #expect(try store.engine.read { tx in try tx.get(FormatV1Fixture.rawKey) } == FormatV1Fixture.rawValue)
    }

    static let jobKey = [UInt8(0)] + KeyCodec.encode("job", "format-2")
    static let manifestKey = [UInt8(0)] + KeyCodec.encode("manifest")

    @Test("a format-1 store opens, is upgraded in place and reads every record; read-only it is refused untouched",
          arguments: onDisk)
    func upgrade(engine: Engines) throws {
        let path = try Self.copy(engine)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: RecordError.upgradeRequired(fromFormat: 1)) { try Store(engine.configuration(path), mode: .readOnly) }

        var store = try Store(engine.configuration(path))
        let report = try #require(store.formatUpgrade)
        #expect(report.fromFormat == 1 && report.converted == Self.recordCount && report.damaged == 0 && report.untouched == 1)
        #expect(report.batches >= 3, "2,820 records in batches of at most 1,000")
        try Self.expectContents(store)
        #expect(try store.engine.read { tx in try tx.get(Self.manifestKey)?.last } == 2)
        #expect(try store.engine.read { tx in try tx.exists(Self.jobKey) } == false)

        // The catalog: key layouts carried over; schemas added when a type first writes, with
        // both its format-2 and its format-1 version numbers.
        #expect(try store.keyspaces().map(\.name) == ["events", "people", "pinned"])
        #expect(try store.keyspaces().allSatisfy { $0.schemas.isEmpty })
        try store.withTransaction { ctx in
            try ctx.insert(FixturePerson(lastName: "new", firstName: "one", age: 1, email: nil, tags: [], score: 0))
        }
        let people = try #require(try store.keyspaces().first { $0.name == "people" })
        #expect(people.key == [KeyComponentDescription(name: "lastName", type: "String"), KeyComponentDescription(name: "firstName", type: "String")])
        let type = FixturePerson.recordType
        #expect(people.schemas.map(\.version) == [type.version, try #require(type.formatOneVersion)])
        #expect(people.schemas.first?.fields?.map(\.format.descriptor) == ["i64", "optional(string)", "array(string)", "f64"])
        try store.close()

        store = try Store(engine.configuration(path))
        #expect(store.formatUpgrade == nil)
        #expect(try store.withReadTransaction { ctx in try ctx.count(FixturePerson.self) } == FormatV1Fixture.peopleCount + 1)
        try store.close()
        // Now format 2: a read-only open works.
        store = try Store(engine.configuration(path), mode: .readOnly)
        #expect(try store.withReadTransaction { ctx in try ctx.count(FixtureEvent.self) } == FormatV1Fixture.eventCount)
        try store.close()
    }

    @Test("format-1 records keep reading after the type is respelled, once the type has written under format 2")
    func respelledAfterUpgrade() throws {
        let path = try Self.copy(.lmdb)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(FixturePersonRespelled.recordType.version == FixturePerson.recordType.version)
        #expect(FixturePersonRespelled.recordType.formatOneVersion != FixturePerson.recordType.formatOneVersion)
        var store = try Store(.lmdb(path: path))
        // Respelled before the type wrote: format 1's number of the old spelling is unknown to it.
        let stored = try #require(FixturePerson.recordType.formatOneVersion)
        #expect(throws: RecordError.versionMismatch(type: "FixturePersonRespelled", stored: stored, current: FixturePersonRespelled.recordType.version)) {
            try store.withReadTransaction { ctx in try ctx.select(FixturePersonRespelled.self, limit: 1) }
        }
        try store.close()
        store = try Store(.lmdb(path: path))
        try store.withTransaction { ctx in
            try ctx.insert(FixturePerson(lastName: "new", firstName: "one", age: 1, email: nil, tags: [], score: 0))
        }
        try store.close()
        // The catalog now holds the old number with the fields' formats: the respelled type reads it.
        store = try Store(.lmdb(path: path))
        let people = try store.withReadTransaction { ctx in try ctx.select(FixturePersonRespelled.self) }
        #expect(people.count == FormatV1Fixture.peopleCount + 1)
        let expected = Dictionary(uniqueKeysWithValues: FormatV1Fixture.people().map { ("\($0.lastName)|\($0.firstName)", $0) })
        #expect(people.filter { $0.lastName != "new" }.allSatisfy { p in
            expected["\(p.lastName)|\(p.firstName)"].map { $0.age == p.age && $0.email == p.email && $0.tags == p.tags && $0.score == p.score } == true
        })
        try store.close()
    }

    @Test("a damaged format-1 record is counted and left as found; it still reads as corrupt", arguments: [Engines.lmdb])
    func damagedRecord(engine: Engines) throws {
        let path = try Self.copy(engine)
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Damage one pinned record's value through the engine, as a bad disk would.
        let raw = try LMDBEngine(path: path, options: EngineOptions(mode: .openExisting))
        let damagedKey = try raw.write { tx -> [UInt8] in
            let (key, value) = try #require(try tx.pairs(.prefix(KeyCodec.encode("pinned")), limit: 1).first)
            try tx.put(value.dropLast() + [value.last! ^ 0x01], forKey: key)
            return key
        }
        try raw.close()
        let store = try Store(engine.configuration(path))
        let report = try #require(store.formatUpgrade)
        #expect(report.damaged == 1 && report.firstDamagedKeys == [damagedKey] && report.converted == Self.recordCount - 1)
        #expect(throws: RecordError.self) { try store.withReadTransaction { ctx in try ctx.select(FixturePinned.self) } }
        try store.close()
    }

    @Test("kill -9 during the upgrade, reopen: it finishes, every record read once, none lost or converted twice",
          arguments: onDisk)
    func killDuringUpgrade(engine: Engines) throws {
        // Batch 1 is the claim (catalog and manifest); the first records come with batch 2.
        for killAfterBatch in [2, 60, 200] {
            let path = try Self.copy(engine)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: harnessTool)
            process.arguments = ["upgrade-store", "--engine", engine.rawValue, "--path", path, "--batch", "10", "--pause-ms", "2"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            var seen = ""
            while !seen.contains("batch \(killAfterBatch) ") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                seen += String(decoding: chunk, as: UTF8.self)
            }
            // The tool pauses 2 ms after each batch: the kill lands in a pause or in a later batch's
            // transaction, wherever the scheduler puts it.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "killed after batch \(killAfterBatch): \(seen.suffix(200))")

            // The progress is stored: the upgrade was interrupted, not finished.
            do {
                let raw = try engine.rawEngine(path)
                #expect(try raw.read { tx in try tx.exists(Self.jobKey) }, "killed after batch \(killAfterBatch)")
                try raw.close()
            }
            #expect(throws: RecordError.upgradeRequired(fromFormat: 2)) { try Store(engine.configuration(path), mode: .readOnly) }
            let store = try Store(engine.configuration(path))
            let report = try #require(store.formatUpgrade)
            #expect(report.fromFormat == 1 && report.converted == Self.recordCount && report.damaged == 0 && report.untouched == 1,
                    "killed after batch \(killAfterBatch): \(report)")
            #expect(report.batches > killAfterBatch)
            try Self.expectContents(store)
            try store.close()
        }
    }
}

/// The test harness `strata-harness`, built beside the test bundle.
let harnessTool: String = {
    let bundle = (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
    return bundle.deletingLastPathComponent().appendingPathComponent("strata-harness").path
}()

extension Engines {
    func configuration(_ path: String) -> EngineConfiguration {
        switch self {
        case .lmdb: return .lmdb(path: path)
        case .leveldb: return .leveldb(path: path)
        case .sqlite: return .sqlite(path: path)
        case .memory: return .memory
        }
    }

    /// The engine alone, without the record layer.
    func rawEngine(_ path: String) throws -> any KeyValueEngine {
        try configuration(path).open(EngineOptions(mode: .openExisting))
    }
}
