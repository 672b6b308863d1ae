import Foundation
internal import GRPCCore
internal import NIOCore
internal import NIOPosix
internal import NIOSSL
@_spi(StrataInternals) import StrataEngine

/// Why a TLS handshake with a member failed, read from the error gRPC reports (the connection's
/// error is the cause of the RPC's), and a readable description of such an error.
///
/// BoringSSL names the reason in its error (`CERTIFICATE_VERIFY_FAILED`, the alert a member
/// sent), but not why a certificate failed verification. For that one case a second handshake,
/// whose own verification keeps the member's certificate and refuses it (so nothing is ever
/// sent), tells an expired certificate from an untrusted one.
enum TLSDiagnosis {
    /// The TLS problem behind `error` and what tells it, or `nil` when it is not a TLS failure.
    static func problem(in error: any Error, endpoint: EtcdEndpoint, tls: EtcdTLS) -> (EtcdTLS.Problem, String)? {
        let text = describe(error)
        func has(_ names: String...) -> Bool { names.contains { text.contains($0) } }
        if has("failedToValidateHostname", "serverHostnameImpossibleToMatch") { return (.hostnameMismatch, text) }
        if has("CERTIFICATE_VERIFY_FAILED") {
            switch peerCertificate(endpoint, tls: tls) {
            case .success(let leaf):
                let now = time(nil)
                let validity = "the member's certificate is valid from \(date(leaf.notValidBefore)) to \(date(leaf.notValidAfter))"
                return (leaf.notValidAfter < now || leaf.notValidBefore > now ? .expiredCertificate : .untrustedCertificate, "\(validity): \(text)")
            case .failure(let reason):
                return (.untrustedCertificate, "\(text) (its certificate could not be fetched to tell why: \(reason))")
            }
        }
        // Alerts the member sent: it did not accept this client's certificate, or wanted one.
        if has("ALERT_CERTIFICATE_REQUIRED", "ALERT_BAD_CERTIFICATE", "ALERT_UNKNOWN_CA", "ALERT_CERTIFICATE_UNKNOWN",
               "ALERT_HANDSHAKE_FAILURE", "ALERT_ACCESS_DENIED") { return (.clientCertificateRefused, text) }
        // A handshake BoringSSL refused (the port speaks something else: WRONG_VERSION_NUMBER);
        // not a connection that ended mid-handshake (a member stopping), which is no TLS problem.
        for cause in chain(error) {
            if case NIOSSLError.handshakeFailed(.sslError) = cause { return (.handshakeFailed, text) }
        }
        return nil
    }

    /// `error` and its causes, one after the other (gRPC wraps the connection's error).
    static func describe(_ error: any Error) -> String {
        chain(error).map { error in
            switch error {
            case let error as RPCError: return "\(error.code): \(error.message)"
            case let error as RuntimeError: return error.message
            default: return String(describing: error)
            }
        }.joined(separator: ": ")
    }

    private static func chain(_ error: any Error) -> [any Error] {
        var errors: [any Error] = [error]
        while errors.count < 8, let cause = (errors.last as? RPCError)?.cause ?? (errors.last as? RuntimeError)?.cause {
            errors.append(cause)
        }
        return errors
    }

    /// The certificate `endpoint` presents, learned by a handshake whose verification keeps the
    /// certificate and refuses it (at most 5 seconds), or why it could not be. On an event loop
    /// of its own: the engine's may be busy with the process's other requests.
    private static func peerCertificate(_ endpoint: EtcdEndpoint, tls: EtcdTLS) -> Result<NIOSSLCertificate, DiagnosisFailure> {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let certificate = tls.certificateFile, let key = tls.keyFile,
           let chain = try? NIOSSLCertificate.fromPEMFile(certificate), let privateKey = try? NIOSSLPrivateKey(file: key, format: .pem) {
            configuration.certificateChain = chain.map { .certificate($0) }
            configuration.privateKey = .privateKey(privateKey)
        }
        let context: NIOSSLContext
        do { context = try NIOSSLContext(configuration: configuration) } catch { return .failure(DiagnosisFailure("\(error)")) }
        let seen = Seen()
        let bootstrap = ClientBootstrap(group: group).connectTimeout(.seconds(5)).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                let handler = try NIOSSLClientHandler(
                    context: context, serverHostname: tls.serverName ?? (endpoint.isIPAddress ? nil : endpoint.host),
                    customVerificationCallback: { certificates, promise in
                        seen.leaf.withLock { $0 = certificates.first }
                        promise.succeed(.failed)
                    })
                try channel.pipeline.syncOperations.addHandler(handler)
            }
        }
        // The address resolved here, on the caller's thread: NIO's resolver for `connect(host:)`
        // runs on Dispatch's global queues, which a busy process can hold past the timeout.
        let channel: any Channel
        do {
            let address = try SocketAddress.makeAddressResolvingHost(endpoint.host, port: endpoint.port)
            channel = try bootstrap.connect(to: address).wait()
        } catch {
            return .failure(DiagnosisFailure("\(error)"))
        }
        let giveUp = channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
        try? channel.closeFuture.wait()
        giveUp.cancel()
        guard let leaf = seen.leaf.withLock({ $0 }) else { return .failure(DiagnosisFailure("the member presented no certificate")) }
        return .success(leaf)
    }

    private struct DiagnosisFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// A certificate's time as an ISO 8601 date (UTC).
    private static func date(_ time: time_t) -> String {
        Date(timeIntervalSince1970: TimeInterval(time)).formatted(.iso8601)
    }

    /// The leaf certificate a diagnostic handshake saw.
    private final class Seen: Sendable {
        let leaf = Locked<NIOSSLCertificate?>(nil)
    }
}
