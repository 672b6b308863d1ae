import Foundation
import StrataEngine

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
        }
    }
}

/// An error etcd answered with (a gRPC status through the gateway).
struct EtcdServerError: Error, CustomStringConvertible {
    let code: Int
    let message: String

    /// The request was refused before it could apply, or its outcome is unknown (leader lost,
    /// timed out inside the cluster): etcd's gRPC `Unavailable` and `DeadlineExceeded`, and a
    /// proposal Raft dropped (code 2, Unknown: during leader changes; never applied).
    var isUnavailable: Bool {
        code == 14 || code == 4 || message.contains("leader changed") || message.contains("no leader")
            || message.contains("request timed out") || message.contains("too many requests") || message.contains("deadline exceeded")
            || message.contains("raft proposal dropped")
    }
    var isCompacted: Bool { message.contains("required revision has been compacted") }
    var isFutureRevision: Bool { message.contains("required revision is a future revision") }
    var isNoSpace: Bool { message.contains("database space exceeded") }
    var isLeaseNotFound: Bool { message.contains("requested lease not found") }
    var isInvalidToken: Bool { message.contains("invalid auth token") }
    /// No credentials where the cluster wants some, or a user without the role for the keys.
    var isPermissionDenied: Bool { message.contains("user name is empty") || message.contains("permission denied") }
    var isTooLarge: Bool { message.contains("too many operations") || message.contains("request is too large") || message.contains("message larger than max") }

    var description: String { "etcd error \(code): \(message)" }
}

/// A request's JSON, as the gateway takes it.
typealias JSON = [String: Any]

/// Talks to a cluster through its members' JSON gateways: a pool of keep-alive connections,
/// failover across the endpoints, a deadline on every call, and authentication.
///
/// `@unchecked Sendable`: `preferred`, `idle` and `token` are guarded by `lock`.
final class EtcdClient: @unchecked Sendable {
    let endpoints: [EtcdEndpoint]
    let timeout: Duration
    private let credentials: (user: String, password: String)?
    private let lock = NSLock()
    /// The endpoint requests go to first; moves on when it fails.
    private var preferred = 0
    private var idle: [HTTPConnection] = []
    private var token: String?
    /// The engine's fault switches (a client of its own has none on).
    private let faults: EtcdFaults

    init(endpoints: [EtcdEndpoint], timeout: Duration, credentials: (user: String, password: String)?, faults: EtcdFaults = EtcdFaults()) {
        self.endpoints = endpoints
        self.timeout = timeout
        self.credentials = credentials
        self.faults = faults
    }

    /// A client of the cluster `options` names (endpoints parsed, credentials when a user is given).
    convenience init(_ options: EtcdOptions, timeout: Duration, faults: EtcdFaults = EtcdFaults()) throws(EngineError) {
        guard !options.endpoints.isEmpty else { throw .invalidArgument("no etcd endpoints given") }
        let endpoints = try options.endpoints.map { url throws(EngineError) in try EtcdEndpoint(url) }
        self.init(endpoints: endpoints, timeout: timeout, credentials: options.user.map { (user: $0, password: options.password ?? "") },
                  faults: faults)
    }

    func close() {
        lock.withLock {
            for connection in idle { connection.disconnect() }
            idle = []
        }
    }

    /// Sends `body` to `path` and returns the answer.
    ///
    /// A request that is `idempotent` is sent again (to the next endpoint) after any failure,
    /// until the deadline. One that is not is sent again only when it cannot have reached a
    /// server; otherwise ``Ambiguous`` is thrown and the caller resolves the outcome.
    ///
    /// With several endpoints, one attempt lasts at most ``attemptLimit`` (unless `wholeDeadline`,
    /// for requests that may rightly take long, such as a physical compaction): a member that is
    /// frozen or cut off, whose kernel still completes connections, would otherwise hold the whole
    /// deadline before the next endpoint is tried.
    func call(_ path: String, _ body: JSON, idempotent: Bool, deadline: ContinuousClock.Instant? = nil,
              wholeDeadline: Bool = false) throws -> JSON {
        let deadline = deadline ?? ContinuousClock.now + timeout
        let payload = Array(try JSONSerialization.data(withJSONObject: body))
        let sliced = endpoints.count > 1 && !wholeDeadline && !faults.unslicedAttempts
        var lastProblem = "no attempt"
        var attempt = 0
        while ContinuousClock.now < deadline {
            let connection = take()
            let attemptDeadline = sliced ? min(deadline, .now + attemptLimit) : deadline
            var headers: [(String, String)] = []
            if credentials != nil {
                headers.append(("Authorization", try authToken(deadline: attemptDeadline)))
            }
            do {
                let (status, answer) = try connection.post(path, body: payload, headers: headers, deadline: attemptDeadline)
                give(connection)
                let json = (try? JSONSerialization.jsonObject(with: Data(answer))) as? JSON ?? [:]
                if status == 200 { return json }
                let error = EtcdServerError(
                    code: (json["code"] as? Int) ?? status,
                    message: (json["message"] as? String) ?? (json["error"] as? String) ?? String(decoding: answer.prefix(200), as: UTF8.self))
                if error.isInvalidToken && credentials != nil {
                    lock.withLock { token = nil }
                    continue
                }
                // A non-idempotent request answered by a server error of unknown kind (a proxy's 502,
                // etcd's "Unknown") may have applied: only a known refusal is a definite failure.
                if !idempotent && status >= 500 && !error.isUnavailable { throw Ambiguous(detail: "\(connection.endpoint): \(error.message)") }
                guard error.isUnavailable else { throw error }
                lastProblem = "\(connection.endpoint): \(error.message)"
                if !idempotent { throw Ambiguous(detail: lastProblem) }
            } catch let error as TransportError {
                lastProblem = error.description
                if case .afterSending = error, !idempotent { throw Ambiguous(detail: lastProblem) }
            }
            failedOver(from: connection.endpoint)
            attempt += 1
            // Back off a little once every endpoint has been tried (an election takes about a second).
            if attempt % endpoints.count == 0 { Thread.sleep(forTimeInterval: min(0.05 * Double(attempt / endpoints.count), 0.5)) }
        }
        throw EtcdError.unavailable(endpoints: endpoints.map(\.description), detail: lastProblem)
    }

    /// Compacts the cluster's history up to `revision`; `physical` waits until the space is
    /// reusable (as long as that takes, within the deadline).
    func compact(toRevision revision: Int64, physical: Bool, deadline: ContinuousClock.Instant? = nil) throws {
        _ = try call("/v3/kv/compaction", ["revision": String(revision), "physical": physical], idempotent: true, deadline: deadline,
                     wholeDeadline: physical)
    }

    /// The longest one attempt of a call may take when there are other endpoints to try: a
    /// share of the timeout per endpoint, between 1 and 5 seconds (etcd answers in milliseconds
    /// and elects a new leader in about a second, so a member silent for longer is failing).
    var attemptLimit: Duration {
        min(max(timeout / endpoints.count, .seconds(1)), .seconds(5))
    }

    /// A connection to the preferred endpoint, reused when one is idle.
    private func take() -> HTTPConnection {
        lock.withLock {
            let endpoint = endpoints[preferred]
            if let i = idle.lastIndex(where: { $0.endpoint == endpoint }) { return idle.remove(at: i) }
            return HTTPConnection(endpoint: endpoint)
        }
    }

    private func give(_ connection: HTTPConnection) {
        guard connection.isOpen else { return }
        lock.withLock { if idle.count < 16 { idle.append(connection) } }
    }

    /// Moves requests to the next endpoint after `endpoint` failed, and drops its idle connections.
    private func failedOver(from endpoint: EtcdEndpoint) {
        lock.withLock {
            if endpoints[preferred] == endpoint { preferred = (preferred + 1) % endpoints.count }
            idle.removeAll { $0.endpoint == endpoint }
        }
    }

    private func authToken(deadline: ContinuousClock.Instant) throws -> String {
        if let token = lock.withLock({ token }) { return token }
        guard let credentials else { return "" }
        let client = EtcdClient(endpoints: endpoints, timeout: timeout, credentials: nil)
        defer { client.close() }
        let answer: JSON
        do {
            answer = try client.call("/v3/auth/authenticate", ["name": credentials.user, "password": credentials.password],
                                     idempotent: true, deadline: deadline)
        } catch let error as EtcdServerError {
            throw EtcdError.authenticationFailed(user: credentials.user, detail: error.message)
        }
        guard let fresh = answer["token"] as? String else {
            throw EtcdError.authenticationFailed(user: credentials.user, detail: "no token in the answer (is authentication enabled?)")
        }
        lock.withLock { token = fresh }
        return fresh
    }
}

/// A request that may or may not have been applied (see ``EtcdClient/call(_:_:idempotent:deadline:)``).
struct Ambiguous: Error {
    let detail: String
}

// MARK: JSON helpers

extension Array where Element == UInt8 {
    var base64: String { Data(self).base64EncodedString() }
}

extension Dictionary where Key == String, Value == Any {
    /// An int64 field (the gateway writes them as strings; absent means 0).
    func int64(_ name: String) -> Int64 {
        if let text = self[name] as? String { return Int64(text) ?? 0 }
        if let number = self[name] as? NSNumber { return number.int64Value }
        return 0
    }

    func object(_ name: String) -> JSON { self[name] as? JSON ?? [:] }

    func objects(_ name: String) -> [JSON] { self[name] as? [JSON] ?? [] }

    /// A bytes field (base64 in JSON; absent means empty).
    func bytes(_ name: String) -> [UInt8] {
        guard let text = self[name] as? String else { return [] }
        return Data(base64Encoded: text).map { Array($0) } ?? []
    }

    /// The revision in the answer's header.
    var revision: Int64 { object("header").int64("revision") }
}
