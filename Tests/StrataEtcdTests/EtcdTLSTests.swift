import Foundation
@_spi(Testing) import StrataEtcd
import StrataEngine
import StrataEtcdCluster
import Testing

/// TLS to etcd: the test clusters speak mutual TLS (every other etcd test runs over it); here,
/// what a client that must not trust a member, or a member that must not trust the client, gets.
@Suite("etcd TLS", .serialized)
struct EtcdTLSTests {
    /// A second authority, which signed nothing the clusters hold.
    static let stranger: CertificateAuthority = {
        let directory = NSTemporaryDirectory() + "strata-tls-stranger-\(UUID().uuidString)"
        let authority = try! CertificateAuthority(directory: directory, name: "stranger-ca")
        return authority
    }()

    /// Opens a store on `cluster` with `tls`; returns the error and how long it took.
    private func open(_ cluster: LocalCluster, _ tls: EtcdTLS?, timeout: Duration = .seconds(5)) -> (any Error)? {
        let options = EtcdOptions(endpoints: cluster.endpoints, tls: tls, leaseTTL: 5)
        do {
            let engine = try EtcdEngine(prefix: Clusters.prefix("tls"), options: EngineOptions(mode: .create, timeout: timeout), etcd: options)
            try engine.close()
            return nil
        } catch {
            return error
        }
    }

    private func problem(_ error: (any Error)?) -> EtcdTLS.Problem? {
        guard case EtcdError.tls(_, let problem, _)? = error as? EtcdError else { return nil }
        return problem
    }

    /// The keys under the tests' prefix `tests/tls/` (a refused open writes none).
    private func written(_ cluster: LocalCluster) throws -> Int {
        try EtcdKeySpace(Clusters.options(cluster)).keys(withPrefix: Array("tests/tls/".utf8)).count
    }

    @Test("an untrusted authority, no client certificate, one from another authority: each its typed error at once, nothing written")
    func refusals() throws {
        let cluster = Clusters.defaults
        let certificates = try #require(cluster.certificates)
        let good = Clusters.tls(cluster)!
        let before = try written(cluster)
        let strangerClient = try Self.stranger.issue("client", commonName: "client")
        let cases: [(String, EtcdTLS, EtcdTLS.Problem)] = [
            ("members signed by an authority the client does not trust",
             EtcdTLS(caFile: Self.stranger.certificateFile, certificateFile: certificates.clientCertificateFile, keyFile: certificates.clientKeyFile),
             .untrustedCertificate),
            ("no client certificate where the members require one", EtcdTLS(caFile: certificates.caFile), .clientCertificateRefused),
            ("a client certificate of another authority",
             EtcdTLS(caFile: certificates.caFile, certificateFile: strangerClient.certificate, keyFile: strangerClient.key),
             .clientCertificateRefused),
        ]
        for (name, tls, expected) in cases {
            let started = ContinuousClock.now
            let error = open(cluster, tls, timeout: .seconds(20))
            #expect(problem(error) == expected, "\(name): \(String(describing: error))")
            #expect(ContinuousClock.now - started < .seconds(10), "\(name): at once, not after the 20 s timeout")
        }
        #expect(try written(cluster) == before, "nothing written")
        // The control: the cluster's own settings open the store (the checks above can pass).
        #expect(open(cluster, good) == nil)
        #expect(try written(cluster) > before)
    }

    @Test("a member whose certificate expired: expiredCertificate, nothing written")
    func expired() throws {
        let cluster = try LocalCluster(members: 1, tls: LocalCluster.TLS(expiredServerCertificate: true))
        defer { cluster.stop() }
        let tls = try #require(Clusters.tls(cluster))
        let error = open(cluster, tls)
        #expect(problem(error) == .expiredCertificate, "\(String(describing: error))")
        #expect(String(describing: error!).contains("expired"), "the message says so: \(error!)")
        var trusting = tls
        trusting.serverName = nil
        let reader = try EtcdKeySpace(EtcdOptions(endpoints: cluster.endpoints, tls: trusting))
        #expect(throws: EtcdError.self, "the key space is refused too") { try reader.keys(withPrefix: Array("tests/".utf8)) }
    }

    @Test("a member whose certificate names another host: hostnameMismatch; with serverName that host it opens")
    func hostname() throws {
        let cluster = try LocalCluster(members: 1, tls: LocalCluster.TLS(serverNames: ["DNS:etcd.example.com"]))
        defer { cluster.stop() }
        var tls = try #require(Clusters.tls(cluster))
        let error = open(cluster, tls)
        #expect(problem(error) == .hostnameMismatch, "\(String(describing: error))")
        #expect(try EtcdKeySpace(EtcdOptions(endpoints: cluster.endpoints, tls: EtcdTLS(
            caFile: tls.caFile, certificateFile: tls.certificateFile, keyFile: tls.keyFile, serverName: "etcd.example.com"))).keys(withPrefix: Array("tests/".utf8)).isEmpty,
                "nothing written")
        tls.serverName = "etcd.example.com"
        #expect(open(cluster, tls) == nil, "the control: the name the certificate carries")
    }

    @Test("TLS over a cleartext member, cleartext over a TLS member: typed errors, never a silent cleartext")
    func mismatchedSchemes() throws {
        let plain = try LocalCluster(members: 1, tls: nil)
        defer { plain.stop() }
        let https = plain.endpoints.map { $0.replacingOccurrences(of: "http://", with: "https://") }
        let started = ContinuousClock.now
        let error: (any Error)?
        do {
            _ = try EtcdEngine(prefix: Clusters.prefix("tls"), options: EngineOptions(timeout: .seconds(20)), etcd: EtcdOptions(endpoints: https))
            error = nil
        } catch let caught {
            error = caught
        }
        #expect(problem(error) == .handshakeFailed, "\(String(describing: error))")
        #expect(ContinuousClock.now - started < .seconds(10))
        // Cleartext to a member that speaks TLS: no answer it could read, a typed error at the timeout.
        let http = Clusters.defaults.endpoints.map { $0.replacingOccurrences(of: "https://", with: "http://") }
        #expect {
            try EtcdEngine(prefix: Clusters.prefix("tls"), options: EngineOptions(timeout: .seconds(2)), etcd: EtcdOptions(endpoints: http))
        } throws: { error in
            guard case EtcdError.unavailable = error else { return false }
            return true
        }
    }

    @Test("settings that can never work, or would leak, are refused before connecting")
    func refusedSettings() throws {
        let missing = NSTemporaryDirectory() + "no-such-ca-\(UUID().uuidString).pem"
        let garbage = NSTemporaryDirectory() + "garbage-\(UUID().uuidString).pem"
        try "not a certificate".write(toFile: garbage, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: garbage) }
        let cases: [(EtcdOptions, String)] = [
            (EtcdOptions(endpoints: ["https://127.0.0.1:1", "http://127.0.0.1:2"]), "mix https:// and http://"),
            (EtcdOptions(endpoints: ["http://127.0.0.1:1"], tls: EtcdTLS()), "TLS settings given for http:// endpoints"),
            (EtcdOptions(endpoints: ["http://10.9.8.7:2379"], user: "root", password: "s3cret"), "the password would cross the network in clear"),
            (EtcdOptions(endpoints: ["https://127.0.0.1:1"], tls: EtcdTLS(caFile: missing)), "the CA file \(missing) cannot be read"),
            (EtcdOptions(endpoints: ["https://127.0.0.1:1"], tls: EtcdTLS(caFile: garbage)), "the CA file \(garbage) cannot be read"),
            (EtcdOptions(endpoints: ["https://127.0.0.1:1"], tls: EtcdTLS(certificateFile: Self.stranger.certificateFile)),
             "a client certificate needs its key file"),
        ]
        for (options, says) in cases {
            #expect {
                try EtcdEngine(prefix: "x", etcd: options)
            } throws: { error in
                guard case EngineError.invalidArgument(let message) = error else { return false }
                return message.contains(says)
            }
        }
        // A password to a cleartext member on loopback is allowed (tests, a local sidecar).
        #expect(throws: Never.self) { _ = try EtcdKeySpace(EtcdOptions(endpoints: ["http://127.0.0.1:1"], user: "root", password: "x")) }
    }
}
