import Foundation
import StrataRecords
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
import StrataLMDB
import StrataSQLite
import Testing

/// Person's data under a new type name, kept by an explicit keyspace.
struct Human: Record, Equatable {
    var lastName: String, firstName: String, age: Int, email: String?
    static let recordType = RecordType(keyspace: "Person", version: 1, key: [("lastName", String.self), ("firstName", String.self)])
    func writeKey(to key: inout KeyWriter) { key.append(lastName); key.append(firstName) }
    func writeFields(to fields: inout FieldWriter) { fields.write(age); fields.write(email) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        lastName = try key.read(); firstName = try key.read(); age = try fields.read(); email = try fields.read()
    }
}

/// Another type claiming Person's keyspace with a different key.
struct Impostor: Record {
    var id: Int
    static let recordType = RecordType(keyspace: "Person", version: 1, key: [("id", Int.self)])
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) {}
    init(id: Int) { self.id = id }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read() }
}

/// Person at version 2 (age became a Double), with a migration from version 1.
struct PersonV2: Record {
    var lastName: String, firstName: String, age: Double
    static let recordType = RecordType(keyspace: "Person", version: 2, key: [("lastName", String.self), ("firstName", String.self)])
    func writeKey(to key: inout KeyWriter) { key.append(lastName); key.append(firstName) }
    func writeFields(to fields: inout FieldWriter) { fields.write(age) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        lastName = try key.read(); firstName = try key.read(); age = try fields.read()
    }
    static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> PersonV2? {
        guard version == 1 else { return nil }
        let old = try Person(key: &key, fields: &fields)
        return PersonV2(lastName: old.lastName, firstName: old.firstName, age: Double(old.age))
    }
    init(lastName: String, firstName: String, age: Double) { (self.lastName, self.firstName, self.age) = (lastName, firstName, age) }
}

/// Person at version 3 with no migration.
struct PersonV3: Record {
    var lastName: String, firstName: String
    static let recordType = RecordType(keyspace: "Person", version: 3, key: [("lastName", String.self), ("firstName", String.self)])
    func writeKey(to key: inout KeyWriter) { key.append(lastName); key.append(firstName) }
    func writeFields(to fields: inout FieldWriter) {}
    init(key: inout KeyReader, fields: inout FieldReader) throws { lastName = try key.read(); firstName = try key.read() }
}

@Suite("Store, keyspaces and versions")
struct StoreTests {
    /// Replaces the store's manifest underneath Strata, as another engine or version would write it.
    static func rewriteManifest(_ path: String, engine: String = "lmdb", codecVersion: UInt32 = 1, format: UInt32 = 2) throws {
        let lmdb = try LMDBEngine(path: path, options: EngineOptions(mode: .openExisting))
        var w = FieldWriter()
        w.write(engine); w.write("strata-tuple"); w.write(codecVersion); w.write(format)
        try lmdb.write { tx in try tx.put(w.bytes, forKey: [0x00] + KeyCodec.encode("manifest")) }
        try lmdb.close()
    }

    @Test("the manifest is written and checked: another engine, codec or format is refused")
    func manifest() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try Store(.lmdb(path: dir.path)).close()
        let lmdb = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
        #expect(try lmdb.read { tx in try tx.get([0x00] + KeyCodec.encode("manifest")) } != nil)
        try lmdb.close()
        try Self.rewriteManifest(dir.path, engine: "sqlite")
        #expect(throws: RecordError.manifestMismatch(detail: "written by engine sqlite, opened with lmdb")) { try Store(.lmdb(path: dir.path)) }
        try Self.rewriteManifest(dir.path, codecVersion: 9)
        #expect(throws: RecordError.manifestMismatch(detail: "keys encoded with strata-tuple v9, this Strata reads strata-tuple v1")) { try Store(.lmdb(path: dir.path)) }
        try Self.rewriteManifest(dir.path, format: 7)
        #expect(throws: RecordError.manifestMismatch(detail: "format version 7 is newer than this Strata's 2")) { try Store(.lmdb(path: dir.path)) }
        try Self.rewriteManifest(dir.path, format: 0)
        #expect(throws: RecordError.manifestMismatch(detail: "unknown format version 0")) { try Store(.lmdb(path: dir.path)) }
        try Self.rewriteManifest(dir.path)
        try Store(.lmdb(path: dir.path)).close()
    }

    @Test("a store-wide feature this build does not know is refused at open, naming it; a known list opens")
    func unknownStoreFeature() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try Store(.lmdb(path: dir.path)).close()
        let featuresKey = [0x00] + KeyCodec.encode("features")
        func setFeatures(_ features: [String]) throws {
            let lmdb = try LMDBEngine(path: dir.path, options: EngineOptions(mode: .openExisting))
            var w = FieldWriter()
            w.write(features)
            try lmdb.write { tx in try tx.put(w.bytes, forKey: featuresKey) }
            try lmdb.close()
        }
        try setFeatures(["time-travel"])
        #expect(throws: RecordError.unsupportedFeature(feature: "time-travel", scope: "the store")) { try Store(.lmdb(path: dir.path)) }
        #expect(throws: RecordError.unsupportedFeature(feature: "time-travel", scope: "the store")) { try Store(.lmdb(path: dir.path), mode: .readOnly) }
        try setFeatures([])
        try Store(.lmdb(path: dir.path)).close()
    }

    @Test("a raw engine store with data but no manifest is refused, untouched")
    func noManifest() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let raw = try SQLiteEngine(path: dir.path)
        try raw.write { tx in try tx.put([1], forKey: [1]) }
        try raw.close()
        #expect(throws: RecordError.manifestMismatch(detail: "the store holds data but no Strata manifest")) { try Store(.sqlite(path: dir.path)) }
        let reopened = try SQLiteEngine(path: dir.path)
        #expect(try reopened.read { tx in try tx.keys() } == [[1]])
        try reopened.close()
    }

    @Test("two types claiming one keyspace clash, in this process and in the store")
    func keyspaceClash() throws {
        try withStore(.sqlite) { store, path in
            try store.withTransaction { ctx in try ctx.insert(people[0]) }
            #expect(throws: RecordError.keyspaceClash(keyspace: "Person", detail: "used by Person and by Impostor in this process")) {
                try store.withTransaction { ctx in try ctx.insert(Impostor(id: 1)) }
            }
        }
        // A fresh process (here: a fresh Store) reading the same files with the other key layout.
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Store(.lmdb(path: dir.path))
        try store.withTransaction { ctx in try ctx.insert(people[0]) }
        try store.close()
        let other = try Store(.lmdb(path: dir.path))
        #expect(throws: RecordError.keyspaceClash(keyspace: "Person", detail: "the store holds keys (lastName: String, firstName: String) but Impostor declares (id: Int)")) {
            try other.withReadTransaction { ctx in try Impostor.select(in: ctx) }
        }
        try other.close()
    }

    @Test("an explicit keyspace keeps the data of a renamed type")
    func rename() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Store(.leveldb(path: dir.path))
        try store.withTransaction { ctx in for p in people { try ctx.insert(p) } }
        try store.close()
        let renamed = try Store(.leveldb(path: dir.path))
        let humans = try renamed.withReadTransaction { ctx in try Human.select(in: ctx, RecordQuery.all.equal("Dallas")) }
        #expect(humans.map(\.firstName) == ["Anna", "Korben", "Leeloo", "Zed"])
        try renamed.close()
    }

    @Test("a value of another version is migrated, or refused naming the type and both versions")
    func versions() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Store(.sqlite(path: dir.path))
        try store.withTransaction { ctx in try ctx.insert(people[0]) }
        try store.close()
        let v2 = try Store(.sqlite(path: dir.path))
        let migrated = try v2.withReadTransaction { ctx in try PersonV2.select(in: ctx) }
        #expect(migrated.map(\.age) == [45.0])
        try v2.close()
        let v3 = try Store(.sqlite(path: dir.path))
        #expect(throws: RecordError.versionMismatch(type: "PersonV3", stored: 1, current: 3)) {
            try v3.withReadTransaction { ctx in try PersonV3.select(in: ctx) }
        }
        try v3.close()
    }

    @Test("Empire's failures: a NUL in a String field before another field; a 100 KiB field", arguments: TestEngines.all)
    func empireCases(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let nul = Person(lastName: "A", firstName: "B", age: 7, email: "x\u{0}y@example.com")
            let big = Reading(sensor: 1, time: Date(), value: 1, payload: Data((0..<(100 * 1024)).map { UInt8(truncatingIfNeeded: $0 * 7) }))
            let huge = Reading(sensor: 2, time: Date(), value: 2, tags: [String(repeating: "z", count: 3 << 20)])
            try store.withTransaction { (ctx: TransactionContext) throws in
                try ctx.insert(nul)
                try ctx.insert(big)
                try ctx.insert(huge)
            }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try Person.select(in: ctx) == [nul])
                let readings = try Reading.select(in: ctx)
                #expect(readings == [big, huge])
            }
        }
    }

    @Test("a Codable field that cannot be encoded refuses the insert; nothing is stored", arguments: TestEngines.all)
    func unencodableField(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let bad = Reading(sensor: 9, time: Date(timeIntervalSinceReferenceDate: 0), value: 1, calibration: .init(offset: .nan, note: "NaN"))
            #expect {
                try store.withTransaction { ctx in try ctx.insert(bad) }
            } throws: { error in
                guard case RecordError.unencodableField(let type, _) = error else { return false }
                return type == "Reading"
            }
            let stored = try store.withReadTransaction { (ctx: TransactionContext) throws in try Reading.count(in: ctx) }
            #expect(stored == 0)
            // The caller decides whether the transaction goes on: the next records are stored
            // (the refused one leaves nothing behind, not even its failure).
            let good = Reading(sensor: 10, time: Date(timeIntervalSinceReferenceDate: 0), value: 2)
            try store.withTransaction { ctx in
                #expect(throws: RecordError.self) { try ctx.insert(bad) }
                try ctx.insert(good)
            }
            let after = try store.withReadTransaction { (ctx: TransactionContext) throws in try Reading.select(in: ctx) }
            #expect(after == [good])
        }
    }

    @Test("a key over the engine limit is refused naming the type", arguments: TestEngines.all)
    func keyTooLarge(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let long = Person(lastName: String(repeating: "x", count: 600), firstName: "y", age: 1)
            #expect(throws: RecordError.keyTooLarge(type: "Person", length: 613, limit: 511)) {
                try store.withTransaction { ctx in try ctx.insert(long) }
            }
        }
    }

    @Test("hand-written queries of the wrong shape are refused at run time")
    func queryShape() throws {
        try withStore(.memory) { store, _ in
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(throws: RecordError.invalidQuery(type: "Person", detail: "key component 0 (lastName) is String")) {
                    try Person.select(in: ctx, RecordQuery.all.equal(5))
                }
                #expect(throws: RecordError.invalidQuery(type: "Person", detail: "3 key components given, the key has 2")) {
                    try Person.select(in: ctx, RecordQuery.all.equal("a").equal("b").equal("c"))
                }
                #expect(throws: RecordError.readOnlyTransaction) { try ctx.insert(people[0]) }
                let comparisonFirst = RecordError.invalidQuery(type: "Person", detail: "only the last key component of a query may be a comparison")
                #expect(throws: comparisonFirst) { try Person.select(in: ctx, RecordQuery.all.then(Comparison<String>.lessThan("D")).equal("K")) }
                #expect(throws: comparisonFirst) {
                    try Person.count(in: ctx, RecordQuery.all.then(Comparison<String>.lessThan("D")).then(Comparison<String>.lessThan("K")))
                }
            }
        }
    }

    @Test("corrupt values and keys throw naming the type; other records still read", arguments: BundledEngines.onDisk)
    func corruption(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Store(kind.configuration(path: dir.path))
        try store.withTransaction { ctx in for p in people { try ctx.insert(p) } }
        // Damage values and keys underneath the record layer.
        let korben = KeyCodec.encode("Person", "Dallas", "Korben")
        let leeloo = KeyCodec.encode("Person", "Dallas", "Leeloo")
        try store.engine.write { tx in
            try tx.put([1, 0x80], forKey: korben)                       // truncated varint
            let value = try tx.get(leeloo)!
            try tx.put(Array(value.dropLast()), forKey: leeloo)         // truncated value
            try tx.put(value, forKey: KeyCodec.encode("Person", "Dallas") + [0x15])  // truncated key
        }
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            for name in ["Korben", "Leeloo"] {
                #expect(throws: RecordError.self) { try ctx.fetch(Person.self, RecordQuery.all.equal("Dallas").equal(name)) }
                do {
                    _ = try ctx.fetch(Person.self, RecordQuery.all.equal("Dallas").equal(name))
                } catch let RecordError.corruptRecord(type, _) {
                    #expect(type == "Person")
                }
            }
            #expect(try ctx.fetch(Person.self, RecordQuery.all.equal("Dallas").equal("Anna"))?.age == 60)
            #expect(try Person.select(in: ctx, RecordQuery.all.equal("Zorg")).count == 1)
            #expect(throws: RecordError.self) { try Person.select(in: ctx, RecordQuery.all.equal("Dallas")) }
        }
        try store.close()
    }

    @Test("every flipped bit of a stored value or key is caught; other records still read", arguments: BundledEngines.onDisk)
    func bitFlips(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Store(kind.configuration(path: dir.path))
        try store.withTransaction { ctx in for p in people { try ctx.insert(p) } }
        let key = KeyCodec.encode("Person", "Dallas", "Korben")
        let original = try store.engine.read { tx in try tx.get(key)! }
        // Every bit of the value, one at a time.
        for bit in 0..<(original.count * 8) {
            var damaged = original
            damaged[bit / 8] ^= 1 << UInt8(bit % 8)
            try store.engine.write { tx in try tx.put(damaged, forKey: key) }
            #expect(throws: RecordError.self, "bit \(bit)") {
                try store.withReadTransaction { ctx in try ctx.fetch(Person.self, RecordQuery.all.equal("Dallas").equal("Korben")) }
            }
        }
        try store.engine.write { tx in try tx.put(original, forKey: key) }
        // A flipped bit in the key: the record moves to a key its checksum does not cover.
        var movedKey = key
        movedKey[movedKey.count - 2] ^= 0x01  // "Korben" -> "Korbeo"
        try store.engine.write { tx in try tx.put(original, forKey: movedKey) }
        #expect(throws: RecordError.self) {
            try store.withReadTransaction { ctx in try ctx.fetch(Person.self, RecordQuery.all.equal("Dallas").equal("Korbeo")) }
        }
        let (korben, zorg) = try store.withReadTransaction { (ctx: TransactionContext) throws in
            (try ctx.fetch(Person.self, RecordQuery.all.equal("Dallas").equal("Korben"))?.age,
             try ctx.fetch(Person.self, RecordQuery.all.equal("Zorg").equal("Jean-Baptiste"))?.age)
        }
        #expect(korben == 45 && zorg == 50)
        try store.close()
    }

    @Test("async transactions from many tasks")
    func async() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Store(.lmdb(path: dir.path))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<8 {
                group.addTask {
                    try await store.withTransaction { ctx in try ctx.insert(Person(lastName: "T", firstName: "\(i)", age: i)) }
                }
            }
            try await group.waitForAll()
        }
        let count = try await store.withReadTransaction { ctx in try Person.count(in: ctx) }
        #expect(count == 8)
        try store.close()
    }
}

@Suite("Typed keys on hand-written records")
struct HandWrittenKeyTests {
    @Test("a record without a key type of its own gets EncodedIndexKey: fetch, exists and delete by key")
    func encodedIndexKey() throws {
        let store = try Store(.memory)
        defer { try? store.close() }
        let korben = Person(lastName: "Dallas", firstName: "Korben", age: 45)
        try korben.insert(in: store)
        #expect(korben.indexKey == EncodedIndexKey(bytes: KeyCodec.encode("Dallas", "Korben")))
        try store.withTransaction { (ctx: TransactionContext) throws in
            #expect(try Person.fetch(in: ctx, key: korben.indexKey) == korben)
            #expect(try Person.exists(in: ctx, key: korben.indexKey))
            #expect(try !Person.exists(in: ctx, key: EncodedIndexKey(bytes: KeyCodec.encode("Dallas", "Leeloo"))))
            #expect(try Person.delete(in: ctx, key: korben.indexKey))
            #expect(try Person.fetch(in: ctx, key: korben.indexKey) == nil)
        }
        #expect(try !store.delete(korben))
    }
}
