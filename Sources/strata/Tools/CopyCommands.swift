import ArgumentParser
import Foundation
import StrataEngine
import StrataRecords

/// `strata copy SRC DST`: a store into another engine (or the same), verified.
struct Copy: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a store into a new store of any engine, then verify the copy.",
        discussion: """
            Every pair is copied byte for byte except the manifest, which is rewritten for the destination's \
            engine and written last: an interrupted copy has no manifest and never opens as a store. \
            The source is read as one snapshot while other processes may keep writing (LMDB, SQLite). \
            \(ToolExit.help)
            """)

    @Argument(help: "The source store's directory.") var source: String
    @Argument(help: "The destination directory (new, or empty).") var destination: String
    @Option(help: "The source's engine (detected from its files when left out).") var engine: EngineChoice?
    @Option(help: "The destination's engine (the source's when left out).") var to: EngineChoice?
    @Option(help: "Pairs per write transaction.") var batch = 1_000

    func run() throws {
        try runTool { try copyStore(source: source, destination: destination, engine: engine, to: to, batch: batch, label: "copy", verify: true) }
    }
}

/// `strata backup SRC DST`: a consistent snapshot of a store that may be in use.
struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Back up a store while other processes keep writing to it: a consistent snapshot, restorable by opening it.",
        discussion: """
            Works from the command line on engines that allow a second process (LMDB, SQLite). LevelDB allows one \
            process: back it up from inside that process with Store.copy(to:). Restore into another engine with \
            strata copy. \(ToolExit.help)
            """)

    @Argument(help: "The store's directory.") var source: String
    @Argument(help: "The backup's directory (new, or empty).") var destination: String
    @Option(help: "The store's engine (detected from its files when left out).") var engine: EngineChoice?
    @Option(help: "Pairs per write transaction.") var batch = 1_000

    func run() throws {
        try runTool { try copyStore(source: source, destination: destination, engine: engine, to: nil, batch: batch, label: "backup", verify: false) }
    }
}

/// Copies `source` into `destination` with progress; `verify` then runs `Store.verify` on the copy.
private func copyStore(source: String, destination: String, engine: EngineChoice?, to: EngineChoice?, batch: Int,
                       label: String, verify: Bool) throws -> Int32 {
    let location = try StoreLocation(path: source, engine: engine)
    guard to.map({ $0.engines.count == 1 }) ?? true else { throw ToolFailure("--to: name one engine", status: 64) }
    let target = to?.engines[0] ?? location.kind
    let store = try location.openReadOnly()
    defer { try? store.close() }
    let progress = ProgressLine("\(label) \(source) → \(destination)")
    var last: InspectionProgress?
    let report = try toolStep(destination) {
        try store.copy(to: target.configuration(path: destination), batchSize: batch) { p in last = p; progress.update(p) }
    }
    if let last { progress.finish(last) }
    print("\(label): \(report.pairs) pairs, \(report.bytes) bytes, \(report.batches) transactions, \(location.kind.name) → \(target.name) at \(destination)")
    guard verify else { return ToolExit.ok }
    let copy = try toolStep(destination) { try Store(target.configuration(path: destination), mode: .readOnly) }
    defer { try? copy.close() }
    let check = try toolStep(destination) { try copy.verify() }
    for problem in check.problems { print("problem: \(problem)") }
    print(check.isClean ? "verified: \(check.records) records, \(check.indexEntries) index entries, nothing wrong" : "\(check.problemCount) problems in the copy")
    return check.isClean ? ToolExit.ok : ToolExit.problems
}
