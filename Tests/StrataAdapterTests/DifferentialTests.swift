import Foundation
import StrataConformance
import Testing

@Suite("Differential")
struct DifferentialTests {
    /// Operations per engine; `STRATA_DIFFERENTIAL_OPS=1000000` for a long run,
    /// `STRATA_DIFFERENTIAL_SEED` to replay a reported seed.
    static let operations = ProcessInfo.processInfo.environment["STRATA_DIFFERENTIAL_OPS"].flatMap(Int.init) ?? 10_000
    static let seed = ProcessInfo.processInfo.environment["STRATA_DIFFERENTIAL_SEED"].flatMap(UInt64.init) ?? 20_261_121

    @Test("random operation logs give the reference model's results", arguments: Engines.all)
    func matchesModel(engine: EngineUnderTest) async {
        let report = await DifferentialTest.run(engine, seed: Self.seed, operations: Self.operations)
        print(report)
        #expect(report.failure == nil, "\(report)")
        #expect(report.operations >= Self.operations)
    }
}
