import ArgumentParser
import Dispatch
import Foundation
import StrataBundledEngines
import StrataConformance
@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec
import StrataRecords
import StrataToolSupport

/// A row of the observation benchmark: keyed by (group, id), a level and a 64-byte payload.
struct ObservedRow: Record, Sendable {
    var group: Int
    var id: Int
    var level: Int
    var payload: [UInt8]

    static let recordType = RecordType(keyspace: "ObservedRow", version: 1, key: [("group", Int.self), ("id", Int.self)])
    func writeKey(to key: inout KeyWriter) {
        key.append(group)
        key.append(id)
    }
    func writeFields(to fields: inout FieldWriter) {
        fields.write(level)
        fields.write(payload)
    }
    init(group: Int, id: Int, level: Int, payload: [UInt8]) { (self.group, self.id, self.level, self.payload) = (group, id, level, payload) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        group = try key.read()
        id = try key.read()
        level = try fields.read()
        payload = try fields.read()
    }
}

/// `strata bench-observe`: what observing a query costs a writer and how soon a commit reaches
/// its observer (release build).
struct ObserveBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-observe",
        abstract: "Measure query observation: commit-to-snapshot latency in a large observed range, and fills with observers against fills without.")

    @Option(help: "Records in the observed range.") var records = 100_000
    @Option(help: "Single-record commits timed per round.") var commits = 200
    @Option(parsing: .upToNextOption, help: "Engines: lmdb leveldb sqlite memory.") var engines: [String] = ["lmdb", "leveldb", "sqlite"]
    @Option(help: "Scratch directory for the stores (removed afterwards).") var scratch = NSTemporaryDirectory()

    static let rounds = 5
    /// Rounds of the fills (each of the three configurations once a round).
    static let fillRounds = 11

    func run() throws {
        #if DEBUG
        say("note: this is a debug build; figures mean little. Use: swift run -c release strata bench-observe")
        #endif
        let root = (scratch as NSString).appendingPathComponent("strata-bench-observe-\(getpid())")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let payload = [UInt8](repeating: 7, count: 64)
        say("Observation benchmark: \(records) records in the observed range (key (group, id), an Int and 64 bytes), \(commits) single-record commits per round, medians of \(Self.rounds) rounds (\(Self.fillRounds) for the fills)")
        for engine in engines {
            guard let kind = BundledEngines.named(engine) else { throw ValidationError("unknown engine \(engine)") }
            var stores = 0
            func store() throws -> Store {
                stores += 1
                return try Store(engine: try kind.open("\(root)/\(engine)-\(stores)", EngineOptions(durability: .relaxed)))
            }
            // Fills of the observed group, 1,000 per transaction: without observers, with 10
            // observing other groups (each commit is tested against them, and wakes none), and with
            // the change feed on as well (every commit also writes its changes). A fill takes tens
            // of milliseconds: the three run in a rotating order, each in a store of its own, over
            // more rounds than the latencies, so neither the order nor one slow moment decides.
            var plain: [Double] = [], observed: [Double] = [], fed: [Double] = []
            for round in 0..<Self.fillRounds {
                for configuration in (0..<3).map({ ($0 + round) % 3 }) {
                    let filled = try store()
                    if configuration == 2 { try filled.enableChangeFeed(retention: .commits(1_000)) }
                    let observers = configuration == 0 ? []
                        : try (0..<10).map { try Self.observe(filled, Query<ObservedRow>(RecordQuery.all.equal(100 + $0)), count: nil) }
                    let seconds = try Self.fill(filled, group: 1, records: records, payload: payload)
                    for observer in observers { observer.task.cancel() }
                    try filled.close()
                    switch configuration {
                    case 0: plain.append(seconds)
                    case 1: observed.append(seconds)
                    default: fed.append(seconds)
                    }
                }
            }
            // Latency: one observer of the whole filled group (kept from the commits' records), one
            // of the first 50 records of a 1,000-record group (a limit: read again per commit);
            // each commit rewrites one record of the range and waits for its snapshot.
            let target = try store()
            _ = try Self.fill(target, group: 1, records: records, payload: payload)
            _ = try Self.fill(target, group: 2, records: 1_000, payload: payload)
            var keyP50: [Double] = [], keyP99: [Double] = [], rereadP50: [Double] = [], rereadP99: [Double] = []
            for round in 0..<Self.rounds {
                let key = try Self.latencies(target, Query<ObservedRow>(RecordQuery.all.equal(1)), group: 1, range: records, commits: commits, round: round, payload: payload)
                keyP50.append(key.p50)
                keyP99.append(key.p99)
                let small = try Self.latencies(target, Query<ObservedRow>(RecordQuery.all.equal(2)), group: 2, range: 1_000, commits: commits, round: round,
                                               payload: payload, limit: 50)
                rereadP50.append(small.p50)
                rereadP99.append(small.p99)
            }
            // Across processes (engines several processes may write): a child process commits,
            // this one observes through the change feed.
            var crossP50: [Double] = [], crossP99: [Double] = []
            if kind.declaration.capabilities.contains(.multiProcess) {
                try target.enableChangeFeed(retention: .commits(10_000))
                for round in 0..<Self.rounds {
                    let latencies = try Self.crossProcess(target, engine: engine, path: "\(root)/\(engine)-\(stores)", range: records, commits: commits / 2, round: round)
                    crossP50.append(latencies.p50)
                    crossP99.append(latencies.p99)
                }
            }
            try target.close()
            let fillRatio = IndexBench.medianRatio(plain, observed), fedRatio = IndexBench.medianRatio(plain, fed)
            say("")
            say("\(engine):")
            say(String(format: "  fill %d records    no observer %8.0f rec/s   10 observers of other ranges %8.0f rec/s   (%.2f× the rate)",
                       records, Double(records) / IndexBench.median(plain), Double(records) / IndexBench.median(observed), fillRatio))
            say(String(format: "                     change feed on and 10 observers %8.0f rec/s   (%.2f× the rate without either)",
                       Double(records) / IndexBench.median(fed), fedRatio))
            say(String(format: "  commit → snapshot  %d-record key range, kept from the commits: p50 %.0f µs, p99 %.0f µs", records, IndexBench.median(keyP50), IndexBench.median(keyP99)))
            say(String(format: "                     first 50 of a 1,000-record range, read again per commit: p50 %.0f µs, p99 %.0f µs",
                       IndexBench.median(rereadP50), IndexBench.median(rereadP99)))
            var metCross = true
            if crossP99.isEmpty {
                say("                     across processes: not applicable (\(engine) is opened by one process at a time)")
            } else {
                metCross = IndexBench.median(crossP99) <= 50_000
                say(String(format: "                     across processes (another process commits, change feed, inotify): p50 %.0f µs, p99 %.0f µs",
                           IndexBench.median(crossP50), IndexBench.median(crossP99)))
            }
            let metLatency = IndexBench.median(keyP99) <= 5_000, metFill = fillRatio >= 0.8, metFed = fedRatio >= 0.8
            say("  targets (medians of \(Self.rounds) rounds, \(Self.fillRounds) for the fills): p99 commit → snapshot ≤ 5 ms in a \(records)-record range: \(metLatency ? "met" : "missed"); fill with 10 observers ≥ 0.8× without: \(metFill ? "met" : "missed"); with the feed on too ≥ 0.8×: \(metFed ? "met" : "missed")\(crossP99.isEmpty ? "" : "; p99 across processes ≤ 50 ms: \(metCross ? "met" : "missed")")")
        }
    }

    /// Seconds to insert `records` rows of `group`, 1,000 per transaction.
    static func fill(_ store: Store, group: Int, records: Int, payload: [UInt8]) throws -> Double {
        try IndexBench.time(1) {
            var start = 0
            while start < records {
                let end = min(start + 1_000, records)
                try store.withTransaction { ctx in for id in start..<end { try ctx.insert(ObservedRow(group: group, id: id, level: id % 100, payload: payload)) } }
                start = end
            }
        }
    }

    /// The snapshots an observing task received (version, arrival time, records), each signalled.
    final class Arrivals: Sendable {
        let list = Locked<[(version: UInt64, at: UInt64, records: Int)]>([])
        let signal = DispatchSemaphore(value: 0)
    }

    static func observe(_ store: Store, _ query: Query<ObservedRow>, count limit: Int?) throws -> (task: Task<Void, any Error>, arrivals: Arrivals) {
        let arrivals = Arrivals()
        let task = Task {
            for try await snapshot in store.observe(query, limit: limit) {
                let now = DispatchTime.now().uptimeNanoseconds
                arrivals.list.withLock { $0.append((snapshot.version, now, snapshot.records.count)) }
                arrivals.signal.signal()
            }
        }
        arrivals.signal.wait()   // the first snapshot
        return (task, arrivals)
    }

    /// Commit → snapshot latencies (µs) of `commits` single-record rewrites of group 1 made by
    /// another process (`strata observe-peer`), each timed from its commit's return there to the
    /// snapshot here (one clock: the system's monotonic one).
    static func crossProcess(_ store: Store, engine: String, path: String, range: Int, commits: Int, round: Int) throws -> IndexBench.Latencies {
        final class Arrived: Sendable {
            let at = Locked<[Int: UInt64]>([:])
            let first = DispatchSemaphore(value: 0)
        }
        let arrived = Arrived()
        let task = Task {
            var started = false
            for try await snapshot in store.observe(Query<ObservedRow>(RecordQuery.all.equal(1))) {
                let now = DispatchTime.now().uptimeNanoseconds
                if !started {
                    started = true
                    arrived.first.signal()
                }
                // Group 1 holds ids 0..<range in key order: a record's position is its id.
                let marks = (snapshot.changes?.updated ?? []).compactMap { key -> Int? in
                    let id = key.bytes.withUnsafeBytes { raw -> Int? in
                        var reader = KeyReader(raw)
                        _ = try? reader.read(Int.self)
                        return try? reader.read(Int.self)
                    }
                    guard let id, id < snapshot.records.count else { return nil }
                    return snapshot.records[id].level
                }
                arrived.at.withLock { for mark in marks where mark < 0 { $0[-mark] = $0[-mark] ?? now } }
            }
        }
        defer { task.cancel() }
        arrived.first.wait()
        let peer = try ChildProcess(["observe-peer", "--engine", engine, "--path", path, "--commits", "\(commits)", "--range", "\(range)",
                                     "--round", "\(round)"])
        let lines = peer.waitForExit(seconds: 120)
        var committed: [Int: UInt64] = [:]
        for line in lines where line.hasPrefix("commit ") {
            let parts = line.split(separator: " ")
            if parts.count == 3, let mark = Int(parts[1]), let at = UInt64(parts[2]) { committed[mark] = at }
        }
        guard committed.count == commits else { throw ValidationError("observe-peer committed \(committed.count) of \(commits):\n\(lines.joined(separator: "\n"))") }
        let deadline = DispatchTime.now().uptimeNanoseconds + 10_000_000_000
        while arrived.at.withLock({ $0.count }) < commits && DispatchTime.now().uptimeNanoseconds < deadline { usleep(1_000) }
        let at = arrived.at.withLock { $0 }
        // A commit whose snapshot never came counts as the wait given up.
        var nanos = committed.map { mark, time in (at[mark] ?? deadline) - min(time, at[mark] ?? deadline) }
        nanos.sort()
        return IndexBench.Latencies(p50: Double(nanos[nanos.count / 2]) / 1e3, p99: Double(nanos[nanos.count * 99 / 100]) / 1e3, count: nanos.count)
    }

    /// Commit → snapshot latencies (µs) of `commits` single-record rewrites in `group`, each waited for.
    static func latencies(_ store: Store, _ query: Query<ObservedRow>, group: Int, range: Int, commits: Int, round: Int,
                          payload: [UInt8], limit: Int? = nil) throws -> IndexBench.Latencies {
        let (task, arrivals) = try observe(store, query, count: limit)
        defer { task.cancel() }
        var nanos: [UInt64] = []
        for i in 0..<commits {
            let id = limit.map { (i * 7) % $0 } ?? (i * 7919 + round * 31) % range
            let started = DispatchTime.now().uptimeNanoseconds
            try store.withTransaction { ctx in try ctx.insert(ObservedRow(group: group, id: id, level: round * 1_000 + i, payload: payload)) }
            arrivals.signal.wait()
            let arrived = arrivals.list.withLock { $0.last!.at }
            nanos.append(arrived - started)
        }
        nanos.sort()
        return IndexBench.Latencies(p50: Double(nanos[nanos.count / 2]) / 1e3, p99: Double(nanos[nanos.count * 99 / 100]) / 1e3, count: nanos.count)
    }
}

/// `strata observe-peer`: the other process of `bench-observe`'s cross-process latency. Rewrites
/// records of group 1 one commit at a time, 20 ms apart, each with level `-mark`, and prints
/// `commit MARK NANOSECONDS` (the monotonic clock) as each commit returns.
struct ObservePeer: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Commit single records for bench-observe (helper).", shouldDisplay: false)

    @Option var engine: String
    @Option var path: String
    @Option var commits: Int
    @Option var range: Int
    @Option var round: Int

    func run() throws {
        guard let kind = BundledEngines.named(engine) else { throw ValidationError("unknown engine \(engine)") }
        let store = try Store(engine: try kind.open(path, EngineOptions(mode: .openExisting, durability: .relaxed)))
        defer { try? store.close() }
        let payload = [UInt8](repeating: 7, count: 64)
        for mark in 1...commits {
            let row = ObservedRow(group: 1, id: (mark * 7919 + round * 31) % range, level: -(round * 1_000_000 + mark), payload: payload)
            try store.withTransaction { ctx in try ctx.insert(row) }
            say("commit \(round * 1_000_000 + mark) \(DispatchTime.now().uptimeNanoseconds)")
            usleep(20_000)
        }
    }
}
