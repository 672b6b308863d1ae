import Foundation
import StrataBundledEngines
@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec
@_spi(Testing) import StrataRecords
import Testing

/// A store holding `IndexTests.members` (five indexes of every kind) and `people` (fields not described).
private func filledStore(_ kind: EngineKind, at path: String) throws -> Store {
    let store = try Store(kind.configuration(path: path))
    try store.withTransaction { ctx in
        for m in IndexTests.members { try ctx.insert(m) }
        for p in people { try ctx.insert(p) }
    }
    return store
}

/// The key of index `name`'s entry for `member` (generation 1, the only one in these stores).
private func entryKey(_ name: String, _ values: [any KeyComponent], member id: Int) -> [UInt8] {
    var w = KeyWriter()
    w.write(TypeCode.null)
    for c in ["ix", "Member", name] as [any KeyComponent] + [1] + values + [id] { w.append(c) }
    return w.bytes
}

@Suite("Store tools: stats, dump, verify and copy, without the Swift types")
struct InspectionTests {
    /// Found by the `record` fuzz target (a 15-second run with the smoke's seed): a key's
    /// negative integer with a magnitude past 2^63 trapped in the untyped decoder (`strata verify`,
    /// `dump`).
    @Test("an untyped key component holding a negative integer below Int64.min is an overflow error, not a trap")
    func negativeIntegerPastInt64() throws {
        for (magnitude, fits) in [(UInt64(Int64.max) + 1, true), (UInt64(Int64.max) + 2, false), (UInt64.max, false)] {
            var writer = KeyWriter()
            writer.writeInteger(negative: true, magnitude: magnitude)
            if fits {
                #expect(try StoredValue.keyComponents(writer.bytes) == [.int(.min)])
            } else {
                #expect { try StoredValue.keyComponents(writer.bytes) } throws: { error in
                    if let error = error as? KeyDecodingError, case .overflow = error.reason { return true }
                    return false
                }
            }
        }
    }

    @Test("verify finds a healthy store clean, every index checked", arguments: TestEngines.all)
    func healthy(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try filledStore(kind, at: dir.path)
        defer { try? store.close() }
        let report = try store.verify()
        #expect(report.isClean, "\(report.problems)")
        #expect(report.records == IndexTests.members.count + people.count)
        #expect(report.undescribedRecords == people.count)
        #expect(report.indexes.map(\.name).sorted() == Member.indexes.map(\.name).sorted())
        #expect(report.indexes.allSatisfy { $0.checked && $0.missing == 0 && $0.stale == 0 }, "\(report.indexes)")
        let byTag = try #require(report.indexes.first { $0.name == "byTag" })
        #expect(byTag.entries == 7)  // distinct tags per member: 2 + 2 + 1 + 0 + 2
    }

    /// One kind of damage done through the engine, and the problem verify must report for it.
    struct Damage: CustomStringConvertible, Sendable {
        let description: String
        let expected: StoreProblem.Kind
        let expectedKey: [UInt8]?
        let apply: @Sendable (Store) throws -> Void
    }

    static let damages: [Damage] = [
        Damage(description: "a flipped value byte", expected: .checksumMismatch, expectedKey: KeyCodec.encode("Member", 3)) { store in
            let key = KeyCodec.encode("Member", 3)
            try store.engine.write { tx in
                var value = try #require(try tx.get(key))
                value[2] ^= 0x20
                try tx.put(value, forKey: key)
            }
        },
        Damage(description: "a removed catalog entry", expected: .uncataloguedRecord, expectedKey: KeyCodec.encode("Member", 1)) { store in
            try store.engine.write { tx in try tx.delete([0] + KeyCodec.encode("keyspace", "Member")) }
        },
        Damage(description: "a missing index entry", expected: .missingIndexEntry, expectedKey: entryKey("byCityAge", ["Paris", 50], member: 4)) { store in
            try store.engine.write { tx in try tx.delete(entryKey("byCityAge", ["Paris", 50], member: 4)) }
        },
        Damage(description: "a stale index entry", expected: .staleIndexEntry, expectedKey: entryKey("byTag", ["pilot"], member: 2)) { store in
            try store.engine.write { tx in try tx.put([], forKey: entryKey("byTag", ["pilot"], member: 2)) }
        },
        Damage(description: "a covering entry with another value", expected: .staleIndexEntry, expectedKey: entryKey("byAgeCovering", [25], member: 2)) { store in
            try store.engine.write { tx in try tx.put([1, 2, 3], forKey: entryKey("byAgeCovering", [25], member: 2)) }
        },
        Damage(description: "an entry of an unknown generation", expected: .orphanIndexEntry, expectedKey: nil) { store in
            var w = KeyWriter()
            w.write(TypeCode.null)
            for c in ["ix", "Member", "byEmail", 7, "x", 1] as [any KeyComponent] { w.append(c) }
            try store.engine.write { tx in try tx.put([], forKey: w.bytes) }
        },
    ]

    @Test("verify reports each kind of damage, at its key, and nothing else",
          arguments: BundledEngines.onDisk, damages)
    func damaged(kind: EngineKind, damage: Damage) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try filledStore(kind, at: dir.path)
        defer { try? store.close() }
        try damage.apply(store)
        let report = try store.verify()
        #expect(!report.isClean)
        #expect(Set(report.problems.map(\.kind)) == [damage.expected], "\(report.problems)")
        if let key = damage.expectedKey { #expect(report.problems.contains { $0.key == key }, "\(report.problems)") }
    }

    @Test("an overwrite that keeps its old entries (the broken variant) is caught as stale entries")
    func brokenOverwrite() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try filledStore(.lmdb, at: dir.path).close()
        let store = try Store(engine: DroppingEngine(EngineKind.lmdb.open(dir.path), drops: DroppingEngine.staleEntries))
        defer { try? store.close() }
        var korben = IndexTests.members[0]
        korben.city = "Paris"
        try store.insert(korben)
        let report = try store.verify()
        #expect(report.problems.map(\.kind) == [.staleIndexEntry], "\(report.problems)")
        #expect(report.problems.first?.key == entryKey("byCityAge", ["New York", 45], member: 1))
    }

    @Test("dump decodes every field format from the catalog, and refuses nothing it can read", arguments: TestEngines.all)
    func dump(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let reading = Reading(
                sensor: -7, time: Date(timeIntervalSinceReferenceDate: 1.5), value: 0.5, unit: .kelvin, tags: ["a"], flags: [3],
                extra: ["x": 1], id: UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!, source: URL(string: "https://example.com/a"),
                calibration: .init(offset: -1, note: "n"), payload: Data([0, 255]))
            try store.insert(reading)
            try store.insert(IndexTests.members[0])
            try store.insert(people[0])
            var lines: [String] = []
            try store.dump { item in
                lines.append(try item.get().jsonLine)
                return true
            }
            let version = { (t: RecordType) in t.version }
            // The JSON field is printed as stored: Foundation's encoder writes its keys in any order.
            let readingLine = { (calibration: String) in
                #"{"keyspace":"Reading","key":[-7,"2001-01-01T00:00:01.500Z"],"version":1,"fields":{"value":0.5,"unit":"kelvin","tags":["a"],"flags":[3],"extra":{"x":1},"id":"00112233-4455-6677-8899-AABBCCDDEEFF","source":"https://example.com/a","calibration":\#(calibration),"payload":{"hex":"00ff"}}}"#
            }
            #expect(lines.count == 3)
            #expect(Array(lines.prefix(2)) == [
                #"{"keyspace":"Member","key":[1],"version":\#(version(Member.recordType)),"fields":{"email":"korben@taxi.nyc","nickname":"Major","city":"New York","age":45,"tags":["pilot","taxi"]}}"#,
                #"{"keyspace":"Person","key":["Dallas","Korben"],"version":1,"undescribed":"5a00"}"#,
            ])
            #expect([readingLine(#"{"value":{"offset":-1,"note":"n"}}"#), readingLine(#"{"value":{"note":"n","offset":-1}}"#)].contains(lines.last ?? ""), "\(lines)")
            // A key range of one keyspace: from (inclusive) and to (exclusive) leading components.
            for p in people.dropFirst() { try store.insert(p) }
            var names: [String] = []
            try store.dump(keyspace: "Person", from: [.string("Dallas")], to: [.string("Rhod")]) { item in
                let record = try item.get()
                if case .string(let first) = record.key[1] { names.append(first) }
                return true
            }
            #expect(names == ["Anna", "Korben", "Leeloo", "Zed", "Nul"])
        }
    }

    @Test("a damaged record is handed to the dump as a problem, and the dump goes on")
    func dumpDamaged() throws {
        try withStore(.sqlite) { store, _ in
            for m in IndexTests.members { try store.insert(m) }
            let key = KeyCodec.encode("Member", 2)
            try store.engine.write { tx in try tx.put(Array(try #require(try tx.get(key)).dropLast()), forKey: key) }
            var records = 0
            var problems: [StoreProblem] = []
            try store.dump(keyspace: "Member") { item in
                switch item {
                case .success: records += 1
                case .failure(let p): problems.append(p)
                }
                return true
            }
            #expect(records == 4)
            #expect(problems.map(\.kind) == [.checksumMismatch] && problems.first?.key == key)
        }
    }

    @Test("stats counts records and entries per keyspace and index, with their states")
    func stats() throws {
        try withStore(.leveldb) { store, _ in
            for m in IndexTests.members { try store.insert(m) }
            for p in people { try store.insert(p) }
            let stats = try store.statistics()
            #expect(stats.manifest?.engine == "leveldb" && stats.manifest?.format == 2)
            #expect(stats.keyspaces.map(\.name) == ["Member", "Person"])
            #expect(stats.keyspaces.map(\.records) == [IndexTests.members.count, people.count])
            let member = stats.keyspaces[0]
            #expect(member.key == "id: Int" && member.features == ["indexes"])
            #expect(member.schemas.first?.fields == ["email: string", "nickname: optional(string)", "city: string", "age: i64", "tags: array(string)"])
            #expect(member.indexes.map(\.name) == ["byAgeCovering", "byCityAge", "byEmail", "byNickname", "byTag"])
            #expect(member.indexes.map(\.entries) == [5, 5, 5, 5, 7])  // nil nicknames have entries too
            #expect(member.indexes.allSatisfy { $0.state == "readable" && $0.generation == 1 })
            #expect(stats.keyspaces[1].schemas.first?.fields == nil)
            #expect(stats.jobs.isEmpty && stats.foreignKeys == 0)
        }
    }

    /// Every pair of on-disk engines and etcd (an in-memory store copies the same way, but its copy ends with it).
    static let stored = BundledEngines.onDisk + [TestEngines.etcd]
    static let pairs: [(EngineKind, EngineKind)] = stored.flatMap { a in stored.map { (a, $0) } }

    @Test("copy between every pair of engines: every pair byte-identical but the manifest and the identity, verified, readable by type",
          arguments: pairs)
    func copy(from: EngineKind, to: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let source = try filledStore(from, at: dir.path + "/source")
        defer { try? source.close() }
        let report = try source.copy(to: to.configuration(path: dir.path + "/copy"), batchSize: 7)
        var original: [[UInt8]: [UInt8]] = [:]
        try source.dumpRaw { key, value in original[key] = value; return true }
        #expect(report.pairs == original.count && report.batches > 2)

        let copy = try Store(to.configuration(path: dir.path + "/copy"), mode: .openExisting)
        defer { try? copy.close() }
        var copied: [[UInt8]: [UInt8]] = [:]
        try copy.dumpRaw { key, value in copied[key] = value; return true }
        let (manifest, identity) = ([0] + KeyCodec.encode("manifest"), [0] + KeyCodec.encode("identity"))
        #expect(copied.keys.sorted { $0.lexicographicallyPrecedes($1) } == original.keys.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(copied.filter { $0.key != manifest && $0.key != identity } == original.filter { $0.key != manifest && $0.key != identity })
        #expect(copied[identity] != nil && copied[identity] != original[identity], "a copy is another store: its own identity")
        #expect(try copy.statistics().manifest?.engine == to.name)
        #expect(try copy.verify().isClean)
        try copy.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try Member.byCityAge.select(in: ctx, .all.equal("Paris")).map(\.id) == [4, 5])
            #expect(try Person.select(in: ctx).count == people.count)
        }
    }

    @Test("an interrupted copy has no manifest and is refused on open; a destination holding data is refused untouched",
          arguments: stored)
    func interruptedCopy(kind: EngineKind) throws {
        struct Interrupted: Error {}
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let source = try filledStore(kind, at: dir.path + "/source")
        defer { try? source.close() }
        var batches = 0
        #expect(throws: Interrupted.self) {
            try source.copy(to: kind.configuration(path: dir.path + "/copy"), batchSize: 5) { _ in
                batches += 1
                if batches == 2 { throw Interrupted() }
            }
        }
        #expect(throws: RecordError.manifestMismatch(detail: "the store holds data but no Strata manifest")) {
            try Store(kind.configuration(path: dir.path + "/copy"), mode: .openExisting)
        }
        let before = try kind.open(dir.path + "/copy", EngineOptions(mode: .openExisting)).withClose { try $0.read { try $0.pairs() } }
        #expect(throws: StoreToolError.destinationNotEmpty(path: dir.path + "/copy")) {
            try source.copy(to: kind.configuration(path: dir.path + "/copy"))
        }
        let after = try kind.open(dir.path + "/copy", EngineOptions(mode: .openExisting)).withClose { try $0.read { try $0.pairs() } }
        #expect(after.elementsEqual(before, by: { $0 == $1 }))
    }

    @Test("a copy taken while a writer commits holds exactly one committed state", arguments: TestEngines.all)
    func backupDuringWrites(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Store(kind.configuration(path: dir.path + "/live"))
        defer { try? store.close() }
        // Transaction t writes records ("T", "t-0") … ("T", "t-9") and the counter ("count", "") = t.
        @Sendable func commit(_ t: Int) throws {
            try store.withTransaction { ctx in
                for i in 0..<10 { try ctx.insert(Person(lastName: "T", firstName: "\(t)-\(i)", age: t)) }
                try ctx.insert(Person(lastName: "count", firstName: "", age: t))
            }
        }
        for t in 1...50 { try commit(t) }
        let stop = Locked(false)
        let committed = Locked(50)
        let writer = Thread {
            var t = 51
            while !stop.value {
                do { try commit(t) } catch { Issue.record("writer: \(error)"); return }
                committed.value = t
                t += 1
            }
        }
        writer.start()
        let destination = (kind.declaration.marker == nil ? BundledEngines.onDisk[0] : kind).configuration(path: dir.path + "/backup")
        // The first batch waits for a commit after the snapshot began (progress is reported inside
        // the copy's read transaction): on a loaded machine the writer could otherwise commit
        // nothing while the copy runs, and the check below would not show the snapshot held.
        var waited = false
        try store.copy(to: destination, batchSize: 20) { _ in
            if !waited {
                let seen = committed.value, deadline = Date().addingTimeInterval(60)
                while committed.value <= seen && Date() < deadline { usleep(1_000) }
                waited = true
            }
            usleep(2_000)
        }
        stop.value = true
        while !writer.isFinished { usleep(1_000) }

        let backup = try Store(destination, mode: .openExisting)
        defer { try? backup.close() }
        try backup.withReadTransaction { (ctx: TransactionContext) throws in
            let count = try #require(try Person.select(in: ctx, .all.equal("count")).first?.age)
            let tagged = try Person.select(in: ctx, .all.equal("T"))
            #expect(count >= 50 && count < committed.value, "the writer committed after the snapshot began")
            #expect(tagged.count == count * 10)
            #expect(Set(tagged.map(\.age)) == Set(1...count))
        }
        #expect(try backup.verify().isClean)
    }
}

/// A value shared between the test and its writer thread.
private final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Value
    init(_ value: Value) { current = value }
    var value: Value {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }
}

extension KeyValueEngine {
    /// Runs `body` with the engine, then closes it.
    fileprivate func withClose<R>(_ body: (Self) throws -> R) throws -> R {
        defer { try? close() }
        return try body(self)
    }
}
