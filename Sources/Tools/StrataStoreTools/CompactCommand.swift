import ArgumentParser
import Foundation
import StrataEngine
import StrataRecords

/// `compact STORE`: gives the room of deleted records back to the file system.
public struct CompactCommand<Locator: StoreLocator>: ParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "compact",
            abstract: "Give the room of deleted records back: the store's files shrink to what its records take.",
            discussion: """
                LMDB: a compacting copy replaces data.mdb (needs the store alone: refused while another process has it \
                open, and room for the copy). SQLite: VACUUM (room for a temporary copy). LevelDB: every level compacted. \
                etcd: the cluster's history compacted and every member defragmented (the whole cluster's: older \
                revisions can no longer be read). A crash during it leaves the store as it was or as it is after, whole. \
                Values are not opened: no key is needed for an encrypted store. \(ToolExit.help)
                """)
    }

    @OptionGroup var locator: Locator
    @Argument(help: ArgumentHelp("The store: \(Locator.storeForms).")) var path: String
    @Option(help: "The store's engine (detected from its files when left out).") var engine: ToolEngine?

    public init() {}

    public func run() throws {
        try runTool {
            let location = try locator.store(path, engine: engine)
            let opened: any KeyValueEngine
            do {
                opened = try location.configuration.open(EngineOptions(mode: .openExisting))
            } catch EngineError.locked {
                throw ToolFailure("\(location.name): \(location.kind.name) store locked by another process (LevelDB allows one process: compact "
                                  + "it from inside that process with Store.compact(); an LMDB store is locked while another process compacts it)")
            } catch {
                throw ToolFailure("\(location.name): \(error)")
            }
            defer { try? opened.close() }
            // On standard error, so that a log (or a test) sees the long step begin.
            FileHandle.standardError.write(Data("compacting \(location.name)…\n".utf8))
            let start = ContinuousClock.now
            let report: CompactionReport
            do {
                report = try opened.compact()
            } catch EngineError.locked {
                throw ToolFailure("\(location.name): another process has the store open; a \(location.kind.name) compaction needs it alone")
            } catch {
                throw ToolFailure("\(location.name): \(error)")
            }
            let seconds = String(format: "%.1f", (ContinuousClock.now - start).secondsValue)
            print("\(location.name): \(report) in \(seconds) s")
            return ToolExit.ok
        }
    }
}
