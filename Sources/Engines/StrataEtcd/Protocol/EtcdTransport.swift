import StrataEngine

/// Carries requests of etcd's API (``EtcdRequest``) to one member and brings back its answer:
/// the seam between the engine's typed etcd protocol and the wire. ``EtcdClient`` keeps the
/// policy over it (failover across endpoints, deadlines, authentication, ambiguous commits).
protocol EtcdTransport: Sendable {
    /// Sends `request` to `endpoint` (with the authentication `token`, when given) and waits for
    /// the answer until `deadline`.
    func send<R: EtcdRequest>(_ request: R, to endpoint: EtcdEndpoint, token: String?,
                              deadline: ContinuousClock.Instant) throws(EtcdCallError) -> R.Response
    /// Opens a watch (``WatchRequest``) on `endpoint` (with the authentication `token`, when
    /// given). `receive` is handed each message of the stream, in order, on the transport's
    /// threads (it must not block them), then once the failure that ended it: a member ends a
    /// watch only by failing (a stream that closes is a failure too; a cancel is a message).
    /// Fails at once only when the stream cannot be started (closed transport).
    func watch(_ request: WatchRequest, on endpoint: EtcdEndpoint, token: String?,
               receive: @escaping @Sendable (Result<WatchResponse, EtcdCallError>) -> Void) throws(EtcdCallError) -> any EtcdStream

    /// Drops every connection and cancels every stream.
    func close()
}

/// A stream a transport opened (a watch): cancelling it ends it. A message or the failure
/// already on its way may still reach `receive` after the cancel; the receiver ignores them.
protocol EtcdStream: Sendable {
    func cancel()
}

/// Why one request to one member failed.
enum EtcdCallError: Error, CustomStringConvertible {
    /// Nothing of the request can have reached the member: it is safe to send it elsewhere.
    case notSent(String)
    /// The request may have reached the member, and may have applied.
    case mayHaveApplied(String)
    /// The member answered with an error.
    case server(EtcdServerError)
    /// The TLS handshake with the member failed, for this reason: nothing was sent.
    case tls(EtcdTLS.Problem, String)

    var description: String {
        switch self {
        case let .notSent(text), let .mayHaveApplied(text): return text
        case let .server(error): return error.description
        case let .tls(problem, detail): return "\(problem) (\(detail))"
        }
    }
}

/// An error etcd answered with: its gRPC status code and message, and what the engine makes of
/// them (``Kind``).
struct EtcdServerError: Error, CustomStringConvertible {
    let code: Int
    let message: String
    let kind: Kind

    /// The errors the engine handles. etcd tells most of them apart by their message only (its
    /// own Go client matches the same texts, `rpctypes`): this is the one place that reads them.
    enum Kind: Sendable, Hashable {
        /// Refused before it could apply, or outcome unknown inside the cluster (leader lost, timed
        /// out): gRPC `Unavailable` and `DeadlineExceeded`, and a proposal Raft dropped (code 2,
        /// `Unknown`, during leader changes; never applied).
        case unavailable
        /// The revision asked for was compacted away.
        case compacted
        /// The revision asked for is newer than the member's.
        case futureRevision
        /// The cluster is out of space (its `NOSPACE` alarm is on).
        case noSpace
        case leaseNotFound
        /// The authentication token expired or the member does not know it.
        case invalidToken
        /// No credentials where the cluster wants some, or a user without the role for the keys.
        case permissionDenied
        /// Too many operations or bytes in one request.
        case tooLarge
        case other
    }

    init(code: Int, message: String) {
        self.code = code
        self.message = message
        kind = Self.kind(code: code, message: message)
    }

    private static func kind(code: Int, message: String) -> Kind {
        if code == 14 || code == 4 || ["leader changed", "no leader", "request timed out", "too many requests", "deadline exceeded",
                                         "raft proposal dropped"].contains(where: message.contains) { return .unavailable }
        if message.contains("required revision has been compacted") { return .compacted }
        if message.contains("required revision is a future revision") { return .futureRevision }
        if message.contains("database space exceeded") { return .noSpace }
        if message.contains("requested lease not found") { return .leaseNotFound }
        if message.contains("invalid auth token") { return .invalidToken }
        if message.contains("user name is empty") || message.contains("permission denied") { return .permissionDenied }
        if ["too many operations", "request is too large", "message larger than max"].contains(where: message.contains) { return .tooLarge }
        return .other
    }

    /// Whether a request that met this error may still have applied: gRPC `Unknown`,
    /// `DeadlineExceeded`, `Unimplemented`, `Internal`, `Unavailable`, `DataLoss` (also what the
    /// transport reports when the connection broke after the request was written); the other
    /// statuses are definite refusals.
    var mayHaveApplied: Bool { [2, 4, 12, 13, 14, 15].contains(code) }

    var description: String { "etcd error \(code): \(message)" }
}

extension EtcdServerError {
    /// The one place etcd's refusal becomes one of Strata's public errors: no space `diskFull`,
    /// too many operations or bytes `transactionTooLarge`, no permission `permissionDenied` (each
    /// naming `location`), a compacted revision `snapshotCompacted` when the caller names the
    /// revision it read at; the kinds in `keeping` stay as they are (their callers handle them);
    /// any other `engineFailure`, with etcd's code and message and `what` was being done.
    func publicError(at location: String, what: String, keeping: Set<Kind> = [], compactedRevision: Int64? = nil) -> any Error {
        if keeping.contains(kind) { return self }
        switch kind {
        case .noSpace: return EngineError.diskFull(path: location)
        case .tooLarge: return EngineError.transactionTooLarge(what: "operations or bytes for the cluster (\(message))", limit: 0)
        case .permissionDenied: return EngineError.permissionDenied(path: location, detail: message)
        case .compacted where compactedRevision != nil: return EtcdError.snapshotCompacted(revision: compactedRevision!)
        default: return EngineError.engineFailure(engine: "etcd", code: code, message: message, operation: what)
        }
    }
}
