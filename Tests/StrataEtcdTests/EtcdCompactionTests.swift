import Foundation
import StrataEtcd
import StrataEngine
import StrataEtcdCluster
import Testing

@Suite("etcd compaction")
struct EtcdCompactionTests {
    @Test("compact() gives the room of deleted keys and of their history back: the members' databases shrink, every pair kept")
    func shrinks() throws {
        // A cluster of its own: compaction is the cluster's, and other tests write to theirs meanwhile.
        let cluster = try LocalCluster(members: 1, tls: nil)
        let options = EtcdOptions(endpoints: cluster.endpoints)
        let engine = try EtcdEngine(prefix: Clusters.prefix("compaction"), etcd: options)
        let value = [UInt8](repeating: 0xAB, count: 20_000)
        // 2,000 keys of 20 KB written twice (40 MB of history), then three quarters deleted.
        for round in 0..<2 {
            for start in stride(from: 0, to: 2_000, by: 50) {
                try engine.write { tx in
                    for i in start..<(start + 50) { try tx.put(value + [UInt8(round)], forKey: Array("k\(i)".utf8)) }
                }
            }
        }
        for start in stride(from: 500, to: 2_000, by: 100) {
            try engine.write { tx in for i in start..<(start + 100) { try tx.delete(Array("k\(i)".utf8)) } }
        }
        let before = try engine.read { tx in try tx.pairs(.all) }
        let report = try engine.compact()
        #expect(report.ratio < 0.5, "\(report)")
        let space = try EtcdKeySpace(options)
        #expect(try space.databaseSize() == report.bytesAfter, "the report's size is the member's")
        let after = try engine.read { tx in try tx.pairs(.all) }
        #expect(after.map(\.key) == before.map(\.key) && after.map(\.value) == before.map(\.value))
        #expect(after.count == 500)
        try engine.close()
    }
}
