import Foundation
import StrataBundledEngines
import StrataEtcd
import StrataEtcdCluster
@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// A sale in a region, with tags, for the indexes of totals: a sum per region, a count per tag
/// (multi-valued), a count of everything, beside a value index.
struct Sale: Record, Equatable {
    var id: Int
    var region: String
    var tags: String  // comma-separated
    var amount: Int

    var tagList: [String] { tags.isEmpty ? [] : tags.split(separator: ",").map(String.init) }

    static let recordType = RecordType(keyspace: "Sale", key: [("id", Int.self)],
                                       fields: [("region", String.fieldFormat), ("tags", String.fieldFormat), ("amount", Int.fieldFormat)])
    /// Declared before `perRegion`: a count by region alone must not be read from it (it would
    /// count a record once per tag).
    static let perRegionTag = RecordIndex<Sale>("perRegionTag", AggregateIndex.count(by: .field("region", \.region), .each("tags", \.tagList)))
    static let perRegion = RecordIndex<Sale>("perRegion", AggregateIndex.sum("amount", \.amount, by: .field("region", \.region)))
    static let perTag = RecordIndex<Sale>("perTag", AggregateIndex.count(by: .each("tags", \.tagList)))
    static let everything = RecordIndex<Sale>("everything", AggregateIndex.count())
    static let byRegion = RecordIndex<Sale>("byRegion", .field("region", \.region))
    static let indexes = [perRegionTag, perRegion, perTag, everything, byRegion]

    init(id: Int, region: String, tags: String = "", amount: Int) { (self.id, self.region, self.tags, self.amount) = (id, region, tags, amount) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) {
        fields.write(region)
        fields.write(tags)
        fields.write(amount)
    }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        region = try fields.read()
        tags = try fields.read()
        amount = try fields.read()
    }
}

/// `Sale` before its indexes were declared: records stored before the indexes of totals existed.
struct UnindexedSale: Record {
    var sale: Sale
    static var recordType: RecordType { Sale.recordType }
    init(_ sale: Sale) { self.sale = sale }
    func writeKey(to key: inout KeyWriter) { sale.writeKey(to: &key) }
    func writeFields(to fields: inout FieldWriter) { sale.writeFields(to: &fields) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { sale = try Sale(key: &key, fields: &fields) }
}

@Suite("Indexes of totals: COUNT and SUM per group, kept by every write")
struct AggregateIndexTests {
    /// The totals a model of the records calls for, by group.
    static func perRegion(_ model: [Int: Sale]) -> [String: AggregateTotal] {
        var totals: [String: AggregateTotal] = [:]
        for sale in model.values {
            totals[sale.region, default: .zero] = AggregateTotal(count: totals[sale.region, default: .zero].count + 1,
                                                                 sum: totals[sale.region, default: .zero].sum + Int64(sale.amount))
        }
        return totals
    }

    static func perTag(_ model: [Int: Sale]) -> [String: Int64] {
        var counts: [String: Int64] = [:]
        for sale in model.values {
            for tag in Set(sale.tagList) { counts[tag, default: 0] += 1 }
        }
        return counts
    }

    /// Checks every total against the model, read in `ctx`.
    static func check(_ ctx: TransactionContext, _ model: [Int: Sale], _ step: Int, region: String) throws {
        let regions = perRegion(model)
        #expect(try Sale.perRegion.total(in: ctx, .all.equal(region)) == regions[region] ?? .zero, "step \(step), region \(region)")
        let stored = try Sale.perRegion.totals(in: ctx)
        let expected = regions.sorted { KeyCodec.encode($0.key).lexicographicallyPrecedes(KeyCodec.encode($1.key)) }
        #expect(stored.map(\.group.bytes) == expected.map { KeyCodec.encode($0.key) }, "step \(step)")
        #expect(stored.map(\.total) == expected.map(\.value), "step \(step)")
        let below = regions.filter { $0.key < region }.values.reduce(AggregateTotal.zero) { AggregateTotal(count: $0.count + $1.count, sum: $0.sum + $1.sum) }
        #expect(try Sale.perRegion.total(in: ctx, .all.then(Comparison.lessThan(region))) == below, "step \(step): the groups below \(region)")
        let tags = try Sale.perTag.totals(in: ctx)
        #expect(Dictionary(uniqueKeysWithValues: tags.map { ($0.group.bytes, $0.total.count) })
                == Dictionary(uniqueKeysWithValues: perTag(model).map { (KeyCodec.encode($0.key), $0.value) }), "step \(step)")
        #expect(tags.allSatisfy { $0.total.sum == 0 }, "a count index sums nothing")
        #expect(try Sale.everything.total(in: ctx) == AggregateTotal(count: Int64(model.count), sum: 0), "step \(step)")
        #expect(try Sale.byRegion.count(in: ctx, .all.equal(region)) == model.values.filter { $0.region == region }.count)
    }

    static let regions = ["north", "south", "east", "west", "Zürich", "a\u{0}b"]
    static let tagNames = ["red", "blue", "green"]

    static func randomSale(id: Int, _ random: inout SeededGenerator) -> Sale {
        let tags = (0..<Int.random(in: 0...3, using: &random)).map { _ in tagNames.randomElement(using: &random)! }
        return Sale(id: id, region: regions.randomElement(using: &random)!, tags: tags.joined(separator: ","),
                    amount: Int.random(in: -1_000...1_000, using: &random))
    }

    /// A cluster of its own for the compaction test: compaction is the whole cluster's, and the
    /// shared one's other tests read older snapshots meanwhile (they failed with snapshotCompacted).
    static let compactionCluster = try! LocalCluster(members: 1, flags: ["--max-txn-ops=20000", "--max-request-bytes=67108864"], tls: nil)

    @Test("Store.compact() keeps every record, index entry and total: verify and verifyIndexes find nothing wrong",
          arguments: BundledEngines.all + [EngineKind.etcd(EtcdOptions(endpoints: compactionCluster.endpoints, leaseTTL: TestEngines.leaseTTL,
                                                                        maxTransactionOperations: 20_000, maxRequestBytes: 64 << 20))])
    func compactKeepsRecords(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            var random = SeededGenerator(seed: 0xC0)
            var model: [Int: Sale] = [:]
            try store.withTransaction { (ctx: TransactionContext) throws in
                for id in 0..<600 {
                    let sale = Self.randomSale(id: id, &random)
                    try ctx.insert(sale)
                    model[id] = sale
                }
            }
            try store.withTransaction { (ctx: TransactionContext) throws in
                for id in stride(from: 0, to: 600, by: 2) { #expect(try ctx.delete(model.removeValue(forKey: id)!)) }
            }
            _ = try store.compact()
            let records = try store.withReadTransaction { ctx in try ctx.select(Sale.self) }
            #expect(records == model.values.sorted { $0.id < $1.id }, "\(kind.name): the records after the compaction")
            let indexes = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Sale.self) }
            #expect(indexes.count == Sale.indexes.count && indexes.allSatisfy(\.isExact), "\(kind.name): \(indexes)")
            #expect(try store.verify().isClean)
            try store.withTransaction { (ctx: TransactionContext) throws in try ctx.insert(Self.randomSale(id: 0, &random)) }
            #expect(try store.withReadTransaction { ctx in try Sale.everything.total(in: ctx) }.count == 301)
        }
    }

    @Test("random inserts, replacements, deletes, clears and rolled-back transactions keep every total equal to a recomputation from a model; verifyIndexes agrees",
          arguments: TestEngines.all)
    func randomLog(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            var model: [Int: Sale] = [:]
            var random = SeededGenerator(seed: 0xA66)
            struct Abort: Error {}
            for step in 0..<250 {
                var working = model
                let abort = Int.random(in: 0..<6, using: &random) == 0
                do {
                    try store.withTransaction { (ctx: TransactionContext) throws in
                        for _ in 0..<Int.random(in: 1...4, using: &random) {
                            let id = Int.random(in: 0..<40, using: &random)
                            switch Int.random(in: 0..<12, using: &random) {
                            case 0..<8:
                                let sale = Self.randomSale(id: id, &random)
                                try ctx.insert(sale)
                                working[id] = sale
                            case 8..<11:
                                #expect(try ctx.delete(Sale(id: id, region: "", amount: 0)) == (working.removeValue(forKey: id) != nil))
                            default:
                                let removed = try ctx.delete(Sale.self, .all.then(Comparison.greaterThan(id + 20)))
                                #expect(removed == working.keys.filter { $0 > id + 20 }.count)
                                working = working.filter { $0.key <= id + 20 }
                            }
                        }
                        if abort { throw Abort() }
                    }
                    model = working
                } catch is Abort {}
                let region = Self.regions.randomElement(using: &random)!
                try store.withReadTransaction { ctx in try Self.check(ctx, model, step, region: region) }
            }
            let verification = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Sale.self) }
            #expect(verification.count == 5 && verification.allSatisfy(\.isExact), "\(verification)")
            #expect(verification.first { $0.index == "perRegion" }?.expected == Self.perRegion(model).count)
            // The tools without the Swift type recompute the totals of stored fields too, and say
            // why not those grouped by a computed property (tags is a string; tagList computes it).
            let tools = try store.verify()
            #expect(tools.isClean, "\(tools.problems)")
            for name in ["byRegion", "perRegion", "everything"] {
                let check = tools.indexes.first { $0.name == name }
                #expect(check?.checked == true && check?.missing == 0 && check?.stale == 0, "\(name): \(String(describing: check))")
            }
            #expect(tools.indexes.first { $0.name == "perRegion" }?.entries == Self.perRegion(model).count)
            let perTag = tools.indexes.first { $0.name == "perTag" }
            #expect(perTag?.checked == false && perTag?.reason?.contains("is not an array or set field") == true, "\(String(describing: perTag))")
        }
    }

    @Test("a stored total that is wrong is read as stored and reported by verifyIndexes (the check above can fail)")
    func wrongTotalCaught() throws {
        try withStore(BundledEngines.all[0]) { store, _ in
            try store.withTransaction { ctx in
                try ctx.insert(Sale(id: 1, region: "north", amount: 5))
                try ctx.insert(Sale(id: 2, region: "north", amount: 7))
            }
            let prefix = try store.withReadTransaction { ctx in try ctx.prepare(Sale.self).first { $0.name == "perRegion" }!.prefix }
            try store.engine.write { tx in try tx.put(AggregateTotal(count: 2, sum: 13).encoded, forKey: prefix + KeyCodec.encode("north")) }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try Sale.perRegion.total(in: ctx, .all.equal("north")) == AggregateTotal(count: 2, sum: 13))
                let verification = try ctx.verifyIndexes(Sale.self).first { $0.index == "perRegion" }!
                #expect(verification.staleCount == 1 && !verification.isExact, "\(verification)")
            }
            // And by the tools without the Swift type: the stored pair is not the records' total.
            let tools = try store.verify()
            let perRegion = tools.indexes.first { $0.name == "perRegion" }
            #expect(perRegion?.checked == true && perRegion?.stale == 1 && perRegion?.missing == 0, "\(String(describing: perRegion))")
            #expect(tools.problems.map(\.kind) == [.staleIndexEntry], "\(tools.problems)")
            #expect(tools.problems.first?.detail.contains("the stored total (count 2, sum 13) is not the records' (count 2, sum 12)") == true,
                    "\(tools.problems)")
            // A record that cannot be read: reported once, and the keyspace's totals not checked.
            try store.engine.write { tx in try tx.put([1, 2, 3], forKey: KeyCodec.encode("Sale") + KeyCodec.encode(2)) }
            let damaged = try store.verify()
            #expect(damaged.problemCount == 1 && damaged.problems.first?.kind != .staleIndexEntry, "\(damaged.problems)")
            let unchecked = damaged.indexes.first { $0.name == "perRegion" }
            #expect(unchecked?.checked == false && unchecked?.reason?.contains("could not be read") == true, "\(String(describing: unchecked))")
        }
    }

    @Test("count(where:) reads the totals when an index of totals selects exactly the predicate's records, and says so in explain(); otherwise it counts records")
    func countsFromTotals() throws {
        try withStore(BundledEngines.all[0]) { store, _ in
            var random = SeededGenerator(seed: 0xC0)
            var model: [Int: Sale] = [:]
            for id in 0..<60 { model[id] = Self.randomSale(id: id, &random) }
            try store.withTransaction { ctx in for sale in model.values { try ctx.insert(sale) } }
            let north = #Predicate<Sale> { $0.region == "north" }
            let red = #Predicate<Sale> { $0.tagList.contains("red") }
            let before = #Predicate<Sale> { $0.region < "south" }
            let costly = #Predicate<Sale> { $0.region == "north" && $0.amount > 0 }
            let northRed = #Predicate<Sale> { $0.region == "north" && $0.tagList.contains("red") }
            #expect(Sale.query(where: northRed).explain().contains("counted from totals Sale.perRegionTag"), "\(Sale.query(where: northRed).explain())")
            #expect(Sale.query(where: north).explain().hasSuffix("; counted from totals Sale.perRegion (region = \"north\")"), "\(Sale.query(where: north).explain())")
            #expect(Sale.query(where: red).explain().contains("counted from totals Sale.perTag"), "\(Sale.query(where: red).explain())")
            #expect(Sale.query(where: before).explain().contains("counted from totals Sale.perRegion"))
            #expect(!Sale.query(where: costly).explain().contains("totals"), "a filter the groups do not answer: records are counted")
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try Sale.count(in: ctx, where: north) == model.values.filter { $0.region == "north" }.count)
                #expect(try Sale.count(in: ctx, where: red) == model.values.filter { $0.tagList.contains("red") }.count)
                #expect(try Sale.count(in: ctx, where: before) == model.values.filter { $0.region < "south" }.count)
                #expect(try Sale.count(in: ctx, where: costly) == model.values.filter { $0.region == "north" && $0.amount > 0 }.count)
                #expect(try Sale.count(in: ctx, where: northRed) == model.values.filter { $0.region == "north" && $0.tagList.contains("red") }.count)
            }
            // The totals are what is read: a stored total changed underneath shows in the count,
            // and not in a count the totals do not answer.
            let prefix = try store.withReadTransaction { ctx in try ctx.prepare(Sale.self).first { $0.name == "perRegion" }!.prefix }
            try store.engine.write { tx in try tx.put(AggregateTotal(count: 1_000, sum: 0).encoded, forKey: prefix + KeyCodec.encode("north")) }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try Sale.count(in: ctx, where: north) == 1_000)
                #expect(try Sale.count(in: ctx, where: costly) == model.values.filter { $0.region == "north" && $0.amount > 0 }.count)
            }
        }
    }

    @Test("totals are not records and entries are not totals: each read refuses the other's index, naming it")
    func refusals() throws {
        try withStore(BundledEngines.all[0]) { store, _ in
            try store.insert(Sale(id: 1, region: "north", amount: 5))
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(throws: RecordError.invalidIndex(type: "Sale", index: "perRegion", detail: "it keeps totals (sum:amount), not records: read it with total(in:) or totals(in:)")) {
                    try Sale.perRegion.select(in: ctx, .all.equal("north"))
                }
                #expect(throws: RecordError.self) { try Sale.perTag.count(in: ctx) }
                #expect(throws: RecordError.self) { try Sale.perRegion.query(.all).select(in: ctx, limit: 10) }
                #expect(throws: RecordError.invalidIndex(type: "Sale", index: "byRegion", detail: "it keeps an entry per record, not totals: count its records with count(in:)")) {
                    try Sale.byRegion.total(in: ctx)
                }
                #expect(throws: RecordError.invalidQuery(type: "Sale", detail: "component 0 of index perRegion (region) is String")) {
                    try Sale.perRegion.total(in: ctx, .all.equal(3))
                }
            }
        }
    }

    @Test("a sum that would leave Int64 is refused before anything is written; a delete that brings it back is fine",
          arguments: BundledEngines.all)
    func overflowRefused(kind: EngineKind) throws {
        try withStore(kind) { (store: Store, _: String) throws in
            try store.insert(Sale(id: 1, region: "north", amount: .max))
            #expect(throws: RecordError.invalidIndex(type: "Sale", index: "perRegion", detail: "a group's total would leave Int64: the write is refused")) {
                try store.insert(Sale(id: 2, region: "north", amount: 1))
            }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try ctx.fetch(Sale.self, .all.equal(2)) == nil, "the refused record is not stored")
                #expect(try Sale.perRegion.total(in: ctx, .all.equal("north")) == AggregateTotal(count: 1, sum: .max))
                #expect(try Sale.everything.total(in: ctx).count == 1)
            }
            try store.insert(Sale(id: 2, region: "north", amount: .min))
            let total = try store.withReadTransaction { ctx in try Sale.perRegion.total(in: ctx, .all.equal("north")) }
            #expect(total == AggregateTotal(count: 2, sum: -1))
            // Int64.min leaves its group (its negation is past Int64), and a replacement whose
            // change alone is past Int64 lands inside it.
            try store.insert(Sale(id: 3, region: "east", amount: .min))
            #expect(try store.delete(Sale(id: 3, region: "", amount: 0)))
            try store.insert(Sale(id: 4, region: "east", amount: -.max))
            try store.insert(Sale(id: 4, region: "east", amount: .max))
            // Two groups whose sums add up past Int64: their total is refused, their count is not.
            try store.insert(Sale(id: 5, region: "west", amount: .max))
            let both = #Predicate<Sale> { ["west", "east"].contains($0.region) }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try Sale.perRegion.total(in: ctx, .all.equal("east")) == AggregateTotal(count: 1, sum: .max))
                #expect(throws: RecordError.invalidIndex(type: "Sale", index: "perRegion", detail: "the groups' total leaves Int64")) {
                    try Sale.perRegion.total(in: ctx, .all.then(Comparison.oneOf(["west", "east"])))
                }
                #expect(Sale.query(where: both).explain().contains("counted from totals Sale.perRegion"))
                #expect(try Sale.count(in: ctx, where: both) == 2)
            }
            let verification = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Sale.self) }
            #expect(verification.count == Sale.indexes.count && verification.allSatisfy(\.isExact), "\(verification)")
        }
    }

    @Test("indexes of totals added to stored records are built by prepare while writes go on between its batches: behind the build, ahead of it, new records and deletes; exact at the end",
          arguments: TestEngines.all)
    func builtOnline(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        var random = SeededGenerator(seed: 0xB17D)
        var model: [Int: Sale] = [:]
        for id in 0..<200 where id % 2 == 0 { model[id] = Self.randomSale(id: id, &random) }
        // One engine, two stores on it: the memory engine keeps nothing across opens.
        let engine = try kind.configuration(path: dir.path).open(EngineOptions())
        defer { try? engine.close() }
        try Store(engine: engine).withTransaction { ctx in for sale in model.values { try ctx.insert(UnindexedSale(sale)) } }
        let store = try Store(engine: engine)
        #expect(throws: RecordError.self) { try store.withReadTransaction { ctx in try Sale.perRegion.total(in: ctx) } }
        final class Shared: Sendable {
            let model: Locked<[Int: Sale]>
            let random: Locked<SeededGenerator>
            init(_ model: [Int: Sale], _ random: SeededGenerator) {
                self.model = Locked(model)
                self.random = Locked(random)
            }
        }
        let shared = Shared(model, random)
        // Between batches (10 records each), four writes anywhere in the keyspace: some land on
        // records the build has passed (they must change the totals), some ahead of it (they must
        // not: the build counts them when it gets there).
        let report = try store.prepare(Sale.self, batchSize: 10) { _ in
            shared.random.withLock { random in
                shared.model.withLock { model in
                    for _ in 0..<4 {
                        let id = Int.random(in: 0..<220, using: &random)
                        if Bool.random(using: &random) {
                            let sale = Self.randomSale(id: id, &random)
                            try? store.insert(sale)
                            model[id] = sale
                        } else {
                            _ = try? store.delete(Sale(id: id, region: "", amount: 0))
                            model[id] = nil
                        }
                    }
                }
            }
        }.wait()
        #expect(Set(report.built) == Set(Sale.indexes.map(\.name)))
        #expect(report.batches > 10, "the writes went between batches")
        let final = shared.model.withLock { $0 }
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            for region in Self.regions { try Self.check(ctx, final, 0, region: region) }
        }
        let verification = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Sale.self) }
        #expect(verification.count == 5 && verification.allSatisfy(\.isExact), "\(verification)")
    }

    @Test("a delete refused by a total's check has no effect and leaves the transaction able to commit", arguments: BundledEngines.all)
    func refusedDeleteCommits(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.insert(Sale(id: 1, region: "north", amount: 5))
            // A total that does not hold the record: taking it out would leave a count of 0 and a sum of 1.
            let prefix = try store.withReadTransaction { ctx in try ctx.prepare(Sale.self).first { $0.name == "perRegion" }!.prefix }
            try store.engine.write { tx in try tx.put(AggregateTotal(count: 1, sum: 6).encoded, forKey: prefix + KeyCodec.encode("north")) }
            try store.withTransaction { (ctx: TransactionContext) throws in
                #expect(throws: RecordError.self) { try ctx.delete(Sale(id: 1, region: "", amount: 0)) }
                #expect(throws: RecordError.self) { try ctx.delete(Sale.self, .all) }
                try ctx.insert(Sale(id: 2, region: "south", amount: 1))
            }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try ctx.fetch(Sale.self, .all.equal(1)) != nil, "the refused delete left the record")
                #expect(try ctx.fetch(Sale.self, .all.equal(2)) != nil, "the transaction committed")
                #expect(try Sale.everything.total(in: ctx).count == 2)
            }
        }
    }

    @Test("an index dropped mid-build and declared again builds from the first record: the old build's position is not its own",
          arguments: BundledEngines.all)
    func redeclaredAfterDroppedBuild(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try kind.configuration(path: dir.path).open(EngineOptions())
        defer { try? engine.close() }
        var random = SeededGenerator(seed: 0xD0)
        let sales = (0..<120).map { Self.randomSale(id: $0, &random) }
        try Store(engine: engine).withTransaction { ctx in for sale in sales { try ctx.insert(UnindexedSale(sale)) } }
        // Two batches of the build, then cancelled: a position is stored under generation 1.
        let store = try Store(engine: engine)
        final class Batches: Sendable { let count = Locked(0) }
        let batches = Batches()
        let job = store.prepare(Sale.self, batchSize: 10) { _ in batches.count.withLock { $0 += 1 } }
        job.cancel()
        _ = try job.wait()
        while batches.count.withLock({ $0 }) < 2 {
            let next = store.prepare(Sale.self, batchSize: 10) { _ in batches.count.withLock { $0 += 1 } }
            next.cancel()
            _ = try next.wait()
        }
        // The type without indexes: they are disabled, and a preparation clears them.
        let plain = try Store(engine: engine)
        try plain.insert(UnindexedSale(sales[0]))
        try plain.prepare(UnindexedSale.self).wait()
        let left = try plain.engine.read { tx in try IndexCatalog.stored(keyspace: "Sale", in: tx) }
        #expect(left.isEmpty, "the definitions are cleared: \(left.map(\.name))")
        // Declared again: generation 1 again, built from the first record.
        let again = try Store(engine: engine)
        try again.prepare(Sale.self, batchSize: 10).wait()
        let model = Dictionary(uniqueKeysWithValues: sales.map { ($0.id, $0) })
        try again.withReadTransaction { (ctx: TransactionContext) throws in
            for region in Self.regions { try Self.check(ctx, model, 0, region: region) }
        }
        let verification = try again.withReadTransaction { ctx in try ctx.verifyIndexes(Sale.self) }
        #expect(verification.count == Sale.indexes.count && verification.allSatisfy(\.isExact), "\(verification)")
    }

    @Test("the stored definitions name the kinds, and a sum of another field is another definition: rebuilt, not read as the old one")
    func definitions() throws {
        try IndexKindTests.withEngine { engine in
            let store = try Store(engine: engine)
            try store.insert(Sale(id: 1, region: "north", amount: 5))
            let stored = try store.engine.read { tx in try IndexCatalog.stored(keyspace: "Sale", in: tx) }
            let kinds = Dictionary(uniqueKeysWithValues: stored.map { ($0.name, $0.index.definition.kind) })
            #expect(kinds == ["perRegionTag": "count", "perRegion": "sum:amount", "perTag": "count", "everything": "count", "byRegion": "value"])
            #expect(AggregateIndex<Sale>.count().definedKind != AggregateIndex<Sale>.sum("amount", \.amount).definedKind)
            #expect(AggregateIndex<Sale>.sum("amount", \.amount).definedKind != AggregateIndex<Sale>.sum("id", \.id).definedKind)
        }
    }
}
