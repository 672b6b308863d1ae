import ArgumentParser
import Foundation
import StrataStoreTools

@main
struct Strata: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Strata: a record store with pluggable storage engines.",
        subcommands: [Demo.self] + StoreTools<BundledStores>.commands + [Bench.self, Conformance.self, ConformancePeerCommand.self, CrashTest.self, CrashWriter.self, PowerLossTest.self, PowerLossCheck.self, PrepareCrashTest.self, PrepareRaceTest.self, PrepareWriter.self, ImportCrashTest.self, ImportWriter.self, FeedCrashTest.self, FeedCrashWriter.self, DiskFull.self, Probe.self, SequenceWriter.self, UpgradeStore.self, IndexBench.self, CodableBench.self, ObserveBench.self, ObservePeer.self, ScanAllocations.self, ReadingMemory.self],
        defaultSubcommand: Demo.self
    )
}

/// Prints a line and flushes it at once, so progress shows as it happens, also in pipes.
func say(_ line: String) {
    print(line)
    fflush(nil)
}
