import ArgumentParser

/// `strata-harness`: what the tests and the long runs drive and a user never needs: the kill -9,
/// power-loss, preparation-race, import and feed crash runs and their writer processes, the
/// disk-full helper, the suite's probe and sequence-writer processes, the format upgrade helper,
/// and the allocation and heap measurements. It links the malloc-counting interposer
/// (`CAllocationCounter`), which no product may carry. Not a product: `swift build` builds it,
/// `make run` does not.
@main
struct StrataHarness: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-harness",
        abstract: "Strata's test harness: crash, power-loss and race runs, the suite's helper processes, allocation counts.",
        subcommands: [
            CrashTest.self, CrashWriter.self, PowerLossTest.self, PowerLossCheck.self, PrepareCrashTest.self, PrepareRaceTest.self,
            PrepareWriter.self, ImportCrashTest.self, ImportWriter.self, FeedCrashTest.self, FeedCrashWriter.self, DiskFull.self,
            Probe.self, SequenceWriter.self, UpgradeStore.self, Allocations.self, ReadingMemory.self,
        ]
    )
}
