import ArgumentParser
import StrataConformance

/// `strata conformance`: runs the conformance suite on fresh temporary stores.
struct Conformance: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the engine conformance suite on fresh temporary stores.")

    @Option(help: "The engine to check: \(EngineChoice.allValueStrings.joined(separator: ", ")).")
    var engine: EngineChoice = .all

    @Option(help: "Run only the cases whose group/name contains this text.")
    var filter: String?

    @Flag(help: "Print each case as it starts.")
    var verbose = false

    func run() throws {
        var failed = 0
        for kind in engine.engines {
            let report = ConformanceSuite.run(EngineUnderTest(kind), filter: filter) { testCase in
                if verbose { say("[\(kind.name)] \(testCase.id)") }
            }
            say(report.description)
            failed += report.failures.count
        }
        if failed > 0 { throw ExitCode.failure }
    }
}
