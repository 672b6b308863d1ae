import StrataConformance
import StrataEngine
import Testing

@Suite("Conformance")
struct ConformanceTests {
    @Test("the conformance suite passes", arguments: Engines.all)
    func suitePasses(engine: EngineUnderTest) async throws {
        let report = await ConformanceSuite.run(engine)
        print(report.description)
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.caseCount + report.skipped.count == ConformanceSuite.cases.count)
        // On-disk engines declare persistence, so only the in-memory engine may skip cases.
        if engine.capabilities.contains(.persistent) { #expect(report.skipped.isEmpty) }
    }

    @Test("the suite has at least 100 distinct named cases")
    func caseCount() {
        let ids = ConformanceSuite.cases.map(\.id)
        #expect(Set(ids).count == ids.count, "duplicate case names")
        #expect(ids.count >= 100)
    }
}
