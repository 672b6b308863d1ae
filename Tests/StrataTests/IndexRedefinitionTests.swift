import Foundation
@_spi(Testing) @testable import StrataRecords
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
import Testing

/// Member's keyspace after a release that changed three of its index definitions under the same
/// names (another Swift type: one type per keyspace and store).
struct RedefinedMember: Record, Sendable {
    var member: Member
    static let recordType = Member.recordType
    /// Unchanged.
    static let byEmail = RecordIndex<RedefinedMember>("byEmail", .field("email", \.member.email), unique: true)
    /// Was on `nickname`: shares no component with its previous definition.
    static let byNickname = RecordIndex<RedefinedMember>("byNickname", .field("email", \.member.email))
    /// Was (city, age): shares the first component.
    static let byCityAge = RecordIndex<RedefinedMember>("byCityAge", .field("city", \.member.city), .field("nickname", \.member.nickname))
    /// Unchanged.
    static let byTag = RecordIndex<RedefinedMember>("byTag", .each("tags", \.member.tags))
    /// No longer covering: the same components.
    static let byAgeCovering = RecordIndex<RedefinedMember>("byAgeCovering", .field("age", \.member.age))
    static let indexes = [byEmail, byNickname, byCityAge, byTag, byAgeCovering]

    init(_ member: Member) { self.member = member }
    func writeKey(to key: inout KeyWriter) { member.writeKey(to: &key) }
    func writeFields(to fields: inout FieldWriter) { member.writeFields(to: &fields) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { member = try Member(key: &key, fields: &fields) }
}

@Suite("Changed index definitions")
struct IndexRedefinitionTests {
    private static func encoding<V: KeyComponent>(_ value: V) -> [UInt8] {
        var writer = KeyWriter()
        writer.append(value)
        return writer.bytes
    }

    /// The members in `byCityAge`'s new order: city, nickname (`nil` first), id.
    private static func cityNicknameOrder(_ members: some Sequence<Member>) -> [Member] {
        members.sorted {
            (encoding($0.city) + encoding($0.nickname) + encoding($0.id)).lexicographicallyPrecedes(encoding($1.city) + encoding($1.nickname) + encoding($1.id))
        }
    }

    /// Every query shape on the changed indexes (and the unchanged ones) equals the model.
    private static func expectQueries(_ store: Store, _ model: [Int: Member], _ comment: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            let members = Array(model.values)
            // "A\0" extends "A" by bytes: a group of "A" must not take its entries.
            for city in ["A", "B", "A\0"] {
                let expected = cityNicknameOrder(members.filter { $0.city == city }).map(\.id)
                #expect(try RedefinedMember.byCityAge.select(in: ctx, .all.equal(city)).map(\.member.id) == expected,
                        "\(comment): city \(city)", sourceLocation: sourceLocation)
                #expect(try RedefinedMember.byCityAge.select(in: ctx, .all.equal(city), limit: 3, order: .descending).map(\.member.id)
                        == Array(expected.reversed().prefix(3)), "\(comment): city \(city), last 3", sourceLocation: sourceLocation)
                #expect(try RedefinedMember.byCityAge.count(in: ctx, .all.equal(city)) == expected.count, "\(comment): count \(city)",
                        sourceLocation: sourceLocation)
                // The same equalities as encoded values (the macro's path), through the previous generation too.
                #expect(try RedefinedMember.byCityAge.select(in: ctx, limit: 3, order: .descending) { $0.append(city) }.map(\.member.id)
                        == Array(expected.reversed().prefix(3)), "\(comment): city \(city) as values, last 3", sourceLocation: sourceLocation)
                #expect(try RedefinedMember.byCityAge.count(in: ctx) { $0.append(city) } == expected.count, "\(comment): count \(city) as values",
                        sourceLocation: sourceLocation)
                let above = cityNicknameOrder(members.filter {
                    $0.city == city && encoding("n4" as String?).lexicographicallyPrecedes(encoding($0.nickname))
                }).map(\.id)
                #expect(try RedefinedMember.byCityAge.select(in: ctx, .all.equal(city).then(Comparison<String?>.greaterThan("n4")), order: .ascending)
                        .map(\.member.id) == above, "\(comment): city \(city), nickname > n4", sourceLocation: sourceLocation)
                #expect(try RedefinedMember.byCityAge.primaryKeys(in: ctx, .all.equal(city)).map(\.bytes) == expected.map { KeyCodec.encode($0) },
                        "\(comment): keys \(city)", sourceLocation: sourceLocation)
            }
            // Pages over the whole index continue after their last entry.
            let query = RedefinedMember.byCityAge.query()
            var paged: [Int] = []
            var token: PageToken?
            repeat {
                let page = try query.page(in: ctx, limit: 7, order: .ascending, after: token)
                paged += page.records.map(\.member.id)
                token = page.next
            } while token != nil
            #expect(paged == cityNicknameOrder(members).map(\.id), "\(comment): pages", sourceLocation: sourceLocation)
            var pagedDown: [Int] = []
            repeat {
                let page = try query.page(in: ctx, limit: 5, order: .descending, after: token)
                pagedDown += page.records.map(\.member.id)
                token = page.next
            } while token != nil
            #expect(pagedDown == cityNicknameOrder(members).reversed().map(\.id), "\(comment): pages, descending", sourceLocation: sourceLocation)
            #expect(try RedefinedMember.byCityAge.select(in: ctx, .all.then(Comparison.oneOf(["A\0", "A"])), order: .ascending).map(\.member.id)
                    == cityNicknameOrder(members.filter { $0.city != "B" }).map(\.id), "\(comment): city A\\0 or A", sourceLocation: sourceLocation)
            #expect(try RedefinedMember.byCityAge.select(in: ctx, .all, limit: 0).isEmpty && RedefinedMember.byCityAge.select(in: ctx, .all, limit: -1).isEmpty,
                    "\(comment): limits 0 and -1", sourceLocation: sourceLocation)
            // The same components, no longer covering.
            let young = members.filter { $0.age < 3 }.sorted { ($0.age, $0.id) > ($1.age, $1.id) }.map(\.id)
            #expect(try RedefinedMember.byAgeCovering.select(in: ctx, .all.then(Comparison.lessThan(3))).map(\.member.id) == young,
                    "\(comment): age < 3", sourceLocation: sourceLocation)
            #expect(try RedefinedMember.byTag.count(in: ctx, .all.equal("x")) == members.filter { $0.tags.contains("x") }.count,
                    "\(comment): tag x", sourceLocation: sourceLocation)
        }
    }

    @Test("a changed definition: queries read the previous generation, which every write keeps, until the new one is built; then it is cleared. A write that skips it is caught",
          arguments: TestEngines.all)
    func previousGeneration(kind: EngineKind) throws {
        for broken in [false, true] {
            let dir = TemporaryDirectory()
            defer { dir.cleanup() }
            let engine = try kind.configuration(path: dir.path).open(EngineOptions())
            defer { try? engine.close() }
            var random = SeededGenerator(seed: 0xC4A9 + (broken ? 1 : 0))
            func randomMember(_ id: Int, _ serial: Int) -> Member {
                Member(id: id, email: "m\(id).\(serial)@x",
                       nickname: Bool.random(using: &random) ? nil : "n\(Int.random(in: 0..<10, using: &random))-\(id).\(serial)",
                       city: ["A", "B", "A\0"].randomElement(using: &random)!, age: Int.random(in: 0..<6, using: &random),
                       tags: (0..<Int.random(in: 0..<3, using: &random)).map { _ in ["x", "y", "z"].randomElement(using: &random)! })
            }
            var model: [Int: Member] = [:]
            try Store(engine: engine).withTransaction { (ctx: TransactionContext) throws in
                for id in 0..<80 {
                    let m = randomMember(id, 0)
                    try ctx.insert(m)
                    model[id] = m
                }
            }
            let store = try Store(engine: broken
                ? DroppingEngine(engine, drops: DroppingEngine.deletes(ofGeneration: 1, of: ["byCityAge", "byAgeCovering"], in: "Member")) : engine)
            // Nothing is registered before the first write: the stored generations answer.
            try Self.expectQueries(store, model, "before any write")
            #expect(throws: RecordError.indexNotReady(type: "RedefinedMember", index: "byNickname", state: .writeOnly)) {
                try store.withReadTransaction { ctx in try RedefinedMember.byNickname.select(in: ctx, .all.equal("m1.0@x")) }
            }
            for step in 1...30 {
                struct Abort: Error {}
                var working = model
                do {
                    try store.withTransaction { (ctx: TransactionContext) throws in
                        for _ in 0..<Int.random(in: 1...4, using: &random) {
                            switch Int.random(in: 0..<10, using: &random) {
                            case 0..<6:
                                let m = randomMember(Int.random(in: 0..<100, using: &random), step)
                                try ctx.insert(RedefinedMember(m))
                                working[m.id] = m
                            case 6..<8:
                                let id = Int.random(in: 0..<100, using: &random)
                                #expect(try ctx.delete(RedefinedMember.self, key: EncodedIndexKey(bytes: KeyCodec.encode(id))) == (working[id] != nil))
                                working[id] = nil
                            default:
                                let low = Int.random(in: 0..<100, using: &random)
                                _ = try ctx.delete(RedefinedMember.self, .all.then(Comparison.range(low..<(low + 5))))
                                for id in low..<(low + 5) { working[id] = nil }
                            }
                        }
                        if Int.random(in: 0..<6, using: &random) == 0 { throw Abort() }
                    }
                    model = working
                } catch is Abort {}
                if !broken && step % 10 == 0 { try Self.expectQueries(store, model, "step \(step)") }
            }
            let verification = try store.verify()
            let previous = verification.indexes.filter { $0.generation == 1 && $0.state.hasPrefix("readable (previous") }
            #expect(Set(previous.map(\.name)) == ["byCityAge", "byAgeCovering"] && previous.allSatisfy { $0.checked && $0.entries > 0 })
            if broken {
                #expect(!verification.isClean, "writes that skip the previous generation went unnoticed (\(kind))")
                continue
            }
            #expect(verification.isClean, "\(verification.problems)")
            let stats = try store.statistics().keyspaces.first { $0.name == "Member" }!.indexes
            #expect(stats.first { $0.name == "byCityAge" }?.previous == 1 && stats.first { $0.name == "byCityAge" }!.previousEntries > 0)
            #expect(stats.first { $0.name == "byNickname" }?.previous == nil)

            let report = try store.prepare(RedefinedMember.self, batchSize: 16).wait()
            #expect(Set(report.built) == ["byNickname", "byCityAge", "byAgeCovering"])
            try Self.expectQueries(store, model, "after the build")
            #expect(try store.withReadTransaction { ctx in try RedefinedMember.byNickname.select(in: ctx, .all.equal(model.values.first!.email)).count } == 1)
            for name in ["byNickname", "byCityAge", "byAgeCovering"] {
                let left = try engine.read { tx in
                    try tx.keys(KeyRange.components(prefix: SystemKey.indexEntries(keyspace: "Member", name: name, generation: 1)), limit: 1)
                }
                #expect(left.isEmpty, "\(name): generation 1 is cleared once generation 2 is built")
            }
            #expect(try store.statistics().keyspaces.first { $0.name == "Member" }!.indexes.allSatisfy { $0.previous == nil && $0.retired.isEmpty })
            #expect(try store.verify().isClean)
        }
    }

    @Test("an old entry that is not where the record's stored bytes put it: the write retires the previous generation, and queries wait for the build",
          arguments: TestEngines.all)
    func previousRetiredByAWrite(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try kind.configuration(path: dir.path).open(EngineOptions())
        defer { try? engine.close() }
        let members = (0..<20).map { Member(id: $0, email: "m\($0)@x", city: ["A", "B"][$0 % 2], age: $0 % 4) }
        try Store(engine: engine).withTransaction { ctx in for m in members { try ctx.insert(m) } }
        // Member 3's entry in byCityAge as another value of its age would have written it (as a
        // migration or a computed component can): the stored bytes do not give it.
        let entries = SystemKey.indexEntries(keyspace: "Member", name: "byCityAge", generation: 1)
        try engine.write { tx in
            try tx.delete(entries + KeyCodec.encode("B") + KeyCodec.encode(3) + KeyCodec.encode(3))
            try tx.put([], forKey: entries + KeyCodec.encode("B") + KeyCodec.encode(9) + KeyCodec.encode(3))
        }
        let store = try Store(engine: engine)
        #expect(try store.withReadTransaction { ctx in try RedefinedMember.byCityAge.count(in: ctx, .all.equal("B")) } == 10)
        try store.withTransaction { ctx in try ctx.insert(RedefinedMember(Member(id: 3, email: "m3@x", nickname: "three", city: "A", age: 1))) }
        #expect(throws: RecordError.indexNotReady(type: "RedefinedMember", index: "byCityAge", state: .writeOnly)) {
            try store.withReadTransaction { ctx in try RedefinedMember.byCityAge.count(in: ctx, .all.equal("B")) }
        }
        // The other changed index keeps its previous generation.
        #expect(try store.withReadTransaction { ctx in try RedefinedMember.byAgeCovering.count(in: ctx, .all.equal(1)) } == 6)
        let index = try store.statistics().keyspaces.first { $0.name == "Member" }!.indexes.first { $0.name == "byCityAge" }!
        #expect(index.previous == nil && index.retired == [1])
        try store.prepare(RedefinedMember.self).wait()
        #expect(try store.withReadTransaction { ctx in try RedefinedMember.byCityAge.select(in: ctx, .all.equal("A")).map(\.member.id) }
                == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 3])  // nil nicknames first, then "three"
        #expect(try store.verify().isClean)
    }

    @Test("a changed multi-valued definition read through its previous generation: values that extend another by bytes (x, x\\0) each keep their own group, every entry once",
          arguments: TestEngines.all)
    func previousGroupsOfExtendingValues(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try kind.configuration(path: dir.path).open(EngineOptions())
        defer { try? engine.close() }
        let tagSets = [["x", "x\0"], ["x\0"], ["x"], ["", "\0", "x\0\0"], ["x\0", "x\u{1}"]]
        let members = tagSets.enumerated().map { Member(id: $0.offset, email: "m\($0.offset)@x", nickname: "n\(4 - $0.offset)", city: "A", age: $0.offset, tags: $0.element) }
        try Store(engine: engine).withTransaction { ctx in for m in members { try ctx.insert(m) } }
        let store = try Store(engine: engine)
        // (tag, nickname) where the stored generation is (tag): one group per tag, each entry once.
        func encoded(_ tag: String, _ m: Member) -> [UInt8] { Self.encoding(tag) + Self.encoding(m.nickname) + Self.encoding(m.id) }
        let expected = members.flatMap { m in Set(m.tags).map { (encoded($0, m), m.id) } }.sorted { $0.0.lexicographicallyPrecedes($1.0) }.map(\.1)
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try RetaggedMember.byTagNickname.select(in: ctx).map(\.member.id) == expected)
            #expect(try RetaggedMember.byTagNickname.select(in: ctx, order: .descending).map(\.member.id) == expected.reversed())
            for tag in ["x", "x\0", "", "\0"] {
                let ids = members.filter { $0.tags.contains(tag) }.sorted { encoded(tag, $0).lexicographicallyPrecedes(encoded(tag, $1)) }.map(\.id)
                #expect(try RetaggedMember.byTagNickname.select(in: ctx, .all.equal(tag)).map(\.member.id) == ids, "tag \(tag.debugDescription)")
                #expect(try RetaggedMember.byTagNickname.count(in: ctx) { $0.append(tag) } == ids.count, "count tag \(tag.debugDescription)")
            }
        }
        try store.prepare(RetaggedMember.self).wait()
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try RetaggedMember.byTagNickname.select(in: ctx).map(\.member.id) == expected, "after the build")
        }
    }
}

/// Member's keyspace with `byTag` redefined as (tag, nickname): a multi-valued index whose
/// previous generation, (tag), answers while it is built.
struct RetaggedMember: Record, Sendable {
    var member: Member
    static let recordType = Member.recordType
    static let byTagNickname = RecordIndex<RetaggedMember>("byTag", .each("tags", \.member.tags), .field("nickname", \.member.nickname))
    static let indexes = [byTagNickname]

    init(_ member: Member) { self.member = member }
    func writeKey(to key: inout KeyWriter) { member.writeKey(to: &key) }
    func writeFields(to fields: inout FieldWriter) { member.writeFields(to: &fields) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { member = try Member(key: &key, fields: &fields) }
}
