import Foundation
import StrataEngine
@_spi(Testing) @testable import StrataEtcd
import StrataEtcdCluster
import Testing

/// Adds one to the number at `key` (0 when absent), in one transaction of `engine`.
private func increment(_ engine: EtcdEngine, _ key: [UInt8]) throws {
    try engine.write { tx in
        let current = try tx.get(key).map { Int(String(decoding: $0, as: UTF8.self))! } ?? 0
        try tx.put(Array(String(current + 1).utf8), forKey: key)
    }
}

/// The cluster's current revision.
private func revision(_ client: EtcdClient) throws -> Int64 {
    try client.call(RangeRequest(key: [0], countOnly: true), idempotent: true).header.revision
}

@Suite("etcd watch", .serialized)
struct EtcdWatchTests {
    @Test("a watch delivers every change once, in revision order, though the member carrying it is killed or frozen mid-stream (a frozen one is found by its silence to progress requests)",
          arguments: ["kill", "freeze"])
    func resumesAcrossAFailedMember(failure: String) throws {
        let cluster = try LocalCluster(members: 3)
        defer { cluster.stop() }
        let options = Clusters.options(cluster)
        let prefix = Clusters.prefix("watch-kill")
        let engine = try EtcdEngine(prefix: prefix, options: EngineOptions(timeout: .seconds(30)), etcd: options)
        defer { try? engine.close() }
        let client = try EtcdClient(options, timeout: .seconds(30))
        defer { client.close() }
        let key = Array("c".utf8)
        let etcdKey = key.withUnsafeBytes { EtcdLayout(prefix: prefix).data($0) }
        // The first stream opens on the first endpoint: the member killed below.
        let watch = EtcdWatch(client: client, key: etcdKey, from: try revision(client) + 1)
        defer { watch.cancel() }
        var seen: [Int] = []
        func read(until count: Int) throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while seen.count < count && ContinuousClock.now < deadline {
                seen += try watch.next(until: deadline).map { Int(String(decoding: $0.value, as: UTF8.self))! }
            }
        }
        let total = 60
        for _ in 1...20 { try increment(engine, key) }
        try read(until: 20)
        // Idle past the silence limit: a live member answers the progress requests.
        #expect(try watch.next(until: .now + EtcdWatch.silenceLimit + .seconds(5)).isEmpty)
        #expect(watch.lastProblem == nil, "one stream carried the first 20 changes and stayed open while idle: \(watch.lastProblem ?? "")")
        if failure == "kill" {
            cluster.kill(0)
        } else {
            let pid = try #require(cluster.pid(0))
            kill(pid, SIGSTOP)
        }
        defer { if failure == "freeze", let pid = cluster.pid(0) { kill(pid, SIGCONT) } }
        for _ in 21...total { try increment(engine, key) }
        try read(until: total)
        #expect(seen == Array(1...total), "each change once, in order: \(seen)")
        #expect(watch.lastProblem != nil, "the failed member's stream ended and the watch went on on another")
    }

    @Test("a watch from a revision compacted away fails with historyCompacted, naming both revisions")
    func compactedHistory() throws {
        // A cluster of its own: a compaction is cluster-wide, and other tests read old revisions.
        let cluster = try LocalCluster(members: 1)
        defer { cluster.stop() }
        let options = Clusters.options(cluster)
        let prefix = Clusters.prefix("watch-compacted")
        let engine = try EtcdEngine(prefix: prefix, etcd: options)
        defer { try? engine.close() }
        let client = try EtcdClient(options, timeout: .seconds(30))
        defer { client.close() }
        let key = Array("c".utf8)
        try increment(engine, key)
        let from = try revision(client)
        for _ in 0..<5 { try increment(engine, key) }
        let compactedTo = try revision(client)
        try client.compact(toRevision: compactedTo, physical: true)
        let watch = EtcdWatch(client: client, key: key.withUnsafeBytes { EtcdLayout(prefix: prefix).data($0) }, from: from)
        defer { watch.cancel() }
        #expect(throws: EtcdError.historyCompacted(from: from, compactedTo: compactedTo)) {
            _ = try watch.next(until: .now + .seconds(30))
        }
        // From the oldest revision kept, the watch works.
        let kept = EtcdWatch(client: client, key: key.withUnsafeBytes { EtcdLayout(prefix: prefix).data($0) }, from: compactedTo)
        defer { kept.cancel() }
        #expect(try kept.next(until: .now + .seconds(30)).map(\.revision) == [compactedTo])
    }

    @Test("another process's commit wakes the engine's commit signal at once; the engine's own commits do not")
    func commitSignal() throws {
        let options = Clusters.options(Clusters.defaults)
        let prefix = Clusters.prefix("watch-signal")
        let engine = try EtcdEngine(prefix: prefix, options: EngineOptions(timeout: .seconds(30)), etcd: options)
        defer { try? engine.close() }
        let signal = try #require(engine.makeCommitSignal())
        defer { signal.close() }
        // The signal's watch opens at its first wait: this one, which nothing wakes.
        signal.wait(upTo: .milliseconds(500))

        // Its own commits: the wait lasts its whole timeout.
        try increment(engine, Array("own".utf8))
        let own = ContinuousClock.now
        signal.wait(upTo: .seconds(2))
        #expect(ContinuousClock.now - own >= .seconds(2), "the engine's own commit did not wake it")

        // Another process's commits (strata-etcd load, through an engine of its own): the wait
        // ends long before its timeout, once per look.
        let load = try LoadProcess(options, prefix: prefix, name: "other", tasks: 1, transactions: 3)
        defer { _ = load.finish(within: 240) }
        let other = ContinuousClock.now
        signal.wait(upTo: .seconds(120))
        #expect(ContinuousClock.now - other < .seconds(100), "another process's commit woke it")
        #expect(load.finish(within: 240) == 0, "\(load.lines.suffix(5))")
    }
}
