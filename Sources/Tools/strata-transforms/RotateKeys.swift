import ArgumentParser
import Foundation
import StrataEngine
import StrataRecords
import StrataStoreTools

/// `rotate-keys STORE --key-file NEW --previous-key-file OLD`: re-seals every value of an
/// encrypted store under a new key, online (`Store.rotateKeys`).
struct RotateKeys: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-keys",
        abstract: "Re-seal every value of an encrypted store under a new key, online.",
        discussion: """
            Opens the store with the key of --key-file, reading values sealed under the key of --previous-key-file, \
            which begins the rotation (the manifest names both keys), then re-seals every record value and covering \
            index entry in short transactions while other processes of the store's engine may read (and, opened with \
            the new key, write). Interrupted, it continues where it stopped when run again. When it ends, the store \
            no longer needs the previous key. \(ToolExit.help)
            """)

    @OptionGroup var locator: TransformedStores
    @Argument(help: "The store: its directory.") var path: String
    @Option(help: "The store's engine (detected from its files when left out).") var engine: ToolEngine?
    @Option(help: "Pairs per write transaction.") var batch = 1_000

    func run() throws {
        do {
            guard let keyFile = locator.keyFile else { throw ToolFailure("rotate-keys needs the new key: --key-file", status: ToolExit.usage) }
            guard batch > 0 else { throw ToolFailure("--batch: at least 1", status: ToolExit.usage) }
            let location = try StoreLocation(directory: path, engine: engine)
            let handle = try location.configuration.open(EngineOptions(mode: .openExisting, durability: .full))
            let store: Store
            do {
                let stored = try Store.storedTransforms(in: handle)
                guard !stored.transforms.isEmpty else { throw ToolFailure("\(location.name): its values are not encrypted: there is no key to rotate") }
                store = try Store(engine: handle, transforms: try locator.transforms(named: stored, store: location.name))
            } catch {
                try? handle.close()
                throw error
            }
            defer { try? store.close() }
            let key = try KeyFile.load(keyFile)
            let report = try store.rotateKeys(batchSize: batch) { progress in
                FileHandle.standardError.write(Data("rotate-keys \(location.name): \(progress.phase), \(progress.done) of about \(progress.total)\n".utf8))
            }.wait()
            guard !report.retired.isEmpty else {
                print("rotate-keys: \(location.name) was already sealed under key \(key.idDescription) alone: nothing to do")
                return
            }
            print("rotate-keys: \(report.records) records and \(report.coveringEntries) covering entries re-sealed under key \(key.idDescription), "
                + "\(report.entriesCleared) entries of retired indexes cleared, in \(report.batches) transactions; retired: \(report.retired.joined(separator: ", "))")
            guard report.unreadable == 0 else {
                print("\(report.unreadable) values could not be re-sealed (damaged, or refused by their transform), first keys: "
                    + report.firstUnreadableKeys.map { StoredValue.hex($0) }.joined(separator: ", ") + " (strata-transforms verify names them)")
                throw ExitCode(ToolExit.problems)
            }
        } catch let failure as ToolFailure {
            FileHandle.standardError.write(Data("strata-transforms: \(failure.message)\n".utf8))
            throw ExitCode(failure.status)
        } catch let exit as ExitCode {
            throw exit
        } catch {
            FileHandle.standardError.write(Data("strata-transforms: \(path): \(error)\n".utf8))
            throw ExitCode(ToolExit.failed)
        }
    }
}
