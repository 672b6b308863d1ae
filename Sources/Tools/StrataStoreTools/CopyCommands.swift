import ArgumentParser
import Foundation
import StrataEngine
import StrataRecords

/// `copy SRC DST`: a store into another engine (or the same), verified.
public struct CopyCommand<Locator: StoreLocator>: ParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "copy",
            abstract: "Copy a store into a new store of any engine, then verify the copy.",
            discussion: """
                Every pair is copied byte for byte (unless the tool re-seals values with other transforms) except the manifest, which is rewritten for the destination's \
                engine and written last: an interrupted copy has no manifest and never opens as a store. \
                The source is read as one snapshot while other processes may keep writing (LMDB, SQLite, etcd). \
                Before anything is written, every pair is checked against the destination engine's limits. \
                \(ToolExit.help)
                """)
    }

    @OptionGroup var copy: CopyArguments<Locator>

    public init() {}

    public func run() throws {
        try runTool {
            try copy.run(label: "copy", verify: true)
        }
    }
}

/// `backup SRC DST`: a consistent snapshot of a store that may be in use.
public struct BackupCommand<Locator: StoreLocator>: ParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "backup",
            abstract: "Back up a store while other processes keep writing to it: a consistent snapshot, restorable by opening it.",
            discussion: """
                Works from the command line on engines that allow a second process (LMDB, SQLite, etcd). LevelDB allows one \
                process: back it up from inside that process with Store.copy(to:). Restore into another engine with \
                copy. \(ToolExit.help)
                """)
    }

    @OptionGroup var copy: CopyArguments<Locator>

    public init() {}

    public func run() throws {
        try runTool {
            try copy.run(label: "backup", verify: false)
        }
    }
}

/// The arguments of `copy` and `backup`: the source, the destination and their engines.
struct CopyArguments<Locator: StoreLocator>: ParsableArguments {
    @OptionGroup var locator: Locator
    @Argument(help: ArgumentHelp("The source store: \(Locator.storeForms).")) var source: String
    @Argument(help: ArgumentHelp("The destination, new or empty: \(Locator.storeForms).")) var destination: String
    @Option(help: "The source's engine (detected from its files when left out).") var engine: ToolEngine?
    @Option(help: "The destination's engine (the source's when left out).") var to: ToolEngine?
    @Option(help: "Pairs per write transaction (fewer where the destination's limits say so).") var batch = 1_000

    /// Copies the source into the destination with progress; `verify` then runs `Store.verify` on the copy.
    func run(label: String, verify: Bool) throws -> Int32 {
        guard batch > 0 else { throw ToolFailure("--batch: at least 1", status: ToolExit.usage) }
        let location = try locator.store(source, engine: engine)
        let target = try locator.destination(destination, engine: to, source: location)
        let store = try location.openReadOnly(locator)
        defer { try? store.close() }
        let progress = ProgressLine("\(label) \(location.name) → \(target.name)")
        let resealing = try locator.copyTransforms(source: try toolStep(location.name) { try Store.storedTransforms(in: store.engine).transforms })
        let report = try toolStep(target.name) {
            guard let resealing else { return try store.copy(to: target.configuration, batchSize: batch, progress: progress.update) }
            return try store.copy(to: target.configuration, transforms: resealing, batchSize: batch, progress: progress.update)
        }
        progress.finish()
        print("\(label): \(report.pairs) pairs, \(report.bytes) bytes, \(report.batches) transactions, \(location.kind.name) → \(target.kind.name) at \(target.name)")
        guard verify else { return ToolExit.ok }
        let copy = try toolStep(target.name) { try target.openReadOnly(locator.readingCopies()) }
        defer { try? copy.close() }
        let check = try toolStep(target.name) { try copy.verify() }
        for problem in check.problems { print("problem: \(problem)") }
        print(check.isClean ? "verified: \(check.records) records, \(check.indexEntries) index entries, nothing wrong" : "\(check.problemCount) problems in the copy")
        return check.isClean ? ToolExit.ok : ToolExit.problems
    }
}

/// The store tools, for a tool's subcommand list.
public enum StoreTools<Locator: StoreLocator> {
    /// The subcommands `stats`, `dump`, `verify`, `copy`, `backup` and `compact`, naming stores as `Locator`
    /// reads them: for the `subcommands` of a tool's `CommandConfiguration`.
    public static var commands: [any ParsableCommand.Type] {
        [StatsCommand<Locator>.self, DumpCommand<Locator>.self, VerifyCommand<Locator>.self, CopyCommand<Locator>.self, BackupCommand<Locator>.self, CompactCommand<Locator>.self]
    }
}
