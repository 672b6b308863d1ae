import Foundation
internal import GRPCCore
internal import SwiftProtobuf

/// A request's form on the wire: etcd's gRPC method and the protobuf messages it takes and
/// gives (generated from `Wire/etcd.proto`). This file is the only one that knows them; the
/// engine sees the values of `EtcdMessages.swift`.
protocol WireMessage: Sendable {
    associatedtype Response
    associatedtype WireRequest: SwiftProtobuf.Message
    associatedtype WireResponse: SwiftProtobuf.Message
    /// The gRPC method (`/etcdserverpb.KV/Range`, …).
    static var method: MethodDescriptor { get }
    /// Whether the method is a bidirectional stream (a lease's keep-alive): sent as a stream of
    /// this one request, of which the first answer is taken.
    static var isStream: Bool { get }
    var wire: WireRequest { get }
    static func answer(_ wire: WireResponse) -> Response
}

extension WireMessage {
    static var isStream: Bool { false }
}

// MARK: KV

extension RangeRequest {
    static var method: MethodDescriptor { Etcdserverpb_KV.Method.Range.descriptor }

    var wire: Etcdserverpb_RangeRequest {
        var wire = Etcdserverpb_RangeRequest()
        wire.key = Data(key)
        if let rangeEnd { wire.rangeEnd = Data(rangeEnd) }
        wire.limit = limit
        wire.revision = revision
        if descending {
            wire.sortOrder = .descend
            wire.sortTarget = .key
        }
        wire.keysOnly = keysOnly
        wire.countOnly = countOnly
        return wire
    }

    static func answer(_ wire: Etcdserverpb_RangeResponse) -> RangeResponse {
        RangeResponse(header: ResponseHeader(wire.header), kvs: wire.kvs.map { KeyValue(key: Array($0.key), value: Array($0.value)) },
                      more: wire.more, count: wire.count)
    }
}

extension PutRequest {
    static var method: MethodDescriptor { Etcdserverpb_KV.Method.Put.descriptor }

    var wire: Etcdserverpb_PutRequest {
        var wire = Etcdserverpb_PutRequest()
        wire.key = Data(key)
        wire.value = Data(value)
        wire.lease = lease
        return wire
    }

    static func answer(_ wire: Etcdserverpb_PutResponse) -> PutResponse { PutResponse(header: ResponseHeader(wire.header)) }
}

extension DeleteRangeRequest {
    static var method: MethodDescriptor { Etcdserverpb_KV.Method.DeleteRange.descriptor }

    var wire: Etcdserverpb_DeleteRangeRequest {
        var wire = Etcdserverpb_DeleteRangeRequest()
        wire.key = Data(key)
        if let rangeEnd { wire.rangeEnd = Data(rangeEnd) }
        return wire
    }

    static func answer(_ wire: Etcdserverpb_DeleteRangeResponse) -> DeleteRangeResponse {
        DeleteRangeResponse(header: ResponseHeader(wire.header), deleted: wire.deleted)
    }
}

extension TxnRequest {
    static var method: MethodDescriptor { Etcdserverpb_KV.Method.Txn.descriptor }

    var wire: Etcdserverpb_TxnRequest {
        var wire = Etcdserverpb_TxnRequest()
        wire.compare = compare.map(\.wire)
        wire.success = success.map(\.wire)
        wire.failure = failure.map(\.wire)
        return wire
    }

    static func answer(_ wire: Etcdserverpb_TxnResponse) -> TxnResponse {
        TxnResponse(header: ResponseHeader(wire.header), succeeded: wire.succeeded, responses: wire.responses.map { op in
            switch op.response {
            case .responseRange(let range): return .range(RangeRequest.answer(range))
            case .responseDeleteRange(let delete): return .deleteRange(DeleteRangeRequest.answer(delete))
            case .responsePut(let put): return .put(PutRequest.answer(put))
            case nil: return .put(PutResponse())
            }
        })
    }
}

extension Compare {
    fileprivate var wire: Etcdserverpb_Compare {
        var wire = Etcdserverpb_Compare()
        wire.result = .equal
        switch self {
        case let .absent(key):
            wire.key = Data(key)
            wire.target = .create
            wire.createRevision = 0
        case let .holds(key, value):
            wire.key = Data(key)
            wire.target = .value
            wire.value = Data(value)
        }
        return wire
    }
}

extension RequestOp {
    fileprivate var wire: Etcdserverpb_RequestOp {
        var wire = Etcdserverpb_RequestOp()
        switch self {
        case let .range(request): wire.requestRange = request.wire
        case let .put(request): wire.requestPut = request.wire
        case let .deleteRange(request): wire.requestDeleteRange = request.wire
        }
        return wire
    }
}

extension CompactionRequest {
    static var method: MethodDescriptor { Etcdserverpb_KV.Method.Compact.descriptor }

    var wire: Etcdserverpb_CompactionRequest {
        var wire = Etcdserverpb_CompactionRequest()
        wire.revision = revision
        wire.physical = physical
        return wire
    }

    static func answer(_ wire: Etcdserverpb_CompactionResponse) -> Empty { Empty() }
}

// MARK: Lease

extension LeaseGrantRequest {
    static var method: MethodDescriptor { Etcdserverpb_Lease.Method.LeaseGrant.descriptor }

    var wire: Etcdserverpb_LeaseGrantRequest {
        var wire = Etcdserverpb_LeaseGrantRequest()
        wire.ttl = ttl
        return wire
    }

    static func answer(_ wire: Etcdserverpb_LeaseGrantResponse) -> LeaseGrantResponse { LeaseGrantResponse(id: wire.id, ttl: wire.ttl) }
}

extension LeaseRevokeRequest {
    static var method: MethodDescriptor { Etcdserverpb_Lease.Method.LeaseRevoke.descriptor }

    var wire: Etcdserverpb_LeaseRevokeRequest {
        var wire = Etcdserverpb_LeaseRevokeRequest()
        wire.id = id
        return wire
    }

    static func answer(_ wire: Etcdserverpb_LeaseRevokeResponse) -> Empty { Empty() }
}

extension LeaseKeepAliveRequest {
    static var method: MethodDescriptor { Etcdserverpb_Lease.Method.LeaseKeepAlive.descriptor }
    static var isStream: Bool { true }

    var wire: Etcdserverpb_LeaseKeepAliveRequest {
        var wire = Etcdserverpb_LeaseKeepAliveRequest()
        wire.id = id
        return wire
    }

    static func answer(_ wire: Etcdserverpb_LeaseKeepAliveResponse) -> LeaseKeepAliveResponse {
        LeaseKeepAliveResponse(id: wire.id, ttl: wire.ttl)
    }
}

extension LeaseTimeToLiveRequest {
    static var method: MethodDescriptor { Etcdserverpb_Lease.Method.LeaseTimeToLive.descriptor }

    var wire: Etcdserverpb_LeaseTimeToLiveRequest {
        var wire = Etcdserverpb_LeaseTimeToLiveRequest()
        wire.id = id
        return wire
    }

    static func answer(_ wire: Etcdserverpb_LeaseTimeToLiveResponse) -> LeaseTimeToLiveResponse { LeaseTimeToLiveResponse(ttl: wire.ttl) }
}

// MARK: Maintenance

extension StatusRequest {
    static var method: MethodDescriptor { Etcdserverpb_Maintenance.Method.Status.descriptor }
    var wire: Etcdserverpb_StatusRequest { Etcdserverpb_StatusRequest() }

    static func answer(_ wire: Etcdserverpb_StatusResponse) -> StatusResponse {
        StatusResponse(header: ResponseHeader(wire.header), leader: wire.leader, dbSize: wire.dbSize)
    }
}

extension DefragmentRequest {
    static var method: MethodDescriptor { Etcdserverpb_Maintenance.Method.Defragment.descriptor }
    var wire: Etcdserverpb_DefragmentRequest { Etcdserverpb_DefragmentRequest() }
    static func answer(_ wire: Etcdserverpb_DefragmentResponse) -> Empty { Empty() }
}

extension AlarmRequest {
    static var method: MethodDescriptor { Etcdserverpb_Maintenance.Method.Alarm.descriptor }

    var wire: Etcdserverpb_AlarmRequest {
        var wire = Etcdserverpb_AlarmRequest()
        switch action {
        case .get:
            wire.action = .get
        case let .deactivate(alarm):
            wire.action = .deactivate
            wire.memberID = alarm.memberID
            wire.alarm = Self.alarmTypes.first { $0.value == alarm.type }?.key ?? .none
        }
        return wire
    }

    static func answer(_ wire: Etcdserverpb_AlarmResponse) -> AlarmResponse {
        AlarmResponse(alarms: wire.alarms.map { Alarm(memberID: $0.memberID, type: alarmTypes[$0.alarm] ?? "UNKNOWN(\($0.alarm.rawValue))") })
    }

    /// etcd's alarm types by their names.
    private static let alarmTypes: [Etcdserverpb_AlarmType: String] = [.none: "NONE", .nospace: "NOSPACE", .corrupt: "CORRUPT"]
}

// MARK: Auth

extension AuthenticateRequest {
    static var method: MethodDescriptor { Etcdserverpb_Auth.Method.Authenticate.descriptor }

    var wire: Etcdserverpb_AuthenticateRequest {
        var wire = Etcdserverpb_AuthenticateRequest()
        wire.name = name
        wire.password = password
        return wire
    }

    static func answer(_ wire: Etcdserverpb_AuthenticateResponse) -> AuthenticateResponse {
        AuthenticateResponse(token: wire.token.isEmpty ? nil : wire.token)
    }
}

extension AuthEnableRequest {
    static var method: MethodDescriptor { Etcdserverpb_Auth.Method.AuthEnable.descriptor }
    var wire: Etcdserverpb_AuthEnableRequest { Etcdserverpb_AuthEnableRequest() }
    static func answer(_ wire: Etcdserverpb_AuthEnableResponse) -> Empty { Empty() }
}

extension UserAddRequest {
    static var method: MethodDescriptor { Etcdserverpb_Auth.Method.UserAdd.descriptor }

    var wire: Etcdserverpb_AuthUserAddRequest {
        var wire = Etcdserverpb_AuthUserAddRequest()
        wire.name = name
        wire.password = password
        return wire
    }

    static func answer(_ wire: Etcdserverpb_AuthUserAddResponse) -> Empty { Empty() }
}

extension RoleAddRequest {
    static var method: MethodDescriptor { Etcdserverpb_Auth.Method.RoleAdd.descriptor }

    var wire: Etcdserverpb_AuthRoleAddRequest {
        var wire = Etcdserverpb_AuthRoleAddRequest()
        wire.name = name
        return wire
    }

    static func answer(_ wire: Etcdserverpb_AuthRoleAddResponse) -> Empty { Empty() }
}

extension UserGrantRoleRequest {
    static var method: MethodDescriptor { Etcdserverpb_Auth.Method.UserGrantRole.descriptor }

    var wire: Etcdserverpb_AuthUserGrantRoleRequest {
        var wire = Etcdserverpb_AuthUserGrantRoleRequest()
        wire.user = user
        wire.role = role
        return wire
    }

    static func answer(_ wire: Etcdserverpb_AuthUserGrantRoleResponse) -> Empty { Empty() }
}

// MARK: Watch

extension WatchRequest {
    static var method: MethodDescriptor { Etcdserverpb_Watch.Method.Watch.descriptor }
    static var isStream: Bool { true }

    var wire: Etcdserverpb_WatchRequest {
        var create = Etcdserverpb_WatchCreateRequest()
        create.key = Data(key)
        if let rangeEnd { create.rangeEnd = Data(rangeEnd) }
        create.startRevision = startRevision
        var wire = Etcdserverpb_WatchRequest()
        wire.createRequest = create
        return wire
    }

    static func answer(_ wire: Etcdserverpb_WatchResponse) -> WatchResponse {
        WatchResponse(
            header: ResponseHeader(wire.header), created: wire.created, canceled: wire.canceled, compactRevision: wire.compactRevision,
            cancelReason: wire.cancelReason,
            events: wire.events.map { event in
                WatchEvent(deleted: event.type == .delete, key: Array(event.kv.key), value: Array(event.kv.value), revision: event.kv.modRevision)
            })
    }
}

extension ResponseHeader {
    fileprivate init(_ wire: Etcdserverpb_ResponseHeader) {
        self.init(revision: wire.revision, memberID: wire.memberID)
    }
}
