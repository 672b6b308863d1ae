import Foundation
@_spi(StrataInternals) import StrataEngine

/// Errors particular to the etcd engine. The rest surface as `EngineError`s (limits as
/// `transactionTooLarge`, a full cluster as `diskFull`, a lost writer lock as `mustRetry`,
/// other server errors as `engineFailure` with etcd's gRPC code and message).
public enum EtcdError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No endpoint answered before the request timeout. (A commit never ends with this error: an
    /// unanswered commit is resolved, or ``commitOutcomeUnknown(detail:)``.)
    case unavailable(endpoints: [String], detail: String)
    /// A commit was sent but its outcome could not be learned before the request timeout (the
    /// cluster lost its leader, the connection broke). It may or may not have happened: read the
    /// data before running it again.
    case commitOutcomeUnknown(detail: String)
    /// A read transaction's snapshot revision was compacted away while it ran: run it again.
    case snapshotCompacted(revision: Int64)
    /// The user name or password was refused.
    case authenticationFailed(user: String, detail: String)
    /// A watch needs the changes from revision `from` on, but the cluster compacted its history
    /// up to revision `compactedTo`: the changes in between can no longer be told.
    case historyCompacted(from: Int64, compactedTo: Int64)
    /// No member could be reached over TLS: the handshake with each failed (`problem` says why
    /// for the last one tried). Nothing was sent. See ``EtcdTLS``.
    case tls(endpoint: String, problem: EtcdTLS.Problem, detail: String)
    /// A member answered what etcd never answers (`detail` says what: a key outside the range
    /// asked for, keys out of order, more keys than the limit, a missing operation's answer): it
    /// is damaged or is not etcd. Nothing of the answer was used.
    case unexpectedAnswer(endpoint: String, detail: String)

    public var description: String {
        switch self {
        case let .unavailable(endpoints, detail):
            return "etcd unavailable: no answer from \(endpoints.joined(separator: ", ")) before the timeout (\(detail))"
        case let .commitOutcomeUnknown(detail):
            return "etcd commit outcome unknown: \(detail); read the data before retrying"
        case let .snapshotCompacted(revision):
            return "etcd snapshot at revision \(revision) was compacted while the transaction ran; run it again"
        case let .authenticationFailed(user, detail):
            return "etcd authentication failed for user \(user): \(detail)"
        case let .historyCompacted(from, compactedTo):
            return "etcd watch from revision \(from): the cluster's history was compacted up to revision \(compactedTo), so the changes in between are lost"
        case let .tls(endpoint, problem, detail):
            return "etcd TLS failed with \(endpoint): \(problem) (\(detail))"
        case let .unexpectedAnswer(endpoint, detail):
            return "etcd member \(endpoint) answered what etcd never answers: \(detail); nothing of it was used"
        }
    }
}

/// Talks to a cluster through a transport (``EtcdTransport``: gRPC to the members' client ports):
/// failover across the endpoints, a deadline on every call, and authentication.
final class EtcdClient: Sendable {
    let endpoints: [EtcdEndpoint]
    let timeout: Duration
    private let credentials: (user: String, password: String)?
    private let transport: any EtcdTransport
    /// The endpoint requests go to first (moves on when it fails) and the authentication token.
    private let state = Locked<(preferred: Int, token: String?)>((0, nil))

    init(endpoints: [EtcdEndpoint], timeout: Duration, credentials: (user: String, password: String)?, transport: any EtcdTransport) {
        self.endpoints = endpoints
        self.timeout = timeout
        self.credentials = credentials
        self.transport = transport
    }

    /// A client of the cluster `options` names: endpoints parsed, TLS set up for `https://` ones
    /// (certificate and key files read now), credentials when a user is given. Throws
    /// `EngineError.invalidArgument` for what can never work or would leak: no endpoint,
    /// `https://` and `http://` mixed, TLS settings for `http://` endpoints, a password for a
    /// cleartext member on another host, unreadable certificate or key files.
    /// `wrapping` wraps the transport (the tests' `FaultyTransport`; the product passes none).
    convenience init(_ options: EtcdOptions, timeout: Duration,
                     wrapping wrap: (any EtcdTransport) -> any EtcdTransport = { $0 }) throws(EngineError) {
        guard !options.endpoints.isEmpty else { throw .invalidArgument("no etcd endpoints given") }
        let endpoints = try options.endpoints.map { url throws(EngineError) in try EtcdEndpoint(url) }
        let secure = endpoints[0].secure
        guard endpoints.allSatisfy({ $0.secure == secure }) else {
            throw .invalidArgument("etcd endpoints mix https:// and http:// (\(options.endpoints.joined(separator: ", "))): give one kind")
        }
        if !secure {
            if options.tls != nil {
                throw .invalidArgument("etcd TLS settings given for http:// endpoints: use https:// endpoints (never cleartext when TLS is asked for)")
            }
            if options.user != nil, let remote = endpoints.first(where: { !$0.isLoopback }) {
                throw .invalidArgument("etcd user \(options.user!) with the cleartext endpoint \(remote): the password would cross the network in clear; use https:// endpoints")
            }
            Self.noteCleartext(endpoints)
        }
        let transport = try GRPCTransport(tls: secure ? options.tls ?? EtcdTLS() : nil)
        self.init(endpoints: endpoints, timeout: timeout, credentials: options.user.map { (user: $0, password: options.password ?? "") },
                  transport: wrap(transport))
    }

    /// Says once per process and set of endpoints, on standard error, that they are cleartext.
    private static func noteCleartext(_ endpoints: [EtcdEndpoint]) {
        let names = endpoints.map(\.description).joined(separator: ", ")
        guard noted.withLock({ $0.insert(names).inserted }) else { return }
        let where_ = endpoints.allSatisfy(\.isLoopback) ? "loopback" : "network"
        FileHandle.standardError.write(Data("strata: etcd over cleartext (\(where_)) to \(names): records and keys are readable on the way; use https:// endpoints (EtcdTLS) across machines\n".utf8))
    }

    private static let noted = Locked<Set<String>>([])

    func close() {
        transport.close()
    }

    /// Sends `request` and returns the answer.
    ///
    /// A request that is `idempotent` is sent again (to the next endpoint) after any failure,
    /// until the deadline. One that is not is sent again only when it cannot have reached a
    /// server; otherwise ``Ambiguous`` is thrown and the caller resolves the outcome. A server's
    /// refusal is thrown as ``EtcdServerError``. An answer that breaks what etcd promises
    /// (``EtcdRequest/problem(with:)``) sends an idempotent request to the next endpoint, and
    /// is ``EtcdError/unexpectedAnswer(endpoint:detail:)`` once every endpoint gave one; for a
    /// request that is not idempotent it is ``Ambiguous`` (it may have applied).
    ///
    /// With several endpoints, one attempt lasts at most ``attemptLimit`` (unless `wholeDeadline`,
    /// for requests that may rightly take long, such as a physical compaction): a member that is
    /// frozen or cut off, whose kernel still completes connections, would otherwise hold the whole
    /// deadline before the next endpoint is tried.
    func call<R: EtcdRequest>(_ request: R, idempotent: Bool, deadline: ContinuousClock.Instant? = nil,
                              wholeDeadline: Bool = false) throws -> R.Response {
        let deadline = deadline ?? ContinuousClock.now + timeout
        let sliced = endpoints.count > 1 && !wholeDeadline
        var lastProblem = "no attempt"
        var attempt = 0
        /// TLS handshakes refused in a row: once every endpoint refused one, waiting cannot help.
        var tlsRefusals = 0
        /// Answers refused (``EtcdRequest/problem(with:)``): once every endpoint gave one, the
        /// call fails with ``EtcdError/unexpectedAnswer(endpoint:detail:)``.
        var refusedAnswers = 0
        while ContinuousClock.now < deadline {
            let endpoint = state.withLock { endpoints[$0.preferred] }
            let attemptDeadline = sliced ? min(deadline, .now + attemptLimit) : deadline
            let token = credentials == nil ? nil : try authToken(deadline: attemptDeadline)
            do {
                let answer = try transport.send(request, to: endpoint, token: token, deadline: attemptDeadline)
                guard let problem = request.problem(with: answer) else { return answer }
                // Nothing of it is used. A commit's outcome is then unknown: it is resolved. A
                // read goes to the next member, until every one has answered so.
                if !idempotent { throw Ambiguous(detail: "\(endpoint): an answer etcd never gives: \(problem)") }
                refusedAnswers += 1
                if refusedAnswers >= endpoints.count { throw EtcdError.unexpectedAnswer(endpoint: endpoint.description, detail: problem) }
                lastProblem = "\(endpoint): an answer etcd never gives: \(problem)"
                failedOver(from: endpoint)
                continue
            } catch EtcdCallError.tls(let problem, let detail) {
                tlsRefusals += 1
                if tlsRefusals >= endpoints.count { throw EtcdError.tls(endpoint: endpoint.description, problem: problem, detail: detail) }
                lastProblem = "\(endpoint): \(problem) (\(detail))"
                failedOver(from: endpoint)
                continue
            } catch EtcdCallError.server(let error) {
                if error.kind == .invalidToken && credentials != nil {
                    state.withLock { $0.token = nil }
                    continue
                }
                // A request that is not idempotent, answered by an error after which it may have
                // applied (etcd's "Unknown", a connection broken after the request was written):
                // only a definite refusal is a failure.
                if !idempotent && (error.mayHaveApplied || error.kind == .unavailable) { throw Ambiguous(detail: "\(endpoint): \(error.message)") }
                guard error.kind == .unavailable else { throw error }
                lastProblem = "\(endpoint): \(error.message)"
            } catch EtcdCallError.mayHaveApplied(let problem) {
                lastProblem = problem
                if !idempotent { throw Ambiguous(detail: lastProblem) }
            } catch EtcdCallError.notSent(let problem) {
                lastProblem = problem
            }
            tlsRefusals = 0
            failedOver(from: endpoint)
            attempt += 1
            // Back off a little once every endpoint has been tried (an election takes about a second).
            if attempt % endpoints.count == 0 { Thread.sleep(forTimeInterval: min(0.05 * Double(attempt / endpoints.count), 0.5)) }
        }
        throw EtcdError.unavailable(endpoints: endpoints.map(\.description), detail: lastProblem)
    }

    /// Opens `request` on the `attempt`th endpoint after the preferred one (counting round the
    /// list), with the authentication token, fetched by `deadline` when there is none: see
    /// ``EtcdTransport/watch(_:on:token:receive:)``. ``EtcdWatch`` keeps the policy (which
    /// member next, from which revision).
    func watch(_ request: WatchRequest, attempt: Int, deadline: ContinuousClock.Instant,
               receive: @escaping @Sendable (EtcdEndpoint, Result<WatchResponse, EtcdCallError>) -> Void) throws -> any EtcdStream {
        let endpoint = state.withLock { endpoints[($0.preferred + attempt) % endpoints.count] }
        let token = credentials == nil ? nil : try authToken(deadline: min(deadline, .now + timeout))
        return try transport.watch(request, on: endpoint, token: token) { receive(endpoint, $0) }
    }

    /// Forgets the authentication token (a member said it is invalid): the next call gets a new one.
    func forgetToken() {
        state.withLock { $0.token = nil }
    }

    /// Compacts the cluster's history up to `revision`; `physical` waits until the space is
    /// reusable (as long as that takes, within the deadline).
    func compact(toRevision revision: Int64, physical: Bool, deadline: ContinuousClock.Instant? = nil) throws {
        _ = try call(CompactionRequest(revision: revision, physical: physical), idempotent: true, deadline: deadline, wholeDeadline: physical)
    }

    /// The longest one attempt of a call may take when there are other endpoints to try: a
    /// share of the timeout per endpoint, between 1 and 5 seconds (etcd answers in milliseconds
    /// and elects a new leader in about a second, so a member silent for longer is failing).
    var attemptLimit: Duration {
        min(max(timeout / endpoints.count, .seconds(1)), .seconds(5))
    }

    /// Moves requests to the next endpoint after `endpoint` failed (the transport drops a
    /// connection that failed itself).
    private func failedOver(from endpoint: EtcdEndpoint) {
        state.withLock { state in
            if endpoints[state.preferred] == endpoint { state.preferred = (state.preferred + 1) % endpoints.count }
        }
    }

    private func authToken(deadline: ContinuousClock.Instant) throws -> String {
        if let token = state.withLock({ $0.token }) { return token }
        guard let credentials else { return "" }
        let client = EtcdClient(endpoints: endpoints, timeout: timeout, credentials: nil, transport: transport)
        let answer: AuthenticateResponse
        do {
            answer = try client.call(AuthenticateRequest(name: credentials.user, password: credentials.password), idempotent: true, deadline: deadline)
        } catch let error as EtcdServerError {
            throw EtcdError.authenticationFailed(user: credentials.user, detail: error.message)
        }
        guard let fresh = answer.token else {
            throw EtcdError.authenticationFailed(user: credentials.user, detail: "no token in the answer (is authentication enabled?)")
        }
        state.withLock { $0.token = fresh }
        return fresh
    }
}

/// A request that may or may not have been applied (see ``EtcdClient/call(_:idempotent:deadline:wholeDeadline:)``).
struct Ambiguous: Error {
    let detail: String
}
