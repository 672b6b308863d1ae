import ArgumentParser
import Foundation
import StrataBundledEngines
@_spi(StrataInternals) import StrataEngine
import StrataEtcd
import StrataEtcdCluster
import StrataKeyCodec
import StrataRecords

/// `strata-etcd bench` (`make bench-etcd`): the record layer on etcd clusters of 1 and 3 members
/// beside the embedded engines, on the workloads a service runs: one record per transaction,
/// batches, point reads and short scans, each its own transaction as a request handler's would be.
struct EtcdBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "The record layer on local etcd clusters beside the embedded engines (build with -c release).")

    @Option(help: "Records per store (loaded in transactions of 100).") var records = 5_000
    @Option(help: "Single-record transactions, point reads and scans of each kind (a tenth: scans).") var operations = 500
    @Option(parsing: .upToNextOption, help: "Members of the etcd clusters to measure.") var members: [Int] = [1, 3]
    @Option(parsing: .upToNextOption, help: "Embedded engines to measure beside them.") var engines: [String] = ["lmdb", "leveldb", "sqlite"]
    @Option(help: "Where to write results.json.") var output = "bench-results-etcd"
    @Flag(inversion: .prefixedNo, help: "Whether the local clusters speak mutual TLS (--no-tls: cleartext).") var tls = true
    @Option(parsing: .upToNextOption, help: "The workloads to run (default: all; the store is filled either way).") var workloads: [String] = Self.workloads.map(\.name)

    func validate() throws {
        if records < 100 || operations < 10 { throw ValidationError("--records must be at least 100 and --operations at least 10") }
        for engine in engines where BundledEngines.named(engine) == nil { throw ValidationError("unknown engine \(engine)") }
        for workload in workloads where !Self.workloads.contains(where: { $0.name == workload }) {
            throw ValidationError("unknown workload \(workload) (one of: \(Self.workloads.map(\.name).joined(separator: ", ")))")
        }
    }

    func run() throws {
        #if DEBUG
        print("note: this is a debug build; figures mean little. Use: make bench-etcd")
        #endif
        print("Strata on etcd beside the embedded engines: \(records) records (2-integer key, 100-byte field), record layer,")
        print("every operation its own transaction; full durability everywhere (etcd: a majority of members' logs).")
        var rows: [Row] = []
        let scratch = NSTemporaryDirectory() + "strata-etcd-bench-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for engine in engines {
            let kind = BundledEngines.named(engine)!
            let store = try Store(engine: try kind.open("\(scratch)/\(engine)", EngineOptions(mode: .create, durability: .full)))
            rows += try measure(engine, store)
            try store.close()
        }
        for count in members {
            let cluster = try LocalCluster(members: count, tls: tls ? LocalCluster.TLS() : nil)
            defer { cluster.stop() }
            let options = EtcdOptions(endpoints: cluster.endpoints, tls: cluster.clientTLS)
            let store = try Store(engine: try EtcdEngine(prefix: "bench", options: EngineOptions(mode: .create), etcd: options))
            rows += try measure("etcd \(count)\(tls ? " tls" : "")", store)
            try store.close()
        }
        print("")
        print(table(rows))
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let path = (output as NSString).appendingPathComponent("results.json")
        try encoder.encode(rows).write(to: URL(fileURLWithPath: path))
        print("wrote \(path)")
    }

    /// One figure: a workload on one engine.
    struct Row: Codable {
        var engine: String
        var workload: String
        var operations: Int
        /// Operations per second, and records per second (they differ for batches and scans).
        var perSecond: Double
        var recordsPerSecond: Double
        var p50Millis: Double
        var p99Millis: Double
    }

    static let workloads: [(name: String, summary: String)] = [
        ("insert1", "one record per transaction"),
        ("insert1 x8", "the same from 8 threads"),
        ("insert100", "100 records per transaction"),
        ("get", "a point read per transaction"),
        ("scan100", "100 records from a random key, ascending"),
        ("scan100 reverse", "100 records from a random key, descending"),
    ]

    func measure(_ engine: String, _ store: Store) throws -> [Row] {
        var rows: [Row] = []
        var random = SystemRandomNumberGenerator()
        func time(_ workload: String, count: Int, recordsEach: Int, threads: Int = 1, _ body: @escaping @Sendable (Int) throws -> Void) throws {
            // The fill (insert100) runs whether or not it is measured: the other workloads read it.
            guard workloads.contains(workload) || workload == "insert100" else { return }
            print("  \(engine) \(workload)…", terminator: "")
            fflush(nil)
            let latencies = Latencies()
            let failure = Latencies.FirstError()
            let start = ContinuousClock.now
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                for i in stride(from: thread, to: count, by: threads) {
                    let began = ContinuousClock.now
                    do { try body(i) } catch { failure.keep(error); return }
                    latencies.add(ContinuousClock.now - began)
                }
            }
            if let error = failure.error { throw error }
            let seconds = Double((ContinuousClock.now - start) / .milliseconds(1)) / 1_000
            let row = Row(engine: engine, workload: workload, operations: count, perSecond: Double(count) / seconds,
                          recordsPerSecond: Double(count * recordsEach) / seconds,
                          p50Millis: latencies.percentile(0.5), p99Millis: latencies.percentile(0.99))
            print(" \(Int(row.perSecond)) /s")
            rows.append(row)
        }
        let singles = min(operations, records)
        try time("insert1", count: singles, recordsEach: 1) { i in try store.withTransaction { try $0.insert(Benched(i)) } }
        try time("insert1 x8", count: singles, recordsEach: 1, threads: 8) { i in
            try store.withTransaction { try $0.insert(Benched(singles + i)) }
        }
        try time("insert100", count: records / 100, recordsEach: 100) { batch in
            try store.withTransaction { ctx in for i in batch * 100..<(batch + 1) * 100 { try ctx.insert(Benched(i)) } }
        }
        let keys = (0..<singles).map { _ in Int.random(in: 0..<records, using: &random) }
        try time("get", count: singles, recordsEach: 1) { n in
            let i = keys[n]
            let found = try store.withReadTransaction { ctx in
                try ctx.fetch(Benched.self) { key in
                    key.append(i / 1_000)
                    key.append(i % 1_000)
                }
            }
            guard found != nil else { throw ValidationError("record \(i) not found") }
        }
        let scans = max(singles / 10, 1)
        for reverse in [false, true] {
            try time(reverse ? "scan100 reverse" : "scan100", count: scans, recordsEach: 100) { n in
                let group = keys[n] / 1_000
                let found = try store.withReadTransaction { ctx in
                    try Benched.select(in: ctx, RecordQuery.all.then(reverse ? Comparison<Int>.lessThanOrEqual(group) : .greaterThanOrEqual(group)),
                                       limit: 100, order: reverse ? .descending : .ascending)
                }
                guard !found.isEmpty else { throw ValidationError("a scan found nothing") }
            }
        }
        return rows
    }

    func table(_ rows: [Row]) -> String {
        var lines = ["| workload | " + rows.map(\.engine).uniqued().joined(separator: " | ") + " |"]
        lines.append("|---" + String(repeating: "|---:", count: rows.map(\.engine).uniqued().count) + "|")
        for (workload, summary) in Self.workloads {
            var line = "| \(workload) (\(summary)) |"
            for engine in rows.map(\.engine).uniqued() {
                guard let row = rows.first(where: { $0.engine == engine && $0.workload == workload }) else { line += " — |"; continue }
                let rate = row.recordsPerSecond == row.perSecond ? "\(Self.format(row.perSecond))/s" : "\(Self.format(row.recordsPerSecond)) rec/s"
                line += " \(rate), p50 \(String(format: "%.2f", row.p50Millis)) ms |"
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    static func format(_ value: Double) -> String { value >= 10_000 ? String(format: "%.0fK", value / 1_000) : String(format: "%.0f", value) }
}

/// The benchmark's record: a composite key (group, id) and a 100-byte field, written by hand
/// (the tool does not depend on the macro).
struct Benched: Record {
    var group: Int
    var id: Int
    var payload: [UInt8]

    static let recordType = RecordType(keyspace: "Benched", version: 1, key: [("group", Int.self), ("id", Int.self)])

    /// Record `i` of the benchmark.
    init(_ i: Int) {
        group = i / 1_000
        id = i % 1_000
        payload = Array(repeating: UInt8(truncatingIfNeeded: i), count: 100)
    }

    func writeKey(to key: inout KeyWriter) {
        key.append(group)
        key.append(id)
    }

    func writeFields(to fields: inout FieldWriter) { fields.write(payload) }

    init(key: inout KeyReader, fields: inout FieldReader) throws {
        group = try key.read()
        id = try key.read()
        payload = try fields.read()
    }
}

/// Latencies collected from several threads.
final class Latencies: Sendable {
    private let millis = Locked<[Double]>([])

    func add(_ duration: Duration) {
        let value = Double(duration / .microseconds(1)) / 1_000
        millis.withLock { $0.append(value) }
    }

    func percentile(_ p: Double) -> Double {
        let sorted = millis.withLock { $0.sorted() }
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }

    /// The first error a thread met.
    final class FirstError: Sendable {
        private let first = Locked<(any Error)?>(nil)
        func keep(_ error: any Error) { first.withLock { if $0 == nil { $0 = error } } }
        var error: (any Error)? { first.withLock { $0 } }
    }
}

extension Array where Element: Hashable {
    /// The elements in order, each once.
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
