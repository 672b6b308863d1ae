import StrataConformance
import StrataEngine
import Testing

@Suite("Conformance")
struct ConformanceTests {
    @Test("the suite has at least 100 distinct named cases")
    func caseCount() {
        let ids = ConformanceSuite.cases.map(\.id)
        #expect(Set(ids).count == ids.count, "duplicate case names")
        #expect(ids.count >= 100)
    }

    @Test("every case has its own test (ConformanceCaseTests.swift lists exactly the suite's cases)")
    func everyCaseHasATest() {
        #expect(ConformanceCaseTests.caseIDs == ConformanceSuite.cases.map(\.id),
                "regenerate: swift run strata conformance --emit-tests > Tests/StrataAdapterTests/ConformanceCaseTests.swift")
    }

    @Test("on-disk engines run every case but the multi-process ones they declare they cannot")
    func onDiskEnginesRunEveryCase() {
        for engine in Engines.onDisk {
            let notRun = ConformanceSuite.cases.filter { testCase in !Engines.supporting(testCase.id).contains { $0.name == engine.name } }
            #expect(notRun.allSatisfy { $0.requires == [.multiProcess] && !engine.capabilities.contains(.multiProcess) },
                    "\(engine.name) does not run \(notRun.map(\.id))")
        }
    }
}

extension Engines {
    /// The bundled engines that have the capabilities the case `caseID` needs.
    static func supporting(_ caseID: String) -> [EngineUnderTest] {
        guard let testCase = ConformanceSuite.cases.first(where: { $0.id == caseID }) else { return [] }
        return all.filter { $0.capabilities.isSuperset(of: testCase.requires) }
    }
}

/// Runs one conformance case on `engine` and records its failure, if any. At most four cases run
/// at once (each on a thread of its own): Swift Testing would otherwise start hundreds together.
func expectCasePasses(_ caseID: String, on engine: EngineUnderTest) async {
    await caseSlots.acquire()
    let report = await ConformanceSuite.run(engine, caseID: caseID)
    await caseSlots.release()
    #expect(report.passed == [caseID], "\(report.description)")
}

/// A counting semaphore for async code.
actor AsyncSlots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ count: Int) { free = count }

    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
}

let caseSlots = AsyncSlots(4)
