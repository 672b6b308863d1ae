import Foundation
import StrataEngine
import StrataEtcd
import StrataEtcdCluster
import Testing

/// `strata-etcd`, built beside the test bundle.
let etcdTool: String = {
    let bundle = (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
    return bundle.deletingLastPathComponent().appendingPathComponent("strata-etcd").path
}()

/// The fault tests' loads: reduced in `make test`, full in `make test-long` (STRATA_TEST_LONG=1).
enum TestScale {
    static let long = ProcessInfo.processInfo.environment["STRATA_TEST_LONG"] == "1"

    /// `short` in `make test`, `full` in `make test-long`.
    static func count(_ short: Int, full: Int) -> Int { long ? full : short }
}

/// A `strata-etcd load` process: its output lines, collected as they come.
final class LoadProcess: @unchecked Sendable {
    let process = Process()
    private let pipe = Pipe()
    private let lock = NSLock()
    private var text = ""

    init(_ options: EtcdOptions, prefix: String, name: String, tasks: Int, transactions: Int) throws {
        process.executableURL = URL(fileURLWithPath: etcdTool)
        process.arguments = [
            "load", "--prefix", prefix, "--name", name,
            "--tasks", String(tasks), "--transactions", String(transactions),
            "--max-txn-ops", String(options.maxTransactionOperations), "--max-request-bytes", String(options.maxRequestBytes),
        ] + Clusters.toolArguments(options)
        process.standardOutput = pipe
        process.standardError = pipe
        // A thread of its own reads the output: a readability handler runs on a global dispatch
        // queue, whose threads a loaded test run can hold for minutes, and then every line arrived
        // at once, after the load had ended.
        let handle = pipe.fileHandleForReading
        Thread { [weak self] in
            while true {
                let data = handle.availableData
                guard !data.isEmpty, let self else { return }
                self.lock.withLock { self.text += String(decoding: data, as: UTF8.self) }
            }
        }.start()
        try process.run()
    }

    var lines: [String] { lock.withLock { text.split(separator: "\n").map(String.init) } }
    var acknowledged: [String] { lines.filter { $0.hasPrefix("ack ") }.map { String($0.dropFirst(4)) } }

    /// Waits for the process to end (at most `seconds`), then returns its exit status.
    func finish(within seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { process.terminate(); process.waitUntilExit(); return nil }
        usleep(100_000)  // the last output
        return process.terminationStatus
    }
}

/// Holds a store to the load's invariant: the counter equals the number of transaction keys
/// (none partly applied, none applied twice) and every acknowledged transaction's key is there.
private func checkLoad(_ engine: any KeyValueEngine, acknowledged: [String], expectedTotal: Int?) throws {
    let (counter, keys) = try engine.read { tx in
        (try tx.get(Array("c".utf8)).map { Int(String(decoding: $0, as: UTF8.self))! } ?? 0,
         Set(try tx.keys(.prefix(Array("t/".utf8))).map { String(decoding: $0.dropFirst(2), as: UTF8.self) }))
    }
    #expect(counter == keys.count, "counter \(counter), transaction keys \(keys.count)")
    let missing = acknowledged.filter { !keys.contains($0) }
    #expect(missing.isEmpty, "acknowledged but missing: \(missing.prefix(5))")
    if let expectedTotal { #expect(counter == expectedTotal) }
}

@Suite("etcd faults", .serialized)
struct EtcdFaultTests {
    @Test("two processes × 8 tasks × M read-modify-write increments end at exactly 16×M")
    func twoProcessCounter() throws {
        let options = Clusters.options(Clusters.three)
        let prefix = Clusters.prefix("counter")
        let engine = try EtcdEngine(prefix: prefix, etcd: options)
        defer { try? engine.close() }
        let m = TestScale.count(6, full: 40)
        let loads = try ["a", "b"].map { try LoadProcess(options, prefix: prefix, name: $0, tasks: 8, transactions: m) }
        for load in loads { #expect(load.finish(within: TestScale.long ? 1_200 : 240) == 0, "\(load.lines.suffix(5))") }
        try checkLoad(engine, acknowledged: loads.flatMap(\.acknowledged), expectedTotal: 16 * m)
    }

    /// Runs a two-process load on a cluster of its own and kills a member with SIGKILL once the
    /// load is under way: `pick` chooses which from the cluster and the index of the leader.
    private func killDuringLoad(_ pick: (LocalCluster, Int) -> Int) throws {
        let cluster = try LocalCluster(members: 3)
        defer { cluster.stop() }
        let options = Clusters.options(cluster, leaseTTL: 3)
        let prefix = Clusters.prefix("kill")
        let engine = try EtcdEngine(prefix: prefix, options: EngineOptions(timeout: .seconds(30)), etcd: options)
        defer { try? engine.close() }
        let perTask = TestScale.count(15, full: 100)
        let total = 2 * 4 * perTask
        // The victim is chosen before the load: asking the members who leads takes requests, and
        // under a loaded machine the load once finished while they were answered.
        let victim = pick(cluster, try leader(of: cluster))
        let loads = try ["a", "b"].map { try LoadProcess(options, prefix: prefix, name: $0, tasks: 4, transactions: perTask) }
        // Once some transactions are acknowledged, kill the member.
        let started = Date()
        while loads.map(\.acknowledged.count).reduce(0, +) < 10 && Date().timeIntervalSince(started) < 60 { usleep(20_000) }
        let beforeKill = loads.map(\.acknowledged.count).reduce(0, +)
        cluster.kill(victim)
        #expect(beforeKill < total, "the kill came while the load ran")
        for load in loads { #expect(load.finish(within: TestScale.long ? 1_200 : 240) == 0, "\(load.lines.suffix(5))") }
        let acknowledged = loads.flatMap(\.acknowledged)
        #expect(acknowledged.count == total, "writes resumed after the kill (\(beforeKill) before it)")
        try checkLoad(engine, acknowledged: acknowledged, expectedTotal: total)
        // The member comes back and catches up: a read served by it alone sees the last commit.
        try cluster.restart(victim)
        let alone = try EtcdEngine(prefix: prefix, options: EngineOptions(mode: .openExisting), etcd: EtcdOptions(endpoints: [cluster.members[victim].clientURL], tls: Clusters.tls(cluster)))
        defer { try? alone.close() }
        try checkLoad(alone, acknowledged: acknowledged, expectedTotal: total)
    }

    @Test("kill -9 of the leader during a two-process load: every acknowledged transaction once, none partial, writes resume, the member catches up")
    func killLeader() throws {
        try killDuringLoad { _, leader in leader }
    }

    @Test("kill -9 of the member the clients talk to (the first endpoint) during a two-process load: the same")
    func killClientsMember() throws {
        try killDuringLoad { _, _ in 0 }
    }

    @Test("a writer killed while it holds the lock holds the others up for at most its lease TTL")
    func crashedWriterBound() throws {
        let ttl = 3
        let options = Clusters.options(Clusters.three, leaseTTL: ttl)
        let prefix = Clusters.prefix("crashed-writer")
        let engine = try EtcdEngine(prefix: prefix, etcd: options)
        defer { try? engine.close() }
        // The conformance peer holds a write transaction open on `begin`.
        let peer = Process()
        peer.executableURL = URL(fileURLWithPath: etcdTool)
        peer.arguments = [
            "conformance-peer",
            "--max-txn-ops", String(options.maxTransactionOperations), "--max-request-bytes", String(options.maxRequestBytes),
            "--lease-ttl", String(ttl),
        ] + Clusters.toolArguments(options) + [prefix]
        let input = Pipe(), output = Pipe()
        peer.standardInput = input
        peer.standardOutput = output
        try peer.run()
        func readLine() -> String {
            var line = [UInt8]()
            while let byte = try? output.fileHandleForReading.read(upToCount: 1), let b = byte.first, b != 10 { line.append(b) }
            return String(decoding: line, as: UTF8.self)
        }
        #expect(readLine() == "ready")
        input.fileHandleForWriting.write(Data("begin\n".utf8))
        #expect(readLine() == "began")
        kill(peer.processIdentifier, SIGKILL)
        peer.waitUntilExit()
        let killed = ContinuousClock.now
        try engine.write { tx in try tx.put([1], forKey: [1]) }
        let waited = ContinuousClock.now - killed
        #expect(waited >= .seconds(1), "the lock was held (waited \(waited))")
        #expect(waited <= .seconds(ttl + 2), "waited \(waited) for a lease of \(ttl) s")
    }
}

/// The index of the cluster's leader.
func leader(of cluster: LocalCluster) throws -> Int {
    for (i, member) in cluster.members.enumerated() where cluster.pid(i) != nil {
        let status = try EtcdKeySpace(EtcdOptions(endpoints: [member.clientURL], tls: Clusters.tls(cluster))).status()
        if status.leader == status.member { return i }
    }
    throw EngineError.invalidArgument("the cluster has no leader")
}
