import Foundation
@_spi(Testing) import StrataEtcd
@_spi(StrataInternals) import StrataEngine
import StrataEtcdCluster
import Testing

/// Compaction ends snapshots: these tests run on a cluster of their own, so that no other test's
/// snapshot is compacted under it.
@Suite("etcd history", .serialized)
struct EtcdHistoryTests {
    static let cluster: LocalCluster = try! LocalCluster(members: 1)

    static func options(_ compaction: EtcdCompaction) -> EtcdOptions {
        EtcdOptions(endpoints: cluster.endpoints, tls: Clusters.tls(cluster), leaseTTL: 5, compaction: compaction)
    }

    /// Opens a read transaction, commits `commits` writes from another thread meanwhile, then
    /// reads key 1 again in the first snapshot.
    private func readAfterCommits(_ engine: EtcdEngine, commits: Int) throws -> Result<[UInt8]?, Error> {
        try engine.write { tx in try tx.put([1], forKey: [1]) }
        return try engine.read { tx in
            _ = try tx.get([1])
            let failure = Locked<Error?>(nil)
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                do {
                    for i in 0..<commits { try engine.write { tx in try tx.put([UInt8(truncatingIfNeeded: i)], forKey: [2]) } }
                } catch {
                    failure.value = error
                }
                done.signal()
            }
            done.wait()
            if let error = failure.value { throw error }
            return Result { try tx.get([1]) }
        }
    }

    @Test("a snapshot whose revision is compacted while it is read throws snapshotCompacted")
    func compactedSnapshot() throws {
        let options = Self.options(.none)
        let engine = try EtcdEngine(prefix: Clusters.prefix("compaction"), etcd: options)
        defer { try? engine.close() }
        try engine.write { tx in try tx.put([1], forKey: [1]) }
        let keys = try EtcdKeySpace(options)
        let thrown = #expect(throws: EtcdError.self) {
            try engine.read { tx in
                _ = try tx.get([1])
                try keys.put([0], forKey: Array("tests/compaction-bump".utf8))
                try keys.compact(toRevision: try keys.revision())
                _ = try tx.get([1])
            }
        }
        guard case .snapshotCompacted = thrown else { Issue.record("got \(String(describing: thrown))"); return }
    }

    @Test("keepRevisions(20): after 40 commits the engine has compacted the history; an older snapshot throws snapshotCompacted, the data is whole")
    func keepRevisions() throws {
        let engine = try EtcdEngine(prefix: Clusters.prefix("keep"), etcd: Self.options(.keepRevisions(20)))
        defer { try? engine.close() }
        let outcome = try readAfterCommits(engine, commits: 40)
        guard case .failure(EtcdError.snapshotCompacted) = outcome else { Issue.record("got \(outcome)"); return }
        #expect(try engine.read { tx in try tx.get([2]) } == [39])
        #expect(try engine.read { tx in try tx.get([1]) } == [1])
        // The cluster's history before the last 20 + 5 (a quarter of 20) revisions is gone.
        let keys = try EtcdKeySpace(Self.options(.none))
        let now = try keys.revision()
        #expect(throws: EtcdError.self) { try keys.get([1], atRevision: now - 26) }
        _ = try keys.get([1], atRevision: now - 10)  // the last 20 are kept
    }

    @Test("broken variant: with compaction .none the old snapshot is still readable (the check above can fail)")
    func noCompaction() throws {
        let engine = try EtcdEngine(prefix: Clusters.prefix("none"), etcd: Self.options(.none))
        defer { try? engine.close() }
        let outcome = try readAfterCommits(engine, commits: 40)
        guard case .success([1]) = outcome else { Issue.record("got \(outcome)"); return }
    }
}

/// A value shared with another thread.
private final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
