/// etcd's API as the engine uses it: the requests and answers of etcd's `etcdserverpb` services
/// (KV, Lease, Maintenance, Auth), as values with etcd's names, whatever carries them.
///
/// The engine and its tools build these and read these; only a transport (``EtcdTransport``)
/// knows their wire form. Fields the engine does not use are left out; a field's default is
/// etcd's (0, empty, false).

/// An answer's header: the store's revision when the member answered.
struct ResponseHeader: Sendable, Equatable {
    var revision: Int64 = 0
    var memberID: UInt64 = 0
}

/// A key and its value (`mvccpb.KeyValue`, without the versions the engine does not read).
struct KeyValue: Sendable, Equatable {
    var key: [UInt8]
    var value: [UInt8]
}

// MARK: KV

/// `Range`: the key `key`, or the keys of `[key, rangeEnd)`, at a revision (0: the newest).
struct RangeRequest: EtcdRequest {
    typealias Response = RangeResponse
    var key: [UInt8]
    var rangeEnd: [UInt8]?
    /// At most this many pairs (0: all).
    var limit: Int64 = 0
    var revision: Int64 = 0
    /// Sorted by key, descending (etcd's `sort_order: DESCEND`, `sort_target: KEY`).
    var descending = false
    var keysOnly = false
    var countOnly = false
}

struct RangeResponse: Sendable, Equatable {
    var header = ResponseHeader()
    var kvs: [KeyValue] = []
    /// Whether the range holds more pairs than the limit let through.
    var more = false
    /// How many pairs the range holds (whatever the limit).
    var count: Int64 = 0
}

/// `Put`: `value` under `key`, on `lease` when not 0.
struct PutRequest: EtcdRequest {
    typealias Response = PutResponse
    var key: [UInt8]
    var value: [UInt8]
    var lease: Int64 = 0
}

struct PutResponse: Sendable, Equatable {
    var header = ResponseHeader()
}

/// `DeleteRange`: the key `key`, or the keys of `[key, rangeEnd)`.
struct DeleteRangeRequest: EtcdRequest {
    typealias Response = DeleteRangeResponse
    var key: [UInt8]
    var rangeEnd: [UInt8]?
}

struct DeleteRangeResponse: Sendable, Equatable {
    var header = ResponseHeader()
    var deleted: Int64 = 0
}

/// A condition of a ``TxnRequest``: the two the engine needs.
enum Compare: Sendable, Equatable {
    /// Holds while `key` does not exist (its create revision is 0).
    case absent([UInt8])
    /// Holds while `key` holds `value`.
    case holds([UInt8], value: [UInt8])
}

/// One operation of a ``TxnRequest``.
enum RequestOp: Sendable, Equatable {
    case range(RangeRequest)
    case put(PutRequest)
    case deleteRange(DeleteRangeRequest)
}

/// The answer to one ``RequestOp``, in the same place.
enum ResponseOp: Sendable, Equatable {
    case range(RangeResponse)
    case put(PutResponse)
    case deleteRange(DeleteRangeResponse)
}

/// `Txn`: `success` when every compare holds, else `failure`, atomically at one revision.
struct TxnRequest: EtcdRequest {
    typealias Response = TxnResponse
    var compare: [Compare] = []
    var success: [RequestOp]
    var failure: [RequestOp] = []
}

struct TxnResponse: Sendable, Equatable {
    var header = ResponseHeader()
    var succeeded = false
    var responses: [ResponseOp] = []

    /// The pairs the `i`th operation (a range) found: none when it is not a range.
    func rangePairs(_ i: Int) -> [KeyValue] {
        guard responses.indices.contains(i), case .range(let answer) = responses[i] else { return [] }
        return answer.kvs
    }

    /// The value of the first pair the `i`th operation (a range) found, or `nil`.
    func rangeValue(_ i: Int) -> [UInt8]? { rangePairs(i).first?.value }
}

/// `Compact`: forgets the history before `revision`; `physical` answers once the space is reusable.
struct CompactionRequest: EtcdRequest {
    typealias Response = Empty
    var revision: Int64
    var physical = false
}

// MARK: Lease

struct LeaseGrantRequest: EtcdRequest {
    typealias Response = LeaseGrantResponse
    var ttl: Int64
}

struct LeaseGrantResponse: Sendable, Equatable {
    var id: Int64 = 0
    var ttl: Int64 = 0
}

struct LeaseRevokeRequest: EtcdRequest {
    typealias Response = Empty
    var id: Int64
}

/// One renewal of a lease (the stream's request, sent alone).
struct LeaseKeepAliveRequest: EtcdRequest {
    typealias Response = LeaseKeepAliveResponse
    var id: Int64
}

struct LeaseKeepAliveResponse: Sendable, Equatable {
    var id: Int64 = 0
    /// The time left, in seconds; 0 or less: the lease is gone.
    var ttl: Int64 = 0
}

struct LeaseTimeToLiveRequest: EtcdRequest {
    typealias Response = LeaseTimeToLiveResponse
    var id: Int64
}

struct LeaseTimeToLiveResponse: Sendable, Equatable {
    /// The time left, in seconds; -1: the lease is gone.
    var ttl: Int64 = 0
}

// MARK: Maintenance

struct StatusRequest: EtcdRequest {
    typealias Response = StatusResponse
}

struct StatusResponse: Sendable, Equatable {
    var header = ResponseHeader()
    var leader: UInt64 = 0
    /// The size of the member's backend database file, in bytes.
    var dbSize: Int64 = 0
}

struct DefragmentRequest: EtcdRequest {
    typealias Response = Empty
}

/// `Alarm`: lists the members' alarms, or disarms one.
struct AlarmRequest: EtcdRequest {
    typealias Response = AlarmResponse
    enum Action: Sendable, Equatable {
        case get
        case deactivate(Alarm)
    }
    var action: Action
}

/// A member's alarm (`NOSPACE`: it ran out of its quota; `CORRUPT`).
struct Alarm: Sendable, Equatable {
    var memberID: UInt64
    /// etcd's alarm type by name.
    var type: String
}

struct AlarmResponse: Sendable, Equatable {
    var alarms: [Alarm] = []
}

// MARK: Auth

struct AuthenticateRequest: EtcdRequest {
    typealias Response = AuthenticateResponse
    var name: String
    var password: String
}

struct AuthenticateResponse: Sendable, Equatable {
    var token: String?
}

/// `AuthEnable`: turns authentication on (tests and tools; `etcdctl auth enable`).
struct AuthEnableRequest: EtcdRequest {
    typealias Response = Empty
}

/// `UserAdd`: a user with a password (`etcdctl user add`).
struct UserAddRequest: EtcdRequest {
    typealias Response = Empty
    var name: String
    var password: String
}

/// `RoleAdd`: a role (`etcdctl role add`).
struct RoleAddRequest: EtcdRequest {
    typealias Response = Empty
    var name: String
}

/// `UserGrantRole`: gives `user` the role `role` (`etcdctl user grant-role`).
struct UserGrantRoleRequest: EtcdRequest {
    typealias Response = Empty
    var user: String
    var role: String
}

// MARK: Watch

/// `Watch` (its create request): a stream of the changes to the key `key`, or to the keys of
/// `[key, rangeEnd)`, from `startRevision` on (0: from the next revision). Not an
/// ``EtcdRequest``: it is answered by a stream (``EtcdTransport/watch(_:on:token:receive:)``).
struct WatchRequest: WireMessage, Equatable {
    typealias Response = WatchResponse
    var key: [UInt8]
    var rangeEnd: [UInt8]?
    var startRevision: Int64 = 0
}

/// One message of a watch stream: the changes of one or more whole revisions, in order, or a
/// notice (created, canceled).
struct WatchResponse: Sendable, Equatable {
    var header = ResponseHeader()
    var created = false
    /// The member ended the watch (then `compactRevision` or `cancelReason` says why).
    var canceled = false
    /// Not 0: the revisions asked for were compacted away; the oldest still kept is this one.
    var compactRevision: Int64 = 0
    var cancelReason = ""
    var events: [WatchEvent] = []
}

/// One change of a watch stream: a put or a delete of a key, at a revision.
struct WatchEvent: Sendable, Equatable {
    var deleted = false
    var key: [UInt8]
    /// The new value (empty for a delete).
    var value: [UInt8] = []
    /// The revision of the change.
    var revision: Int64
}

/// An answer the engine reads nothing from but its success.
struct Empty: Sendable, Equatable {}

/// A request of etcd's API: its answer's type, and its wire form (``WireMessage``: etcd's gRPC
/// method and protobuf messages, for the transport that carries it).
protocol EtcdRequest: WireMessage, Equatable where Response: Sendable {
    /// Why `answer` cannot be the answer to this request (it breaks what etcd promises), or
    /// `nil` when it can (`AnswerCheck.swift`; by default every answer can).
    func problem(with answer: Response) -> String?
}

extension RequestOp {
    /// A range operation reading the one key `key`.
    static func get(_ key: [UInt8]) -> RequestOp { .range(RangeRequest(key: key)) }

    /// A put of `value` under `key`, on `lease` when not 0.
    static func set(_ key: [UInt8], _ value: [UInt8], lease: Int64 = 0) -> RequestOp { .put(PutRequest(key: key, value: value, lease: lease)) }

    /// A delete of the one key `key`.
    static func remove(_ key: [UInt8]) -> RequestOp { .deleteRange(DeleteRangeRequest(key: key)) }
}
