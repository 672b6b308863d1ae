import Foundation
@_spi(Testing) import StrataRecords
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
import StrataMemory
import Testing

/// A record with one index of every kind: unique (with optional values), composite, multi-valued
/// and covering.
struct Member: Record, Equatable, Sendable {
    var id: Int
    var email: String
    var nickname: String?
    var city: String
    var age: Int
    var tags: [String]

    static let recordType = RecordType(keyspace: "Member", key: [("id", Int.self)],
                                       fields: [("email", String.fieldFormat), ("nickname", String?.fieldFormat), ("city", String.fieldFormat),
                                                ("age", Int.fieldFormat), ("tags", [String].fieldFormat)])
    static let byEmail = RecordIndex<Member>("byEmail", .field("email", \.email), unique: true)
    static let byNickname = RecordIndex<Member>("byNickname", .field("nickname", \.nickname), unique: true)
    static let byCityAge = RecordIndex<Member>("byCityAge", .field("city", \.city), .field("age", \.age))
    static let byTag = RecordIndex<Member>("byTag", .each("tags", \.tags))
    static let byAgeCovering = RecordIndex<Member>("byAgeCovering", .field("age", \.age), covering: true)
    static let indexes = [byEmail, byNickname, byCityAge, byTag, byAgeCovering]

    init(id: Int, email: String, nickname: String? = nil, city: String, age: Int, tags: [String] = []) {
        (self.id, self.email, self.nickname, self.city, self.age, self.tags) = (id, email, nickname, city, age, tags)
    }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) {
        fields.write(email); fields.write(nickname); fields.write(city); fields.write(age); fields.write(tags)
    }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        email = try fields.read(); nickname = try fields.read(); city = try fields.read(); age = try fields.read(); tags = try fields.read()
    }
}

/// Member's keyspace before it had indexes (another Swift type: one type per keyspace and store).
struct PlainMember: Record {
    var member: Member
    static let recordType = Member.recordType
    func writeKey(to key: inout KeyWriter) { member.writeKey(to: &key) }
    func writeFields(to fields: inout FieldWriter) { member.writeFields(to: &fields) }
    init(_ member: Member) { self.member = member }
    init(key: inout KeyReader, fields: inout FieldReader) throws { member = try Member(key: &key, fields: &fields) }
}

/// Every index of `Member` in `store` equals a recomputation from the records.
func expectExact(_ store: Store, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let results = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Member.self) }
    #expect(results.count == Member.indexes.count, comment, sourceLocation: sourceLocation)
    for result in results {
        #expect(result.isExact, "\(result.index): \(result.missingCount) missing, \(result.staleCount) stale. \(comment?.rawValue ?? "")",
                sourceLocation: sourceLocation)
    }
}

@Suite("Secondary indexes")
struct IndexTests {
    static let members = [
        Member(id: 1, email: "korben@taxi.nyc", nickname: "Major", city: "New York", age: 45, tags: ["pilot", "taxi"]),
        Member(id: 2, email: "leeloo@fhloston.space", city: "New York", age: 25, tags: ["supreme", "being", "supreme"]),
        Member(id: 3, email: "ruby@rhod.fm", nickname: "Ruby", city: "Fhloston", age: 30, tags: ["radio"]),
        Member(id: 4, email: "zorg@zorg.corp", city: "Paris", age: 50),
        Member(id: 5, email: "vito@temple.org", nickname: nil, city: "Paris", age: 65, tags: ["priest", "taxi"]),
    ]

    // Queries of every shape and kind, maintenance by every write, unique violations and
    // over-long entries are the record conformance cases (Conformance/Records/IndexCases.swift),
    // run on every bundled engine by StrataAdapterTests' RecordConformanceTests.

    @Test("an index added to a keyspace with records is write-only until built in batches; then readable and exact",
          arguments: TestEngines.all)
    func onlineBuild(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try kind.configuration(path: dir.path).open(EngineOptions())
        let before = try Store(engine: engine)
        try before.withTransaction { (ctx: TransactionContext) throws in
            for id in 0..<250 { try ctx.insert(PlainMember(Member(id: id, email: "m\(id)@x", city: "C\(id % 7)", age: id % 90, tags: ["t\(id % 5)", "u"]))) }
        }
        // The same keyspace, now with indexes (a store of its own: one Swift type per keyspace and store).
        let store = try Store(engine: engine)
        defer { try? store.close() }
        #expect(throws: RecordError.indexNotReady(type: "Member", index: "byEmail", state: .writeOnly)) {
            try store.withReadTransaction { ctx in try Member.byEmail.select(in: ctx) }
        }
        // Writes while the index is write-only keep their entries.
        try store.withTransaction { (ctx: TransactionContext) throws in
            try ctx.insert(Member(id: 1_000, email: "late@x", city: "C1", age: 3, tags: ["late"]))
            try ctx.insert(Member(id: 5, email: "m5-moved@x", city: "C5", age: 5))
        }
        #expect(throws: RecordError.indexNotReady(type: "Member", index: "byTag", state: .writeOnly)) {
            try store.withReadTransaction { ctx in try Member.byTag.count(in: ctx) }
        }
        let seen = Seen()
        let job = store.prepare(Member.self, batchSize: 100) { seen.add($0) }
        let report = try job.wait()
        #expect(Set(report.built) == Set(Member.indexes.map(\.name)))
        #expect(report.recordsIndexed == 251 * Member.indexes.count)
        #expect(seen.all.count == report.batches && report.batches >= 15)
        // Progress counts up to the total: 251 records, once per index built.
        #expect(seen.all.last?.done == 251 * Member.indexes.count && seen.all.last?.total == 251 * Member.indexes.count)
        #expect(seen.all.map(\.done) == seen.all.map(\.done).sorted())
        #expect(job.progress.phase == "done" && job.isFinished)
        try expectExact(store, "after the build")
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try Member.byEmail.fetch(in: ctx, .all.equal("m5-moved@x"))?.id == 5)
            #expect(try Member.byTag.count(in: ctx, .all.equal("u")) == 249)  // 5 lost its tags
            #expect(try Member.byCityAge.count(in: ctx, .all.equal("C1")) == 37)
        }
        // Nothing left to do.
        #expect(try store.prepare(Member.self).wait().batches == 0)
    }

    @Test("an index the type stops declaring is disabled at the next write and cleared by the next build; declared again, it is rebuilt",
          arguments: [BundledEngines.all[0]])
    func disabledAndRebuilt(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try kind.configuration(path: dir.path).open(EngineOptions())
        let indexed = try Store(engine: engine)
        try indexed.withTransaction { ctx in for m in Self.members { try ctx.insert(m) } }
        let plain = try Store(engine: engine)
        try plain.withTransaction { ctx in try ctx.insert(PlainMember(Member(id: 6, email: "ruby@rhod.fm", city: "X", age: 1))) }
        let cleared = try plain.prepare(PlainMember.self).wait()
        #expect(cleared.entriesCleared > 0)
        #expect(try engine.read { tx in try tx.keys(KeyRange.components(prefix: [0] + KeyCodec.encode("ix")), limit: 1) }.isEmpty)
        // Member again (a third store: its own catalog): the duplicate email stops the build.
        let again = try Store(engine: engine)
        #expect(throws: RecordError.uniqueViolation(type: "Member", index: "byEmail", value: "\"ruby@rhod.fm\"")) {
            try again.prepare(Member.self).wait()
        }
        try again.withTransaction { ctx in try ctx.delete(Member.self, key: EncodedIndexKey(bytes: KeyCodec.encode(6))) }
        try again.prepare(Member.self).wait()
        try expectExact(again)
        try engine.close()
    }


    @Test("on a new store the indexes are readable before the first write: queries find nothing, in a read transaction as in a write",
          arguments: TestEngines.all)
    func readableBeforeFirstWrite(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Store(engine: try kind.configuration(path: dir.path).open(EngineOptions()))
        defer { try? store.close() }
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try Member.byEmail.select(in: ctx).isEmpty)
            #expect(try Member.byEmail.fetch(in: ctx, .all.equal("korben@taxi.nyc")) == nil)
            #expect(try Member.byTag.count(in: ctx, .all.equal("taxi")) == 0)
            #expect(try Member.byAgeCovering.select(in: ctx, .all.then(Comparison<Int>.greaterThan(0))).isEmpty)
        }
        try store.withTransaction { (ctx: TransactionContext) throws in #expect(try Member.byCityAge.select(in: ctx).isEmpty) }
        try store.withTransaction { ctx in for m in Self.members { try ctx.insert(m) } }
        #expect(try store.withReadTransaction { ctx in try Member.byTag.count(in: ctx, .all.equal("taxi")) } == 2)
        try expectExact(store)
    }

    @Test("a store remembers its indexes between transactions, yet sees what another store (or process) changed in the index catalog at its next transaction",
          arguments: TestEngines.all)
    func catalogChangedElsewhere(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try kind.configuration(path: dir.path).open(EngineOptions())
        defer { try? engine.close() }
        let indexed = try Store(engine: engine)
        try indexed.withTransaction { ctx in for m in Self.members { try ctx.insert(m) } }
        for _ in 0..<2 {  // the second transaction finds the catalog as the first left it
            #expect(try indexed.withReadTransaction { ctx in try Member.byCityAge.count(in: ctx, .all.equal("Paris")) } == 2)
        }
        // Another store, whose type declares no index, disables them all at its first write.
        let plain = try Store(engine: engine)
        try plain.withTransaction { ctx in try ctx.insert(PlainMember(Member(id: 6, email: "six@x", city: "Paris", age: 1))) }
        #expect(throws: RecordError.indexNotReady(type: "Member", index: "byCityAge", state: .writeOnly)) {
            try indexed.withReadTransaction { ctx in try Member.byCityAge.count(in: ctx, .all.equal("Paris")) }
        }
        // Declared again at the first store's next write: rebuilt, with the record the other store wrote.
        try indexed.withTransaction { ctx in try ctx.insert(Member(id: 7, email: "seven@x", city: "Paris", age: 2)) }
        try indexed.prepare(Member.self).wait()
        try expectExact(indexed)
        #expect(try indexed.withReadTransaction { ctx in try Member.byCityAge.count(in: ctx, .all.equal("Paris")) } == 4)
    }
    @Test("random logs of inserts, overwrites, deletes, range deletes and aborted transactions: every index stays exact; a stale-entry defect is caught",
          arguments: TestEngines.all)
    func differential(kind: EngineKind) throws {
        for broken in [false, true] {
            try withStore(kind, dropping: broken ? DroppingEngine.staleEntries : nil) { store in
                var random = SeededGenerator(seed: 0x1D_E5 + (broken ? 1 : 0))
                var model: [Int: Member] = [:]
                // Values that end in or hold 00 or 01 and empty ones: an equality must return
                // exactly its value, not the values that extend it.
                let cities = ["A", "A\0", "A\0B", "", "\0", "B"], tags = ["x", "x\0", "x\u{1}", "", "\0", "w"]
                func randomMember() -> Member {
                    let id = Int.random(in: 0..<60, using: &random)
                    return Member(id: id, email: "e\(Int.random(in: 0..<80, using: &random))" + ["", "\0", "\u{1}"].randomElement(using: &random)!,
                                  nickname: Bool.random(using: &random) ? nil : "n\(Int.random(in: 0..<80, using: &random))",
                                  city: cities.randomElement(using: &random)!, age: Int.random(in: 0..<5, using: &random),
                                  tags: (0..<Int.random(in: 0..<3, using: &random)).map { _ in tags.randomElement(using: &random)! })
                }
                var caught = false
                for step in 0..<60 {
                    struct Abort: Error {}
                    let abort = Int.random(in: 0..<6, using: &random) == 0
                    var working = model
                    do {
                        try store.withTransaction { (ctx: TransactionContext) throws in
                            for _ in 0..<Int.random(in: 1...6, using: &random) {
                                switch Int.random(in: 0..<10, using: &random) {
                                case 0..<6:
                                    let m = randomMember()
                                    do {
                                        try ctx.insert(m)
                                        working[m.id] = m
                                    } catch RecordError.uniqueViolation {
                                        let clash = working.values.contains { other in other.id != m.id &&
                                            (other.email == m.email || (m.nickname != nil && other.nickname == m.nickname)) }
                                        #expect(clash || broken, "a unique violation with no clash in the model")
                                    }
                                case 6..<8:
                                    let id = Int.random(in: 0..<60, using: &random)
                                    #expect(try ctx.delete(Member.self, key: EncodedIndexKey(bytes: KeyCodec.encode(id))) == (working[id] != nil))
                                    working[id] = nil
                                default:
                                    let low = Int.random(in: 0..<60, using: &random)
                                    let removed = try ctx.delete(Member.self, .all.then(Comparison.range(low..<(low + 8))))
                                    #expect(removed == working.keys.filter { (low..<(low + 8)).contains($0) }.count)
                                    for id in low..<(low + 8) { working[id] = nil }
                                }
                            }
                            if abort { throw Abort() }
                        }
                        model = working
                    } catch is Abort {}
                    let verification = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Member.self) }
                    let exact = verification.allSatisfy { $0.isExact }
                    if broken {
                        caught = caught || !exact
                    } else {
                        #expect(exact, "step \(step): \(verification.map { ($0.index, $0.isExact, $0.missingCount, $0.staleCount) })")
                        let stored = try store.withReadTransaction { ctx in try Member.select(in: ctx) }
                        #expect(stored == model.values.sorted { $0.id < $1.id }, "step \(step)")
                        try store.withReadTransaction { (ctx: TransactionContext) throws in
                            for tag in tags {
                                let expected = model.values.filter { $0.tags.contains(tag) }.map(\.id).sorted()
                                #expect(try Member.byTag.select(in: ctx, .all.equal(tag)).map(\.id) == expected, "step \(step): tag \(tag.debugDescription)")
                                #expect(try Member.byTag.count(in: ctx) { $0.append(tag) } == expected.count, "step \(step): count tag \(tag.debugDescription)")
                            }
                            for city in cities {
                                let expected = model.values.filter { $0.city == city }.sorted { ($0.age, $0.id) < ($1.age, $1.id) }.map(\.id)
                                #expect(try Member.byCityAge.select(in: ctx) { $0.append(city) }.map(\.id) == expected, "step \(step): city \(city.debugDescription)")
                            }
                            for member in model.values {
                                #expect(try Member.byEmail.fetch(in: ctx) { $0.append(member.email) }?.id == member.id, "step \(step): email \(member.email.debugDescription)")
                            }
                        }
                    }
                }
                if broken { #expect(caught, "the stale-entry defect went unnoticed") }
            }
        }
    }

    @Test("paging an index query with inserts and deletes between pages, both orders: every record present throughout comes once; cursors and streams on an index",
          arguments: TestEngines.all)
    func pagingAnIndex(kind: EngineKind) async throws {
        try await withAsyncStore(kind) { store in try await Self.pageAnIndex(store) }
    }

    static func pageAnIndex(_ store: Store) async throws {
        for descending in [false, true] {
            let query = try Self.pageWithChanges(store, descending: descending)
            var viaStream: [Int] = []
            for try await m in query.stream(from: store, batchSize: 16) {
                viaStream.append(m.id)
                if viaStream.count > 1_000 { break }  // a stream that never ends fails below
            }
            let selected = try Self.selectIDs(store, query)
            #expect(viaStream == selected)
        }
    }

    static func selectIDs(_ store: Store, _ query: Query<Member>) throws -> [Int] {
        try store.withReadTransaction { ctx in try query.select(in: ctx).map(\.id) }
    }

    /// Pages through an index query with changes between pages; checks the paging contract and
    /// a cursor; returns the query.
    static func pageWithChanges(_ store: Store, descending: Bool) throws -> Query<Member> {
        var random = SeededGenerator(seed: descending ? 0x1D_BA6E : 0x1D_BA6F)
        do {
            var present: [Int: Member] = [:]
            func randomMember(_ id: Int) -> Member {
                Member(id: id, email: "p\(id)-\(descending)", city: ["A", "B", "C"].randomElement(using: &random)!, age: Int.random(in: 0..<30, using: &random))
            }
            try store.withTransaction { ctx in
                try ctx.delete(Member.self, .all)
                for id in 0..<200 {
                    let m = randomMember(id)
                    try ctx.insert(m)
                    present[id] = m
                }
            }
            // City B, by age: ascending from age 5, or descending (nearest first) below 25.
            let query = descending ? Member.byCityAge.query(.all.equal("B").then(Comparison.lessThan(25)))
                : Member.byCityAge.query(.all.equal("B").then(Comparison.greaterThanOrEqual(5)))
            func matches(_ m: Member) -> Bool { m.city == "B" && (descending ? m.age < 25 : m.age >= 5) }
            var stable = Set(present.values.filter(matches).map(\.id))
            var returned: [Int] = []
            var token: PageToken?
            var pages = 0
            repeat {
                pages += 1
                guard pages < 200 else {
                    Issue.record("paging does not end: \(returned.count) records in 200 pages")
                    break
                }
                // The token goes through JSON, as to another process.
                let json = try token.map { try JSONEncoder().encode($0) }
                let page = try store.withReadTransaction { ctx in
                    try query.page(in: ctx, limit: 7, after: try json.map { try JSONDecoder().decode(PageToken.self, from: $0) })
                }
                returned += page.records.map(\.id)
                let ages = page.records.map(\.age)
                #expect(ages == (descending ? ages.sorted(by: >) : ages.sorted()), "a page in index order")
                token = page.next
                // Between pages: overwrite, delete and insert records, anywhere.
                try store.withTransaction { ctx in
                    for _ in 0..<3 {
                        let id = Int.random(in: 0..<260, using: &random)
                        if Bool.random(using: &random), present[id] != nil {
                            try ctx.delete(present[id]!)
                            present[id] = nil
                        } else {
                            let m = randomMember(id)
                            try ctx.insert(m)
                            present[id] = m
                        }
                        stable.remove(id)
                    }
                }
            } while token != nil
            #expect(Set(returned).count == returned.count, "no record twice")
            #expect(stable.isSubset(of: Set(returned)), "every record present throughout was returned")
            // A cursor and a stream on the index see the same records as select.
            let selected = try store.withReadTransaction { ctx in try query.select(in: ctx).map(\.id) }
            let viaCursor = try store.withReadTransaction { ctx in
                let cursor = query.cursor(in: ctx, batchSize: 5)
                var ids: [Int] = []
                while ids.count <= 1_000, let m = try cursor.next() { ids.append(m.id) }
                return ids
            }
            #expect(viaCursor == selected)
            #expect(throws: RecordError.invalidQuery(type: "Member", detail: "this page token was made on index byCityAge")) {
                try store.withReadTransaction { ctx in
                    let page = try Member.byCityAge.query().page(in: ctx, limit: 1)
                    _ = try Member.byEmail.query().page(in: ctx, limit: 1, after: page.next)
                }
            }
            return query
        }
    }

    @Test("a keyspace with indexes lists the feature, so a build without index support refuses it")
    func featureListed() throws {
        try withStore(.memory) { store, _ in
            try store.withTransaction { ctx in try ctx.insert(Self.members[0]) }
            #expect(try store.keyspaces().first { $0.name == "Member" }?.features == ["indexes"])
        }
    }
}

/// Progress reports seen by a job's callback.
final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [PreparationProgress] = []
    func add(_ progress: PreparationProgress) { lock.withLock { list.append(progress) } }
    var all: [PreparationProgress] { lock.withLock { list } }
}

enum SystemKeyBytes {
    /// `00 enc("ix", keyspace, name, 1)`: the first generation's entries (RecordFormat.md, "Indexes").
    static func entriesPrefix(_ keyspace: String, _ name: String) -> [UInt8] { [0] + KeyCodec.encode("ix", keyspace, name, 1) }
}

/// Gauge at version 1: a reading in whole degrees.
struct GaugeV1: Record {
    var id: Int
    var degrees: Int
    static let recordType = RecordType(keyspace: "Gauge", version: 1, key: [("id", Int.self)])
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(degrees) }
    init(id: Int, degrees: Int) { (self.id, self.degrees) = (id, degrees) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); degrees = try fields.read() }
}

/// Gauge at version 0: no migration leads from it.
struct GaugeV0: Record {
    var id: Int
    static let recordType = RecordType(keyspace: "Gauge", version: 0, key: [("id", Int.self)])
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) {}
    init(id: Int) { self.id = id }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read() }
}

/// Gauge at version 2: a Double, indexed; migrates version 1. Two types share it, differing only
/// in their index.
protocol GaugeV2Layout: Record {
    var id: Int { get }
    var celsius: Double { get }
    init(id: Int, celsius: Double)
}

extension GaugeV2Layout {
    static var recordType: RecordType { gaugeV2Type }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(celsius) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { self.init(id: try key.read(), celsius: try fields.read()) }
    static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> Self? {
        guard version == 1 else { return nil }
        let old = try GaugeV1(key: &key, fields: &fields)
        return Self(id: old.id, celsius: Double(old.degrees))
    }
}

private let gaugeV2Type = RecordType(keyspace: "Gauge", version: 2, key: [("id", Int.self)])

/// Gauge at version 2 with a plain index on `celsius`.
struct GaugeV2: GaugeV2Layout, Equatable {
    var id: Int
    var celsius: Double
    static let byCelsius = RecordIndex<GaugeV2>("byCelsius", .field("celsius", \.celsius))
    static let indexes = [byCelsius]
    init(id: Int, celsius: Double) { (self.id, self.celsius) = (id, celsius) }
}

/// Gauge at version 2 as `GaugeV2`, but its index is covering: the entries hold the record's
/// bytes, so migrating a record rewrites its entry too (two writes a record, not one).
struct CoveredGaugeV2: GaugeV2Layout, Equatable {
    var id: Int
    var celsius: Double
    static let byCelsius = RecordIndex<CoveredGaugeV2>("byCelsius", .field("celsius", \.celsius), covering: true)
    static let indexes = [byCelsius]
    init(id: Int, celsius: Double) { (self.id, self.celsius) = (id, celsius) }
}

@Suite("Preparation: index builds and record migrations as one online job")
struct MigrationJobTests {
    @Test("on an engine that limits writes per transaction (etcd's 128), a migration that rewrites covering entries halves its batches until they fit")
    func migrationWithinWriteLimits() throws {
        let memory = MemoryEngine()
        try Store(engine: memory).withTransaction { ctx in for id in 0..<200 { try ctx.insert(GaugeV1(id: id, degrees: id % 20)) } }
        let engine = CountingEngine(memory, maxWrites: 30)
        let store = try Store(engine: engine)
        let report = try store.prepare(CoveredGaugeV2.self).wait()
        #expect(report.built == ["byCelsius"] && report.recordsIndexed == 200)
        #expect(report.migrated == 200 && report.unconvertible == 0, "each record migrated once: \(report.migrated)")
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try CoveredGaugeV2.byCelsius.select(in: ctx, .all.equal(7.0)).map(\.id) == Array(stride(from: 7, to: 200, by: 20)))
            #expect(try ctx.verifyIndexes(CoveredGaugeV2.self).allSatisfy { $0.isExact })
        }
        let versions = try engine.read { tx in try tx.pairs(KeyRange.components(prefix: KeyCodec.encode("Gauge"))).map { $0.value.first! } }
        #expect(versions == Array(repeating: 2, count: 200))
        try store.close()
    }

    @Test("prepare rewrites older records through migrate, keeps the index, and reports the unconvertible ones", arguments: TestEngines.all)
    func migration(kind: EngineKind) async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try kind.configuration(path: dir.path).open(EngineOptions())
        try await Store(engine: engine).withTransaction { ctx in for id in 0..<300 { try ctx.insert(GaugeV1(id: id, degrees: id % 40)) } }
        try await Store(engine: engine).withTransaction { ctx in for id in [1_000, 1_001] { try ctx.insert(GaugeV0(id: id)) } }
        let store = try Store(engine: engine)
        defer { try? store.close() }
        let log = CommitRecorder()  // a migration changes stored bytes, not what a record reads as
        store.add(observer: log)
        let report = try await store.prepare(GaugeV2.self, batchSize: 64).report
        #expect(report.built == ["byCelsius"])
        #expect(report.migrated == 300)
        #expect(log.all.isEmpty, "observers were told of \(log.all.count) commits of migrated records")
        #expect(report.unconvertible == 2 && report.firstUnconvertibleKeys == [1_000, 1_001].map { KeyCodec.encode("Gauge", $0) })
        try await store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try GaugeV2.byCelsius.count(in: ctx, .all.equal(7.0)) == 8)
            #expect(try ctx.verifyIndexes(GaugeV2.self).allSatisfy { $0.isExact })
            // Every convertible record is now stored under version 2.
        }
        let versions = try await store.engine.read { tx in try tx.pairs(KeyRange.components(prefix: KeyCodec.encode("Gauge"))).map { $0.value.first! } }
        #expect(versions.filter { $0 == 2 }.count == 300 && versions.filter { $0 == 0 }.count == 2)
        // Again: nothing to build; the migration pass finds only the two unconvertible records.
        let again = try store.prepare(GaugeV2.self).wait()
        #expect(again.migrated == 0 && again.unconvertible == 2 && again.built.isEmpty)
    }

    @Test("a cancelled preparation stops after its batch; the next one continues from the stored position")
    func cancelAndResume() throws {
        let engine = CountingEngine(MemoryEngine())
        try Store(engine: engine).withTransaction { ctx in for id in 0..<2_000 { try ctx.insert(GaugeV1(id: id, degrees: id % 40)) } }
        let store = try Store(engine: engine)
        let job = store.prepare(GaugeV2.self, batchSize: 100) { progress in
            if progress.done >= 300 { Thread.sleep(forTimeInterval: 0.01) }
        }
        while job.progress.done < 300 { Thread.sleep(forTimeInterval: 0.001) }
        job.cancel()
        let first = try job.wait()
        #expect(first.built.isEmpty && first.recordsIndexed < 2_000, "stopped early: \(first.recordsIndexed)")
        #expect(job.progress.phase == "cancelled")
        let second = try store.prepare(GaugeV2.self, batchSize: 100).wait()
        #expect(first.recordsIndexed + second.recordsIndexed == 2_000, "no record indexed twice or skipped")
        #expect(second.built == ["byCelsius"] && second.migrated == 2_000)
        try store.close()
    }
}
