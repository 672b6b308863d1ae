import Foundation
import StrataBundledEngines
import StrataEtcd
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// A record with a unique index, for the import's refusals.
struct Coded: Record, Equatable {
    var id: Int
    var code: String
    static let recordType = RecordType(keyspace: "Coded", key: [("id", Int.self)], fields: [("code", String.fieldFormat)])
    static let byCode = RecordIndex<Coded>("byCode", .field("code", \.code), unique: true)
    static let indexes = [byCode]
    init(id: Int, code: String) { (self.id, self.code) = (id, code) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(code) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); code = try fields.read() }
}

@Suite("Bulk import")
struct BulkImportTests {
    @Test("an import into an existing keyspace (ids given twice, within and across batches; half of them stored before) equals a model: records, index entries and totals exact, counts reported",
          arguments: TestEngines.all)
    func differential(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            var random = SeededGenerator(seed: 0x1A)
            var model: [Int: Sale] = [:]
            try store.withTransaction { (ctx: TransactionContext) throws in
                for id in 0..<60 {
                    let sale = AggregateIndexTests.randomSale(id: id, &random)
                    try ctx.insert(sale)
                    model[id] = sale
                }
            }
            let source = (0..<400).map { _ in AggregateIndexTests.randomSale(id: Int.random(in: 0..<120, using: &random), &random) }
            // The expected counts: each batch of 37 writes its distinct ids, as given last.
            var imported = 0, replaced = 0
            for start in stride(from: 0, to: source.count, by: 37) {
                var batch: [Int: Sale] = [:]
                for sale in source[start..<min(start + 37, source.count)] { batch[sale.id] = sale }
                imported += batch.count
                replaced += batch.keys.filter { model[$0] != nil }.count
                model.merge(batch) { $1 }
            }
            var progress: [JobProgress] = []
            let report = try store.importRecords(source, batchSize: 37) { progress.append($0) }
            #expect(report == {
                var r = ImportReport()
                (r.imported, r.replaced, r.batches) = (imported, replaced, 11)
                return r
            }(), "\(kind.name)")
            #expect(progress.map(\.done) == Array(stride(from: 37, through: 400, by: 37)) + [400])
            #expect(progress.last?.phase == "done")
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try ctx.select(Sale.self) == model.values.sorted { $0.id < $1.id }, "\(kind.name)")
                for region in AggregateIndexTests.regions { try AggregateIndexTests.check(ctx, model, 0, region: region) }
                let verification = try ctx.verifyIndexes(Sale.self)
                #expect(verification.count == 5 && verification.allSatisfy(\.isExact), "\(verification)")
            }
            #expect(try store.verify().isClean)
        }
    }

    @Test("a unique violation ends the import with the batch before it kept and its own rolled back; fixed, the same job resumes after the kept batches",
          arguments: TestEngines.all)
    func uniqueViolationThenResume(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            var source = (0..<100).map { Coded(id: $0, code: "c\($0)") }
            source[70].code = "c10"  // clashes with record 10, imported in the first batch
            #expect(throws: RecordError.uniqueViolation(type: "Coded", index: "byCode", value: "\"c10\"")) {
                try store.importRecords(source, job: "codes", batchSize: 25)
            }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try ctx.select(Coded.self) == Array(source.prefix(50)), "two batches kept, the third rolled back")
                #expect(try ctx.verifyIndexes(Coded.self).allSatisfy(\.isExact))
            }
            source[70].code = "c70"
            let resumed = try store.importRecords(source, job: "codes", batchSize: 25)
            #expect(resumed.resumedAfter == 50 && resumed.imported == 50 && resumed.replaced == 0, "\(resumed)")
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try ctx.select(Coded.self) == source)
                #expect(try ctx.verifyIndexes(Coded.self).allSatisfy(\.isExact))
            }
            // Done: the job's position is gone, so the same import runs from the start again.
            let again = try store.importRecords(source, job: "codes", batchSize: 25)
            #expect(again.resumedAfter == 0 && again.imported == 100 && again.replaced == 100, "\(again)")
        }
    }

    @Test("an empty sequence imports nothing and leaves no position; a job of another name does not resume another's")
    func emptyAndSeparateJobs() throws {
        try withStore(BundledEngines.all[0]) { store, _ in
            #expect(try store.importRecords([Coded]()) == ImportReport())
            #expect(try store.engine.read { tx in try tx.get(Store.importJobKey(Coded.self, job: "import")) } == nil)
            var source = (0..<30).map { Coded(id: $0, code: "c\($0)") }
            source[20].code = "c1"
            #expect(throws: RecordError.self) { try store.importRecords(source, job: "a", batchSize: 10) }
            source[20].code = "c20"
            let other = try store.importRecords(source, job: "b", batchSize: 10)
            #expect(other.resumedAfter == 0 && other.imported == 30 && other.replaced == 20, "\(other)")
            let first = try store.importRecords(source, job: "a", batchSize: 10)
            #expect(first.resumedAfter == 20 && first.imported == 10 && first.replaced == 10, "\(first)")
            #expect(try store.engine.read { tx in try tx.keys(.prefix([0] + KeyCodec.encode("job"))) }.isEmpty, "positions left")
        }
    }

    @Test("another data set under a stopped job's name is refused before anything is written (also when it is shorter); discardImport forgets the position")
    func otherSequenceRefused() throws {
        try withStore(BundledEngines.all[0]) { store, _ in
            var source = (0..<30).map { Coded(id: $0, code: "c\($0)") }
            source[25].code = "c1"
            #expect(throws: RecordError.self) { try store.importRecords(source, batchSize: 10) }  // 20 committed
            let other = (100..<130).map { Coded(id: $0, code: "d\($0)") }
            #expect(throws: RecordError.importMismatch(type: "Coded", job: "import",
                                                       detail: "it stopped after 20 elements, and element 20 of this sequence has another key: not the same data")) {
                try store.importRecords(other, batchSize: 10)
            }
            #expect(throws: RecordError.self) { try store.importRecords(other.prefix(5), batchSize: 10) }
            #expect(try store.withReadTransaction { ctx in try ctx.select(Coded.self) }.count == 20, "nothing written by the refused imports")
            #expect(try store.discardImport(Coded.self))
            #expect(try store.discardImport(Coded.self) == false)
            let fresh = try store.importRecords(other, batchSize: 10)
            #expect(fresh.resumedAfter == 0 && fresh.imported == 30 && fresh.replaced == 0, "\(fresh)")
        }
    }

    @Test("a type without indexes is written without reading its old records; observers are told inserts and updates as they happened",
          arguments: BundledEngines.all)
    func unindexedAndObserved(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.withTransaction { ctx in try ctx.insert(people[0]) }
            let log = CommitRecorder()
            store.add(observer: log)
            let report = try store.importRecords(people + [people[1]], batchSize: 4)
            #expect(report.imported == 9 && report.replaced == 2, "\(report)")  // people[0] stored before, people[1] again in the last batch
            #expect(try store.withReadTransaction { ctx in try Query<Person>().select(in: ctx) }.count == people.count)
            let kinds = log.all.flatMap { $0 }.map(\.kind)
            #expect(kinds.count == 9 && kinds.filter { $0 == .update }.count == 2, "\(log.all)")
        }
    }

    @Test("on an engine that allows few operations per transaction, batches start small and split when entries outnumber the estimate: every record and total lands")
    func splitsOnTransactionLimits() throws {
        let options = EtcdOptions(endpoints: TestEngines.cluster.endpoints, leaseTTL: TestEngines.leaseTTL, maxTransactionOperations: 40)
        try withStore(.etcd(options)) { store, _ in
            var random = SeededGenerator(seed: 0x5F)
            // Up to 3 tags: up to 10 writes a record against the estimate of 6 (and etcd counts the reads a commit checks).
            let source = (0..<60).map { id in AggregateIndexTests.randomSale(id: id, &random) }
            let report = try store.importRecords(source, batchSize: 100)
            #expect(report.imported == 60 && report.batches > 10, "\(report)")
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try ctx.select(Sale.self) == source)
                #expect(try ctx.verifyIndexes(Sale.self).allSatisfy(\.isExact))
                try AggregateIndexTests.check(ctx, Dictionary(uniqueKeysWithValues: source.map { ($0.id, $0) }), 0, region: "north")
            }
        }
    }

    @Test("which keys of a batch are stored: dense runs, gaps of 8, 9 and 100 stored keys, the range's ends, none stored")
    func storedKeysWalk() throws {
        try withStore(BundledEngines.all[0]) { store, _ in
            let stored = Set(Array(0..<20) + [29, 39] + Array(200..<400) + [1_000])
            try store.withTransaction { ctx in for id in stored { try ctx.insert(Coded(id: id, code: "s\(id)")) } }
            let asked = [0, 5, 19, 20, 29, 30, 39, 40, 199, 200, 250, 399, 400, 999, 1_000, 1_001]
            let keys = asked.map { KeyCodec.encode("Coded", $0) }
            let found = try store.withReadTransaction { ctx in try ctx.storedKeys(keys) }
            #expect(found == asked.map { stored.contains($0) }, "\(zip(asked, found).map { "\($0.0): \($0.1)" })")
            #expect(try store.withReadTransaction { ctx in try ctx.storedKeys([KeyCodec.encode("Coded", 5_000)]) } == [false])
            #expect(try store.withReadTransaction { ctx in try ctx.storedKeys([]) } == [])
        }
    }
}
