import Foundation
import StrataBundledEngines
@_spi(StrataInternals) import StrataEngine
import StrataConformance
import StrataKeyCodec
import StrataRecordConformance
@testable import StrataRecords
import Testing

// A new index kind, as a user adds one: this maintainer (one type) and one registry entry
// (`LengthIndex.registered`). Nothing else in the record layer names it.

/// Finds records by the length of a string field.
struct LengthIndex<R: Record>: IndexMaintainer {
    static var kind: String { "test-length" }
    let components: [IndexComponent<R>]
    let text: KeyPath<R, String> & Sendable

    init(_ name: String, _ text: KeyPath<R, String> & Sendable) {
        components = [.computed(name) { $0[keyPath: text].count }]
        self.text = text
    }

    func writeEntries(of record: R, to entries: inout IndexEntries) {
        entries.add { $0.append(record[keyPath: text].count) }
    }
}

/// The kind's registry entry: a stored `String` field's value to its length.
let lengthKindRegistered: Void = IndexKinds.register("test-length") { stored in
    if case .string(let text) = stored { return .int(Int64(text.count)) }
    return nil
}

/// The same entries under a kind nobody registers: its index works, the type-less tools skip it.
struct UnregisteredLengthIndex<R: Record>: IndexMaintainer {
    static var kind: String { "test-unregistered-length" }
    let base: LengthIndex<R>
    var components: [IndexComponent<R>] { base.components }
    func writeEntries(of record: R, to entries: inout IndexEntries) { base.writeEntries(of: record, to: &entries) }
}

/// A broken maintainer: forgets the entries of even lengths (what the verifications must catch).
struct ForgetfulLengthIndex<R: Record>: IndexMaintainer {
    static var kind: String { "test-length" }
    let base: LengthIndex<R>
    var components: [IndexComponent<R>] { base.components }
    func writeEntries(of record: R, to entries: inout IndexEntries) {
        var all = IndexEntries(keys: KeyWriter())
        base.writeEntries(of: record, to: &all)
        for i in all.found.indices {
            let bytes = Array(all.keys.bytes[all.found[i].key])
            let length = try? bytes.withUnsafeBytes { raw in var reader = KeyReader(raw); return try reader.read(Int.self) }
            if let length, length % 2 == 1 { entries.add { $0.write(contentsOf: bytes) } }
        }
    }
}

struct Titled: Record, Equatable {
    var id: Int
    var title: String

    static let recordType = RecordType(keyspace: "Titled", key: [("id", Int.self)], fields: [("title", String.fieldFormat)])
    static let byLength = RecordIndex<Titled>("byLength", LengthIndex("title", \.title))
    static let indexes = [byLength]

    init(id: Int, title: String) { (self.id, self.title) = (id, title) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(title) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); title = try fields.read() }
}

/// `Titled`'s keyspace and fields, with the index declared unique, under another kind, or broken.
struct TitledVariant<Variant: TitledIndexVariant>: Record, Equatable {
    var id: Int
    var title: String
    static var recordType: RecordType { Titled.recordType }
    static var indexes: [RecordIndex<TitledVariant>] { [Variant.index()] }
    init(id: Int, title: String) { (self.id, self.title) = (id, title) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(title) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); title = try fields.read() }
}

protocol TitledIndexVariant: SendableMetatype { static func index<R>() -> RecordIndex<TitledVariant<R>> }
enum PlainLength: TitledIndexVariant {
    static func index<R>() -> RecordIndex<TitledVariant<R>> { RecordIndex("byLength", LengthIndex("title", \.title)) }
}
enum UniqueLength: TitledIndexVariant {
    static func index<R>() -> RecordIndex<TitledVariant<R>> { RecordIndex("byLength", LengthIndex("title", \.title), unique: true) }
}
enum Unregistered: TitledIndexVariant {
    static func index<R>() -> RecordIndex<TitledVariant<R>> { RecordIndex("byLength", UnregisteredLengthIndex(base: LengthIndex("title", \.title))) }
}
enum Forgetful: TitledIndexVariant {
    static func index<R>() -> RecordIndex<TitledVariant<R>> { RecordIndex("byLength", ForgetfulLengthIndex(base: LengthIndex("title", \.title))) }
}
/// `Titled` without any index: records written before the index existed.
struct UnindexedTitled: Record, Equatable {
    var id: Int
    var title: String
    static var recordType: RecordType { Titled.recordType }
    init(id: Int, title: String) { (self.id, self.title) = (id, title) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(title) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); title = try fields.read() }
}

@Suite("Index kinds: a new kind by one maintainer and one registry entry")
struct IndexKindTests {
    /// An engine in a temporary directory, for stores of several types on one keyspace (one
    /// Swift type per keyspace and store).
    static func withEngine(_ body: (any KeyValueEngine) throws -> Void) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try BundledEngines.all[0].configuration(path: dir.path).open(EngineOptions())
        defer { try? engine.close() }
        try body(engine)
    }

    static func byLength(_ model: [Int: String], _ matches: (Int) -> Bool) -> [Titled] {
        model.filter { matches($0.value.count) }.sorted { ($0.value.count, $0.key) < ($1.value.count, $1.key) }.map { Titled(id: $0.key, title: $0.value) }
    }

    /// The kit's cases for an index of any kind (`RecordConformance.indexKindCases`), given
    /// the new kind: plain and unique, on every bundled engine.
    static func kitCases<Variant: TitledIndexVariant>(_ index: RecordIndex<TitledVariant<Variant>>) -> [ConformanceCase] {
        RecordConformance.indexKindCases(index, id: \.id, record: { id, random in
            TitledVariant(id: id, title: String(repeating: "a", count: Int.random(in: 0..<12, using: &random)))
        }, values: { [$0.title.count] }, universe: Array(0..<13))
    }

    @Test("the kit's index-kind cases pass with the new kind, plain and unique, on every bundled engine; a forgetful maintainer fails them",
          arguments: BundledEngines.all.map(\.name))
    func kitCasesPass(engine: String) async throws {
        _ = lengthKindRegistered
        let subject = EngineUnderTest(try #require(BundledEngines.named(engine)))
        let cases = Self.kitCases(TitledVariant<PlainLength>.indexes[0]) + Self.kitCases(TitledVariant<UniqueLength>.indexes[0])
        let report = await ConformanceSuite.run(subject, cases: cases)
        #expect(report.failures.isEmpty && report.passed.count == 2, "\(report.description)")
        let broken = await ConformanceSuite.run(subject, cases: Self.kitCases(TitledVariant<Forgetful>.indexes[0]))
        #expect(broken.failures.count == 1, "the forgetful maintainer passed the kit's case: \(broken.description)")
    }

    @Test("random writes, deletes, clears and rolled-back transactions keep the new kind's index equal to a model; both verifications check it",
          arguments: TestEngines.all)
    func randomLog(kind: EngineKind) throws {
        _ = lengthKindRegistered
        try withStore(kind) { store, _ in
            var model: [Int: String] = [:]
            var random = SeededGenerator(seed: 0x1E47)
            struct Abort: Error {}
            for step in 0..<300 {
                var working = model
                let abort = Int.random(in: 0..<5, using: &random) == 0
                do {
                    try store.withTransaction { (ctx: TransactionContext) throws in
                        for _ in 0..<Int.random(in: 1...4, using: &random) {
                            let id = Int.random(in: 0..<30, using: &random)
                            switch Int.random(in: 0..<10, using: &random) {
                            case 0..<6:
                                let title = String(repeating: "x", count: Int.random(in: 0..<8, using: &random)) + (step % 3 == 0 ? "\0" : "")
                                try ctx.insert(Titled(id: id, title: title))
                                working[id] = title
                            case 6..<9:
                                #expect(try ctx.delete(Titled(id: id, title: "")) == (working.removeValue(forKey: id) != nil))
                            default:
                                let removed = try ctx.delete(Titled.self, .all.then(Comparison.greaterThan(id)))
                                #expect(removed == working.keys.filter { $0 > id }.count)
                                working = working.filter { $0.key <= id }
                            }
                        }
                        if abort { throw Abort() }
                    }
                    model = working
                } catch is Abort {}
                let length = Int.random(in: 0..<9, using: &random)
                try store.withReadTransaction { (ctx: TransactionContext) throws in
                    #expect(try Titled.byLength.select(in: ctx, .all.equal(length)) == Self.byLength(model) { $0 == length }, "step \(step)")
                    #expect(try Titled.byLength.select(in: ctx, .all.then(Comparison.lessThan(length)), order: .ascending) == Self.byLength(model) { $0 < length })
                    #expect(try Titled.byLength.count(in: ctx) == model.count)
                }
            }
            let typed = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Titled.self) }
            #expect(typed.count == 1 && typed.allSatisfy(\.isExact) && typed.first?.expected == model.count, "\(typed)")
            let verification = try store.verify()
            #expect(verification.isClean, "\(verification.problems)")
            let check = verification.indexes.first { $0.name == "byLength" }
            #expect(check?.checked == true && check?.entries == model.count, "\(String(describing: check))")
        }
    }

    @Test("an index of the new kind added to records already stored is built by prepare, then answers; its definition names the kind")
    func builtOverStoredRecords() throws {
        _ = lengthKindRegistered
        try Self.withEngine { engine in
            let records = (0..<50).map { UnindexedTitled(id: $0, title: String(repeating: "y", count: $0 % 6)) }
            try Store(engine: engine).withTransaction { ctx in for r in records { try ctx.insert(r) } }
            let store = try Store(engine: engine)
            #expect(throws: RecordError.self) { try store.withReadTransaction { ctx in try Titled.byLength.select(in: ctx, .all.equal(3)) } }
            let report = try store.prepare(Titled.self).wait()
            #expect(report.built == ["byLength"])
            let threes = try store.withReadTransaction { ctx in try Titled.byLength.select(in: ctx, .all.equal(3)) }
            #expect(threes.map(\.id) == records.filter { $0.title.count == 3 }.map(\.id))
            let stored = try store.engine.read { tx in try IndexCatalog.stored(keyspace: "Titled", in: tx) }
            #expect(stored.first?.index.definition.kind == "test-length")
            #expect(stored.first?.index.features == [StoredIndex.kindFeature])
        }
    }

    @Test("a unique index of the new kind refuses a second record of the same length, naming the value")
    func unique() throws {
        try withStore(BundledEngines.all[0]) { store, _ in
            try store.withTransaction { ctx in try ctx.insert(TitledVariant<UniqueLength>(id: 1, title: "abc")) }
            #expect(throws: RecordError.uniqueViolation(type: "TitledVariant<UniqueLength>", index: "byLength", value: "3")) {
                try store.withTransaction { ctx in try ctx.insert(TitledVariant<UniqueLength>(id: 2, title: "xyz")) }
            }
            try store.withTransaction { ctx in try ctx.insert(TitledVariant<UniqueLength>(id: 1, title: "xyz")) }  // its own value: no clash
        }
    }

    @Test("a kind nobody registered works for typed reads and writes; verify reports its index as not checked, naming the kind")
    func unregisteredKind() throws {
        try withStore(BundledEngines.all[0]) { store, _ in
            try store.withTransaction { ctx in for i in 0..<5 { try ctx.insert(TitledVariant<Unregistered>(id: i, title: String(repeating: "z", count: i))) } }
            #expect(try store.withReadTransaction { ctx in try TitledVariant<Unregistered>.indexes[0].select(in: ctx, .all.equal(2)).map(\.id) } == [2])
            let check = try store.verify().indexes.first { $0.name == "byLength" }
            #expect(check?.checked == false)
            #expect(check?.reason == "index kind test-unregistered-length is not registered (IndexKinds): its entries come from Swift code only")
        }
    }

    @Test("a maintainer that forgets entries is caught by both verifications (the broken variant)")
    func forgetfulMaintainerIsCaught() throws {
        _ = lengthKindRegistered
        try Self.withEngine { engine in
            try Store(engine: engine).withTransaction { ctx in
                for i in 0..<10 { try ctx.insert(TitledVariant<Forgetful>(id: i, title: String(repeating: "w", count: i))) }
            }
            let store = try Store(engine: engine)
            let verification = try store.verify()
            #expect(!verification.isClean)
            #expect(verification.indexes.first { $0.name == "byLength" }?.missing == 5)
            // The honest maintainer, reading the same store, finds the same five missing.
            let typed = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Titled.self) }
            #expect(typed.first?.missingCount == 5)
        }
    }

    @Test("records with large collections (entries compared by hashing): duplicates count once, an overwrite keeps the shared entries and the index stays exact",
          arguments: [0, 1, 15, 16, 17, 300])
    func largeCollections(count: Int) throws {
        try withStore(BundledEngines.all[0]) { store, _ in
            let tags = (0..<count).map { "t\($0 % max(1, count - count / 4))" }  // a quarter are duplicates
            try store.withTransaction { ctx in try ctx.insert(Member(id: 1, email: "a@x", city: "C", age: 1, tags: tags)) }
            let distinct = Set(tags)
            #expect(try store.withReadTransaction { ctx in try Member.byTag.count(in: ctx) } == distinct.count)
            let shifted = (count / 2..<(count + count / 2)).map { "t\($0)" }  // half shared with the first
            try store.withTransaction { ctx in try ctx.insert(Member(id: 1, email: "a@x", city: "C", age: 1, tags: shifted)) }
            let results = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Member.self) }
            #expect(results.allSatisfy { $0.isExact }, "\(results)")
            #expect(try store.withReadTransaction { ctx in try Member.byTag.count(in: ctx) } == Set(shifted).count)
            if let first = shifted.first {
                #expect(try store.withReadTransaction { ctx in try Member.byTag.select(in: ctx, .all.equal(first)).map(\.id) } == [1])
            }
        }
    }
}

@Suite("Writes that fail partway")
struct PartialWriteTests {
    @Test("an indexed insert or delete that fails after it began writing, caught by the body, rolls the whole transaction back with its error",
          arguments: TestEngines.all)
    func rolledBack(kind: EngineKind) throws {
        let armed = Locked<DroppingEngine.Operation?>(nil)
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = DroppingEngine(try kind.open(dir.path), fails: { operation, key in
            armed.withLock { $0 == operation } && DroppingEngine.isIndexEntry(key)
        })
        let store = try Store(engine: engine)
        defer { try? store.close() }
        let kept = Member(id: 1, email: "one@x", city: "A", age: 1, tags: ["t"])
        try store.withTransaction { ctx in try ctx.insert(kept) }
        for (operation, write) in [(DroppingEngine.Operation.put, "insert"), (.delete, "delete")] {
            armed.withLock { $0 = operation }
            var caught = false
            #expect(throws: DroppingEngine.InjectedFailure()) {
                try store.withTransaction { (ctx: TransactionContext) throws in
                    do {
                        if write == "insert" {
                            try ctx.insert(Member(id: 2, email: "two@x", city: "B", age: 2, tags: ["u"]))
                        } else {
                            try ctx.delete(kept)
                        }
                    } catch is DroppingEngine.InjectedFailure {
                        caught = true  // the body goes on, as an app that logs and continues would
                    }
                    try ctx.insert(people[0])
                }
            }
            armed.withLock { $0 = nil }
            #expect(caught, "\(write): the injected failure was not met")
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try ctx.select(Member.self) == [kept], "\(write)")
                #expect(try ctx.select(Person.self).isEmpty, "\(write): the transaction's other write was committed")
                #expect(try ctx.verifyIndexes(Member.self).allSatisfy { $0.isExact }, "\(write)")
            }
        }
        #expect(try store.verify().isClean)
    }
}
