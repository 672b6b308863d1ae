import StrataConformance
import StrataEngine
import StrataMemory
import Testing

/// Proof that the checks can fail: deliberately broken engines must be reported.
@Suite("The checks catch broken engines")
struct SuiteCanFailTests {
    static func broken(_ bug: BrokenEngine.Bug) -> EngineUnderTest {
        EngineUnderTest(name: "broken-\(bug.rawValue)", capabilities: []) { _, _ in BrokenEngine(MemoryEngine(), bug: bug) }
    }

    @Test("the conformance suite reports each bug in the cases that cover it", arguments: BrokenEngine.Bug.allCases)
    func conformanceCatches(bug: BrokenEngine.Bug) async {
        let report = await ConformanceSuite.run(Self.broken(bug))
        let failed = Set(report.failures.map(\.caseID))
        switch bug {
        case .reverseScansForward:
            #expect(failed.contains("range/lower inclusive d, upper exclusive h, reverse"))
            #expect(failed.contains("order/tricky keys scan in reverse bytewise order"))
            #expect(!failed.contains("range/lower inclusive d, upper exclusive h"))
        case .dropsSomeWrites:
            #expect(failed.contains("point/put then get returns the value") == false)
            #expect(failed.contains("point/a key and the same key plus 00 are different keys") == false)
            #expect(failed.contains("range/lower unbounded, upper unbounded"))
            #expect(failed.contains("clear/lower unbounded, upper unbounded"))
        case .ignoresLimit:
            #expect(failed.contains("range/limit 1 returns the first"))
            #expect(failed.contains("range/limit 0 returns nothing, reverse"))
            #expect(!failed.contains("range/limit above the result returns all"))
        case .dropsLongDeletes:
            #expect(failed.contains("point/keys of every length up to 511 bytes can be deleted"))
            #expect(!failed.contains("point/delete removes the key"))
        }
        // Each failure names the expected and the actual result.
        for failure in report.failures where !failure.message.contains("expected") { Issue.record("\(failure.caseID): \(failure.message)") }
    }

    // Not .dropsLongDeletes: the engine-level log's keys are 1-4 bytes (and one of 511, rarely
    // deleted); that bug is for the record cases, whose keys are longer (RecordConformanceTests).
    @Test("the differential test reports each bug with a seed and a shrunk log",
          arguments: BrokenEngine.Bug.allCases.filter { $0 != .dropsLongDeletes })
    func differentialCatches(bug: BrokenEngine.Bug) async throws {
        let report = await DifferentialTest.run(Self.broken(bug), seed: 7, operations: 2_000)
        let failure = try #require(report.failure)
        #expect(report.description.contains("seed 7"))
        let shrunkSteps = failure.split(separator: "\n").filter { $0.hasPrefix("  ") }.count
        #expect(shrunkSteps >= 1 && shrunkSteps <= 6, "the shrunk log has \(shrunkSteps) steps:\n\(failure)")
        print("caught, as it should be: \(report)")
    }
}
