/// How the engine verifies an etcd cluster's members, and proves who it is, over TLS
/// (`https://` endpoints).
///
/// The members' certificates are verified against ``caFile`` (or the system's trust store) and
/// must name the host of the endpoint (or ``serverName``), and be within their validity period.
/// A cluster started with `--client-cert-auth` also requires this client's certificate
/// (``certificateFile`` and ``keyFile``: mutual TLS). A failure is
/// ``EtcdError/tls(endpoint:problem:detail:)``, before anything is sent; nothing ever falls back
/// to cleartext.
///
/// ```swift
/// let options = EtcdOptions(
///     endpoints: ["https://10.0.0.1:2379", "https://10.0.0.2:2379", "https://10.0.0.3:2379"],
///     tls: EtcdTLS(caFile: "/etc/strata/etcd-ca.pem",
///                  certificateFile: "/etc/strata/client.pem", keyFile: "/etc/strata/client-key.pem"))
/// ```
public struct EtcdTLS: Sendable, Hashable {
    /// A PEM file of the certificate authorities that sign the members' certificates (etcd's
    /// `--trusted-ca-file` on the client side); `nil`: the system's trust store.
    public var caFile: String?
    /// A PEM file of this client's certificate (and its chain), for clusters that require one.
    public var certificateFile: String?
    /// The PEM file of the private key of ``certificateFile``.
    public var keyFile: String?
    /// The name the members' certificates must carry, when it is not the endpoints' host (an
    /// endpoint by IP address whose certificate names a host): also sent as the TLS server name.
    /// A certificate that names the endpoint's IP address is accepted too.
    public var serverName: String?

    /// TLS settings; with no arguments, members are verified against the system's trust store
    /// and no client certificate is offered.
    public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil, serverName: String? = nil) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.serverName = serverName
    }
}

extension EtcdTLS {
    /// Why a TLS connection to a member failed (``EtcdError/tls(endpoint:problem:detail:)``).
    public enum Problem: Sendable, Hashable, CustomStringConvertible {
        /// The member's certificate is not signed by an authority of ``EtcdTLS/caFile`` (or the
        /// system's trust store).
        case untrustedCertificate
        /// The member's certificate does not name the endpoint's host (or ``EtcdTLS/serverName``).
        case hostnameMismatch
        /// The member's certificate has expired (or is not valid yet).
        case expiredCertificate
        /// The member refused this client's certificate, or its lack of one (a cluster started
        /// with `--client-cert-auth` and no or an unknown client certificate).
        case clientCertificateRefused
        /// The member does not speak TLS on that port, or the handshake failed otherwise.
        case handshakeFailed

        public var description: String {
            switch self {
            case .untrustedCertificate: return "the member's certificate is not signed by a trusted authority"
            case .hostnameMismatch: return "the member's certificate does not name its host"
            case .expiredCertificate: return "the member's certificate has expired or is not valid yet"
            case .clientCertificateRefused: return "the member refused this client's certificate (or its lack of one)"
            case .handshakeFailed: return "the TLS handshake failed"
            }
        }
    }
}
