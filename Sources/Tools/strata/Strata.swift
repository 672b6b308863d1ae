import ArgumentParser
import Foundation
import StrataStoreTools

/// `strata`: the demo, the benchmarks, the conformance runner and the store tools. The test
/// harness (crash, power-loss and race runs, the suite's helper processes, the allocation
/// counter) is `strata-harness`, which is not a product.
@main
struct Strata: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Strata: a record store with pluggable storage engines.",
        subcommands: [Demo.self] + StoreTools<BundledStores>.commands
            + [Bench.self, IndexBench.self, CodableBench.self, ObserveBench.self, ObservePeer.self, Conformance.self, ConformancePeerCommand.self],
        defaultSubcommand: Demo.self
    )
}
