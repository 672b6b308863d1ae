import Foundation
@_spi(StrataInternals) import StrataEngine
import StrataEtcdCluster
@_spi(Testing) @testable import StrataEtcd
import Testing

@Suite("etcd connections", .serialized)
struct EtcdConnectionTests {
    /// etcd's gRPC server pings with about every request it serves over cleartext (gRPC-Go's
    /// bandwidth estimate; over TLS etcd serves gRPC through Go's HTTP/2 server, which does not),
    /// and swift-nio-http2 closes a connection whose peer sent over 200 control frames in 30 s.
    /// Without a new client every `callsPerConnection` calls, the connection was closed under the
    /// client: calls failed in transit, or the client connected again by itself between calls
    /// (broken variant run: `callsPerConnection = .max` fails this test on cleartext). A replaced
    /// connection closed at once rather than after its last call was not caught here (two runs).
    @Test("1,000 calls from 4 threads on one engine: none fails in transit, no connection is closed under its client",
          arguments: [false, true])
    func busyConnectionIsReplacedBeforeItIsClosed(tls: Bool) throws {
        let cluster = try LocalCluster(members: 1, tls: tls ? LocalCluster.TLS() : nil)
        defer { cluster.stop() }
        let transport = Locked<GRPCTransport?>(nil)
        let engine = try EtcdEngine(prefix: Clusters.prefix("busy"), options: EngineOptions(mode: .create),
                                    etcd: Clusters.options(cluster)) { wrapped in
            transport.withLock { $0 = wrapped as? GRPCTransport }
            return wrapped
        }
        defer { try? engine.close() }
        let grpc = try #require(transport.withLock { $0 })
        try engine.write { tx in try tx.put([1], forKey: [7]) }
        // Each read transaction is two calls (its snapshot revision, then the key); from 4
        // threads, so that calls are in flight on a connection as it is replaced.
        let wrong = Guarded(wrappedValue: 0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<125 where (try? engine.read { tx in try tx.get([7]) }) != [1] { wrong.update { $0 += 1 } }
        }
        #expect(wrong.wrappedValue == 0)
        #expect(grpc.failedInTransit.wrappedValue == 0)
        #expect(grpc.connectionsMade.wrappedValue >= 1_000 / GRPCTransport.callsPerConnection)
        // Each client made one connection: none was closed under it.
        #expect(grpc.tcpConnections.wrappedValue == grpc.connectionsMade.wrappedValue)
    }
}
