import ArgumentParser
import Foundation
import StrataEngine
@_spi(Testing) import StrataRecords
import StrataToolSupport

/// `strata-harness upgrade-store`: opens a store writable, which upgrades an older format in place, and
/// prints a line per committed batch. The upgrade tests kill it mid-way and reopen.
struct UpgradeStore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade-store", abstract: "Upgrade a store's format in place (a test helper).", shouldDisplay: false)

    @Option var engine: EngineChoice
    @Option var path: String
    @Option(help: "Records per batch.") var batch = 1_000
    @Option(help: "Milliseconds to wait after each batch (so a test can kill it mid-way).") var pauseMs = 0

    func run() throws {
        let store = try Store(engine: try engine.open(path, EngineOptions(mode: .openExisting)), readOnly: false,
                              upgradeBatchSize: batch) { report in
            say("batch \(report.batches) converted \(report.converted)")
            if pauseMs > 0 { usleep(UInt32(pauseMs) * 1_000) }
        }
        say("done " + (store.formatUpgrade.map { "converted \($0.converted) damaged \($0.damaged) untouched \($0.untouched)" } ?? "nothing to upgrade"))
        try store.close()
    }
}
