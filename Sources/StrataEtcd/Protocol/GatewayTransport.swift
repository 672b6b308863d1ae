import Foundation

/// Carries etcd's API through its members' JSON gateway (`/v3/...`, grpc-gateway's mapping of
/// the gRPC services: bytes in base64, 64-bit integers as strings), over keep-alive
/// ``HTTPConnection``s, at most 16 idle ones kept. This file is the only one that knows the
/// gateway's paths and JSON.
///
/// `@unchecked Sendable`: `idle` is guarded by `lock`.
final class GatewayTransport: EtcdTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var idle: [HTTPConnection] = []

    func send<R: EtcdRequest>(_ request: R, to endpoint: EtcdEndpoint, token: String?,
                              deadline: ContinuousClock.Instant) throws(EtcdCallError) -> R.Response {
        let payload: [UInt8]
        do {
            payload = Array(try JSONSerialization.data(withJSONObject: request.gatewayBody))
        } catch {
            throw .notSent("the request could not be written as JSON: \(error)")
        }
        let connection = take(endpoint)
        let status: Int, answer: [UInt8]
        do throws(TransportError) {
            (status, answer) = try connection.post(request.gatewayPath, body: payload, headers: token.map { [("Authorization", $0)] } ?? [],
                                                   deadline: deadline)
        } catch {
            switch error {
            case let .notSent(text): throw .notSent(text)
            case let .afterSending(text): throw .mayHaveApplied(text)
            }
        }
        give(connection)
        let json = (try? JSONSerialization.jsonObject(with: Data(answer))) as? JSON ?? [:]
        if status == 200 { return R.gatewayAnswer(json) }
        // The gateway gives etcd's gRPC status in its error body; anything else answering (a
        // proxy) only an HTTP status.
        throw .server(EtcdServerError(
            code: (json["code"] as? Int) ?? status,
            message: (json["message"] as? String) ?? (json["error"] as? String) ?? String(decoding: answer.prefix(200), as: UTF8.self),
            httpStatus: status))
    }

    func forget(_ endpoint: EtcdEndpoint) {
        lock.withLock { idle.removeAll { $0.endpoint == endpoint } }
    }

    func close() {
        lock.withLock {
            for connection in idle { connection.disconnect() }
            idle = []
        }
    }

    /// A connection to `endpoint`, reused when one is idle.
    private func take(_ endpoint: EtcdEndpoint) -> HTTPConnection {
        lock.withLock {
            if let i = idle.lastIndex(where: { $0.endpoint == endpoint }) { return idle.remove(at: i) }
            return HTTPConnection(endpoint: endpoint)
        }
    }

    private func give(_ connection: HTTPConnection) {
        guard connection.isOpen else { return }
        lock.withLock { if idle.count < 16 { idle.append(connection) } }
    }
}

/// A JSON object, as the gateway takes and gives them.
typealias JSON = [String: Any]

/// A request's form on the JSON gateway: its path, its body, and how its answer reads.
protocol GatewayMessage: Sendable {
    associatedtype Response
    var gatewayPath: String { get }
    var gatewayBody: JSON { get }
    static func gatewayAnswer(_ json: JSON) -> Response
}

// MARK: KV

extension RangeRequest {
    var gatewayPath: String { "/v3/kv/range" }

    var gatewayBody: JSON {
        var body: JSON = ["key": key.base64]
        if let rangeEnd { body["range_end"] = rangeEnd.base64 }
        if limit > 0 { body["limit"] = String(limit) }
        if revision > 0 { body["revision"] = String(revision) }
        if descending {
            body["sort_order"] = "DESCEND"
            body["sort_target"] = "KEY"
        }
        if keysOnly { body["keys_only"] = true }
        if countOnly { body["count_only"] = true }
        return body
    }

    static func gatewayAnswer(_ json: JSON) -> RangeResponse {
        RangeResponse(header: json.header, kvs: json.objects("kvs").map { KeyValue(key: $0.bytes("key"), value: $0.bytes("value")) },
                      more: json["more"] as? Bool == true, count: json.int64("count"))
    }
}

extension PutRequest {
    var gatewayPath: String { "/v3/kv/put" }

    var gatewayBody: JSON {
        var body: JSON = ["key": key.base64, "value": value.base64]
        if lease != 0 { body["lease"] = String(lease) }
        return body
    }

    static func gatewayAnswer(_ json: JSON) -> PutResponse { PutResponse(header: json.header) }
}

extension DeleteRangeRequest {
    var gatewayPath: String { "/v3/kv/deleterange" }

    var gatewayBody: JSON {
        var body: JSON = ["key": key.base64]
        if let rangeEnd { body["range_end"] = rangeEnd.base64 }
        return body
    }

    static func gatewayAnswer(_ json: JSON) -> DeleteRangeResponse { DeleteRangeResponse(header: json.header, deleted: json.int64("deleted")) }
}

extension TxnRequest {
    var gatewayPath: String { "/v3/kv/txn" }

    var gatewayBody: JSON {
        var body: JSON = ["success": success.map(\.gatewayBody)]
        if !compare.isEmpty { body["compare"] = compare.map(\.gatewayBody) }
        if !failure.isEmpty { body["failure"] = failure.map(\.gatewayBody) }
        return body
    }

    static func gatewayAnswer(_ json: JSON) -> TxnResponse {
        // The gateway leaves `succeeded` out when the compares did not hold.
        TxnResponse(header: json.header, succeeded: json["succeeded"] as? Bool == true, responses: json.objects("responses").map { op in
            if let range = op["response_range"] as? JSON { return .range(RangeRequest.gatewayAnswer(range)) }
            if let delete = op["response_delete_range"] as? JSON { return .deleteRange(DeleteRangeRequest.gatewayAnswer(delete)) }
            return .put(PutRequest.gatewayAnswer(op.object("response_put")))
        })
    }
}

extension Compare {
    fileprivate var gatewayBody: JSON {
        switch self {
        case let .absent(key): return ["key": key.base64, "target": "CREATE", "result": "EQUAL", "create_revision": "0"]
        case let .holds(key, value): return ["key": key.base64, "target": "VALUE", "result": "EQUAL", "value": value.base64]
        }
    }
}

extension RequestOp {
    fileprivate var gatewayBody: JSON {
        switch self {
        case let .range(request): return ["request_range": request.gatewayBody]
        case let .put(request): return ["request_put": request.gatewayBody]
        case let .deleteRange(request): return ["request_delete_range": request.gatewayBody]
        }
    }
}

extension CompactionRequest {
    var gatewayPath: String { "/v3/kv/compaction" }
    var gatewayBody: JSON { ["revision": String(revision), "physical": physical] }
    static func gatewayAnswer(_ json: JSON) -> Empty { Empty() }
}

// MARK: Lease

extension LeaseGrantRequest {
    var gatewayPath: String { "/v3/lease/grant" }
    var gatewayBody: JSON { ["TTL": String(ttl)] }
    static func gatewayAnswer(_ json: JSON) -> LeaseGrantResponse { LeaseGrantResponse(id: json.int64("ID"), ttl: json.int64("TTL")) }
}

extension LeaseRevokeRequest {
    var gatewayPath: String { "/v3/lease/revoke" }
    var gatewayBody: JSON { ["ID": String(id)] }
    static func gatewayAnswer(_ json: JSON) -> Empty { Empty() }
}

extension LeaseKeepAliveRequest {
    var gatewayPath: String { "/v3/lease/keepalive" }
    var gatewayBody: JSON { ["ID": String(id)] }

    /// The gateway wraps the stream's one answer in `result`.
    static func gatewayAnswer(_ json: JSON) -> LeaseKeepAliveResponse {
        let result = json.object("result")
        return LeaseKeepAliveResponse(id: result.int64("ID"), ttl: result.int64("TTL"))
    }
}

extension LeaseTimeToLiveRequest {
    var gatewayPath: String { "/v3/lease/timetolive" }
    var gatewayBody: JSON { ["ID": String(id)] }
    static func gatewayAnswer(_ json: JSON) -> LeaseTimeToLiveResponse { LeaseTimeToLiveResponse(ttl: json.int64("TTL")) }
}

// MARK: Maintenance

extension StatusRequest {
    var gatewayPath: String { "/v3/maintenance/status" }
    var gatewayBody: JSON { [:] }
    static func gatewayAnswer(_ json: JSON) -> StatusResponse { StatusResponse(header: json.header, leader: json.uint64("leader")) }
}

extension DefragmentRequest {
    var gatewayPath: String { "/v3/maintenance/defragment" }
    var gatewayBody: JSON { [:] }
    static func gatewayAnswer(_ json: JSON) -> Empty { Empty() }
}

extension AlarmRequest {
    var gatewayPath: String { "/v3/maintenance/alarm" }

    var gatewayBody: JSON {
        switch action {
        case .get: return ["action": "GET"]
        case let .deactivate(alarm): return ["action": "DEACTIVATE", "memberID": String(alarm.memberID), "alarm": alarm.type]
        }
    }

    static func gatewayAnswer(_ json: JSON) -> AlarmResponse {
        AlarmResponse(alarms: json.objects("alarms").map { Alarm(memberID: $0.uint64("memberID"), type: $0["alarm"] as? String ?? "NOSPACE") })
    }
}

// MARK: Auth

extension AuthenticateRequest {
    var gatewayPath: String { "/v3/auth/authenticate" }
    var gatewayBody: JSON { ["name": name, "password": password] }
    static func gatewayAnswer(_ json: JSON) -> AuthenticateResponse { AuthenticateResponse(token: json["token"] as? String) }
}

extension AuthAdministration {
    var gatewayPath: String {
        switch action {
        case .addUser: return "/v3/auth/user/add"
        case .addRole: return "/v3/auth/role/add"
        case .grantRole: return "/v3/auth/user/grant"
        case .enable: return "/v3/auth/enable"
        }
    }

    var gatewayBody: JSON {
        switch action {
        case let .addUser(name, password): return ["name": name, "password": password]
        case let .addRole(name): return ["name": name]
        case let .grantRole(user, role): return ["user": user, "role": role]
        case .enable: return [:]
        }
    }

    static func gatewayAnswer(_ json: JSON) -> Empty { Empty() }
}

// MARK: JSON helpers

extension Array where Element == UInt8 {
    fileprivate var base64: String { Data(self).base64EncodedString() }
}

extension Dictionary where Key == String, Value == Any {
    /// An int64 field (the gateway writes them as strings; absent means 0).
    fileprivate func int64(_ name: String) -> Int64 {
        if let text = self[name] as? String { return Int64(text) ?? 0 }
        if let number = self[name] as? NSNumber { return number.int64Value }
        return 0
    }

    /// A uint64 field (as strings too).
    fileprivate func uint64(_ name: String) -> UInt64 {
        if let text = self[name] as? String { return UInt64(text) ?? 0 }
        if let number = self[name] as? NSNumber { return number.uint64Value }
        return 0
    }

    fileprivate func object(_ name: String) -> JSON { self[name] as? JSON ?? [:] }

    fileprivate func objects(_ name: String) -> [JSON] { self[name] as? [JSON] ?? [] }

    /// A bytes field (base64 in JSON; absent means empty).
    fileprivate func bytes(_ name: String) -> [UInt8] {
        guard let text = self[name] as? String else { return [] }
        return Data(base64Encoded: text).map { Array($0) } ?? []
    }

    /// The answer's header.
    fileprivate var header: ResponseHeader {
        let header = object("header")
        return ResponseHeader(revision: header.int64("revision"), memberID: header.uint64("member_id"))
    }
}
