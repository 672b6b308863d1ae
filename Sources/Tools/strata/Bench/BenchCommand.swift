import ArgumentParser
import CRawBench
import Foundation
import StrataBundledEngines
import StrataRecords
@_spi(StrataInternals) import StrataEngine
import StrataLevelDB
import StrataLMDB
import StrataSQLite
import StrataToolSupport

/// The heap in use, from glibc's own statistics (no interposer: allocation counts are the
/// harness's, `strata-harness allocations`).
enum HeapProbe {
    static func inUse() -> UInt64 { rb_heap_in_use() }
}

/// `strata bench`: every engine, the same workloads, at the engine layer and the record layer,
/// next to the C library itself.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure every engine side by side (build with -c release).",
        discussion: "Workloads: " + Workload.allCases.map { "\($0.rawValue) (\($0.summary))" }.joined(separator: "; "))

    @Option(help: "Records per store (1000000 for the long run).") var records = 100_000
    @Option(help: "Short scans of 100 records.") var scans = 10_000
    @Option(help: "Single-record transactions with full durability.") var syncTransactions = 1_000
    @Option(parsing: .upToNextOption, help: "Engines: lmdb leveldb sqlite.") var engines: [String] = ["lmdb", "leveldb", "sqlite"]
    @Option(parsing: .upToNextOption, help: "Workloads (all by default).") var workloads: [Workload] = Workload.allCases
    @Option(help: "Where to write results.json and results.svg.") var output = "bench-results"
    @Option(help: "Scratch directory for the stores (removed afterwards).") var scratch = NSTemporaryDirectory()
    @Option(help: "Rounds, interleaved; each figure is the median over them.") var rounds = 5
    @Flag(inversion: .prefixedNo, help: "Measure Store.compact() on each engine after the rounds.") var compaction = true

    func validate() throws {
        for engine in engines where !["lmdb", "leveldb", "sqlite"].contains(engine) {
            throw ValidationError("unknown engine \(engine)")
        }
        if records < 1 { throw ValidationError("--records must be positive") }
        if rounds < 1 { throw ValidationError("--rounds must be positive") }
    }

    func run() throws {
        #if DEBUG
        say("note: this is a debug build; figures mean little. Use: swift run -c release strata bench")
        #endif
        let root = (scratch as NSString).appendingPathComponent("strata-bench-\(getpid())")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = BenchData(count: records, scans: scans)
        say("Strata benchmark: \(records) records (16-byte keys, 100-byte values), \(scans) short scans, \(syncTransactions) synced transactions")
        say("Durability: relaxed for every workload but fillsync (LMDB MDB_NOMETASYNC, LevelDB sync=false, SQLite WAL synchronous=NORMAL);")
        say("fillsync: full (LMDB sync, LevelDB sync=true, SQLite synchronous=FULL). LevelDB with Snappy on both sides.")
        say("Rounds: \(rounds), interleaved (every engine and layer once per round); figures are medians over the rounds.")
        var perRound: [[BenchResult]] = []
        var sizes: [String: [Layer: UInt64]] = [:]
        var heapGrowth: [String: UInt64] = [:]
        for round in 1...rounds {
            var results: [BenchResult] = []
            for engine in engines {
                var checksums: [Layer: [Workload: UInt64]] = [:]
                for layer in Layer.allCases {
                    let outcome = try measure(engine: engine, layer: layer, data: data, root: root, round: rounds > 1 ? round : nil)
                    results += outcome.results
                    sizes[engine, default: [:]][layer] = outcome.size
                    if let growth = outcome.heapGrowth { heapGrowth[engine] = max(heapGrowth[engine] ?? 0, growth) }
                    checksums[layer] = outcome.checksums
                }
                try Self.checkChecksums(checksums, engine: engine)
            }
            perRound.append(Report.rate(results))
        }
        var compactions: [CompactionBench.Result] = []
        if compaction {
            say("Compaction (record layer, once per engine): \(records) records filled at random, a random half deleted, Store.compact()")
            for engine in engines { compactions.append(try CompactionBench.run(engine: engine, data: data, root: root)) }
        }
        let rated = Report.medians(perRound)
        say("")
        say(Report.table(rated, sizes: sizes, heapGrowth: heapGrowth, records: records))
        say(Report.targets(rated, sizes: sizes, valueBytes: UInt64(records * (BenchData.keyLength + BenchData.valueLength)), rounds: rounds))
        for line in CompactionBench.targets(compactions) { say(line) }
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let json = (output as NSString).appendingPathComponent("results.json")
        let svg = (output as NSString).appendingPathComponent("results.svg")
        try Report.json(rated, records: records).write(to: URL(fileURLWithPath: json))
        try Report.svg(rated, records: records).write(toFile: svg, atomically: true, encoding: .utf8)
        say("wrote \(json) and \(svg)")
    }

    struct Outcome {
        var results: [BenchResult] = []
        var size: UInt64 = 0
        var heapGrowth: UInt64?
        /// Each read workload's value checksum (``BenchTarget/checksum``), for the workloads that ran.
        var checksums: [Workload: UInt64] = [:]
    }

    /// Every layer must have read the same value bytes as raw C.
    static func checkChecksums(_ checksums: [Layer: [Workload: UInt64]], engine: String) throws {
        guard let raw = checksums[.raw] else { return }
        for (layer, sums) in checksums where layer != .raw {
            for (workload, sum) in sums where raw[workload] != nil && raw[workload] != sum {
                throw BenchFailure(description: "\(engine) \(layer.rawValue) \(workload.rawValue): value checksum \(sum), raw C read \(raw[workload]!)")
            }
        }
    }

    /// Runs the selected workloads on fresh stores of one engine and layer.
    func measure(engine: String, layer: Layer, data: BenchData, root: String, round: Int? = nil) throws -> Outcome {
        var outcome = Outcome()
        let base = "\(root)/\(engine)-\(layer == .raw ? "raw" : layer.rawValue)"
        func open(_ name: String, durable: Bool) throws -> BenchTarget {
            let path = "\(base)-\(name)"
            let options = EngineOptions(mode: .create, durability: durable ? .full : .relaxed)
            switch layer {
            case .raw: return try RawTarget(engine: engine, path: path, durable: durable, data: data)
            case .engine: return EngineTarget(engine: try Self.openEngine(engine, path, options), data: data)
            case .record: return RecordTarget(store: try Store(engine: try Self.openEngine(engine, path, options)), data: data)
            case .view: return ViewTarget(store: try Store(engine: try Self.openEngine(engine, path, options)), data: data)
            }
        }
        func runs(_ workload: Workload) -> Bool { workloads.contains(workload) && (layer != .view || workload.isScan) }
        func run(_ workload: Workload, operations: Int, opsPerBatch: Int, _ target: BenchTarget, _ body: () throws -> [UInt64]) throws {
            guard runs(workload) else { return }
            let label = "  \(round.map { "round \($0): " } ?? "")\(engine) \(layer.rawValue) \(workload.rawValue)…"
            let ticker = Ticker(label)
            let start = now()
            let nanos = try body()
            let seconds = Double(now() - start) / 1e9
            ticker.stop()
            let timings = Timings(batchNanos: nanos, opsPerBatch: opsPerBatch)
            var result = BenchResult(engine: engine, layer: layer, workload: workload, operations: operations, seconds: seconds,
                                     p50Micros: timings.percentile(0.5), p99Micros: timings.percentile(0.99))
            if workload == .fillseq && layer != .raw { result.heapHighWater = target.heapHighWater }
            if [.readrandom, .scanforward, .scanreverse, .scan100].contains(workload) { outcome.checksums[workload] = target.checksum }
            say(" \(Report.rate(result.opsPerSecond)) ops/s")
            outcome.results.append(result)
        }
        let n = data.count, batch = min(1_000, n)
        if workloads.contains(.fillseq) && layer != .view {
            let target = try open("seq", durable: false)
            try run(.fillseq, operations: n, opsPerBatch: batch, target) { try target.fill(data.sequentialOrder, perTransaction: n, batch: batch) }
            try target.close()
        }
        let target = try open("random", durable: false)
        try run(.fillrandom, operations: n, opsPerBatch: batch, target) { try target.fill(data.randomOrder, perTransaction: 1_000, batch: batch) }
        if !workloads.contains(.fillrandom) || layer == .view { _ = try target.fill(data.randomOrder, perTransaction: 1_000, batch: batch) }
        try run(.readrandom, operations: n, opsPerBatch: batch, target) { try target.read(data.randomOrder, batch: batch) }
        try run(.scanforward, operations: n, opsPerBatch: batch, target) { try target.scan(reverse: false, batch: batch) }
        try run(.scanreverse, operations: n, opsPerBatch: batch, target) { try target.scan(reverse: true, batch: batch) }
        try run(.scan100, operations: data.scanStarts.count, opsPerBatch: 1, target) { try target.scans(length: 100) }
        if layer == .record { outcome.heapGrowth = (target as? RecordTarget)?.scanHeapGrowth }
        try target.close()
        outcome.size = Self.directorySize("\(base)-random")
        if workloads.contains(.fillsync) {
            let synced = try open("sync", durable: true)
            let count = min(syncTransactions, n)
            try run(.fillsync, operations: count, opsPerBatch: 1, synced) {
                try synced.fill(Array(data.randomOrder.prefix(count)), perTransaction: 1, batch: 1)
            }
            try synced.close()
        }
        return outcome
    }

    /// Opens a bundled engine with its default options, as a user gets it.
    static func openEngine(_ name: String, _ path: String, _ options: EngineOptions) throws -> any KeyValueEngine {
        guard let kind = BundledEngines.named(name) else { throw ValidationError("unknown engine \(name)") }
        return try kind.open(path, options)
    }

    static func directorySize(_ path: String) -> UInt64 {
        let files = (try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []
        return files.reduce(0) { total, file in
            let attributes = try? FileManager.default.attributesOfItem(atPath: (path as NSString).appendingPathComponent(file))
            return total + ((attributes?[.size] as? NSNumber)?.uint64Value ?? 0)
        }
    }
}

extension Workload: ExpressibleByArgument {}

/// Live progress: the workload's name, then its elapsed seconds once a second while it runs
/// (the C yardstick has no callbacks, so time is what can be shown for every workload).
final class Ticker: Sendable {
    private let label: String
    private let running = Locked(true)
    private let done = DispatchSemaphore(value: 0)
    /// On a terminal the label shows at once and the seconds tick after it, rewritten in place;
    /// in a pipe or a log nothing shows until the workload ends, then one plain line (the label
    /// and the result), with no carriage return.
    private let terminal: Bool

    init(_ label: String, terminal: Bool = isatty(STDOUT_FILENO) == 1) {
        self.label = label
        self.terminal = terminal
        guard terminal else { return }
        FileHandle.standardOutput.write(Data(label.utf8))
        Thread { [self] in
            var elapsed = 0
            while done.wait(timeout: .now() + 1) == .timedOut {
                elapsed += 1
                running.withLock { if $0 { FileHandle.standardOutput.write(Data("\r\(label) \(elapsed) s".utf8)) } }
            }
        }.start()
    }

    /// Stops ticking and leaves the label written once before the cursor, for the result.
    func stop() {
        guard terminal else {
            FileHandle.standardOutput.write(Data(label.utf8))
            return
        }
        running.withLock { $0 = false }
        done.signal()
        // The elapsed seconds are cleared (ESC [K) and the label written again.
        FileHandle.standardOutput.write(Data("\r\(label)\u{1B}[K".utf8))
    }
}
