import StrataCompression
import StrataConformance
import StrataEncryption
import StrataEngine
import StrataMemory
import StrataRecordConformance
import StrataRecords
import Testing

/// The record layer's conformance cases (`Conformance/Records`, secondary indexes) on every
/// bundled engine, and proof that they catch an engine that breaks what indexes rely on.
@Suite("Record conformance")
struct RecordConformanceTests {
    @Test("every record case passes on every bundled engine; only the memory engine skips, and only what needs persistence",
          arguments: Engines.all)
    func passes(engine: EngineUnderTest) async {
        await caseSlots.acquire()
        let report = await ConformanceSuite.run(engine, cases: RecordConformance.cases)
        await caseSlots.release()
        #expect(report.failures.isEmpty, "\(report.description)")
        let needPersistence = RecordConformance.cases.filter { $0.requires == .persistent }.map(\.id)
        #expect(report.skipped == (engine.capabilities.contains(.persistent) ? [] : needPersistence))
        #expect(report.passed.count + report.skipped.count == RecordConformance.cases.count)
        print(report.description)
    }

    @Test("every record case passes on every bundled engine with every value encrypted (StrataEncryption)", arguments: Engines.all)
    func passesEncrypted(engine: EngineUnderTest) async {
        let cases = RecordConformance.cases(transforms: [RecordEncryption(key: .random())])
        await caseSlots.acquire()
        let report = await ConformanceSuite.run(engine, cases: cases)
        await caseSlots.release()
        #expect(report.failures.isEmpty, "\(report.description)")
        let needPersistence = RecordConformance.cases.filter { $0.requires == .persistent }.map(\.id)
        #expect(report.skipped == (engine.capabilities.contains(.persistent) ? [] : needPersistence))
        #expect(report.passed.count + report.skipped.count == RecordConformance.cases.count)
    }

    @Test("every record case passes on every bundled engine with every value compressed, then encrypted", arguments: Engines.all)
    func passesCompressedAndEncrypted(engine: EngineUnderTest) async {
        let cases = RecordConformance.cases(transforms: [RecordCompression(minimumLength: 1), RecordEncryption(key: .random())])
        await caseSlots.acquire()
        let report = await ConformanceSuite.run(engine, cases: cases)
        await caseSlots.release()
        #expect(report.failures.isEmpty, "\(report.description)")
        #expect(report.passed.count + report.skipped.count == RecordConformance.cases.count)
    }

    @Test("the cases run with the transforms they are given: a transform that loses a byte on reads fails them")
    func transformsReachTheStores() async {
        struct LosesAByte: ValueTransform {
            var name: String { "loses-a-byte" }
            func apply(_ fields: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) { output.append(contentsOf: fields) }
            func reverse(_ stored: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) {
                output.append(contentsOf: stored.dropLast())
            }
        }
        let report = await ConformanceSuite.run(Engines.memory, cases: RecordConformance.cases(transforms: [LosesAByte()]))
        #expect(report.failures.count > RecordConformance.cases.count / 2, "\(report.failures.count) failures")
    }

    @Test("the record cases cover queries of every kind of index, their maintenance, unique violations, limits, builds and paging")
    func coverage() {
        let ids = RecordConformance.cases.map(\.id)
        #expect(Set(ids).count == ids.count, "duplicate case names")
        for word in ["equality", "unique", "comparison", "oneOf", "limit and order", "multi-valued", "covering", "nil", "views",
                     "overwrite", "deletes", "rolled-back", "key limit", "random logs", "write-only", "pages",
                     "changefeed/off by default", "changefeed/random transactions", "spans chunks", "retention by count", "retention by age",
                     "turning the feed off", "damaged chunk"] {
            #expect(ids.contains { $0.contains(word) }, "no case about \(word)")
        }
    }

    @Test("an engine that drops deletes of long keys fails the index cases (stale entries after overwrites and deletes)")
    func catchesDroppedDeletes() async {
        let broken = EngineUnderTest(name: "broken-dropsLongDeletes", capabilities: []) { _, _ in
            BrokenEngine(MemoryEngine(), bug: .dropsLongDeletes)
        }
        let report = await ConformanceSuite.run(broken, cases: RecordConformance.cases)
        let failed = Set(report.failures.map(\.caseID))
        #expect(failed.contains("index/an overwrite removes the old entries and adds the new ones"))
        #expect(failed.contains("index/deletes by key, by record and by query remove the entries"))
        #expect(failed.contains("index/random logs of writes and aborted transactions keep every index equal to a model"))
        #expect(!failed.contains("index/equality on a field finds every record with the value, in primary-key order"))
        print("caught, as it should be: \(report)")
    }

    @Test("an engine whose reverse scans come forward fails the change feed cases (writers reuse versions and overwrite transactions)")
    func catchesReusedFeedVersions() async {
        let broken = EngineUnderTest(name: "broken-reverseScansForward", capabilities: []) { _, _ in
            BrokenEngine(MemoryEngine(), bug: .reverseScansForward)
        }
        let feedCases = RecordConformance.cases.filter { $0.group == "changefeed" }
        let report = await ConformanceSuite.run(broken, cases: feedCases)
        let failed = Set(report.failures.map(\.caseID))
        #expect(failed.contains("changefeed/random transactions and rollbacks: the feed equals the model's log of committed changes, read in pages of every size"))
        #expect(failed.contains("changefeed/retention by count: writers trim as they go, an older token is historyTruncated, the newest transaction stays"))
        #expect(!failed.contains("changefeed/off by default: reading it is a typed error and writes leave nothing in it"))
        print("caught, as it should be: \(report)")
    }
}
