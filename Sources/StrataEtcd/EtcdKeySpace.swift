import Foundation
import StrataEngine

/// Plain key access to a cluster, outside any store: for tools and tests that look at what a
/// store wrote, or put foreign keys beside it. Not transactional across calls.
public final class EtcdKeySpace: Sendable {
    private let client: EtcdClient
    private let options: EtcdOptions
    private let timeout: Duration

    /// Access to the cluster `options` reaches, each call bounded by `timeout` (default 30 s,
    /// then ``EtcdError/unavailable(endpoints:detail:)``). Connects lazily; throws
    /// `EngineError.invalidArgument` when there is no endpoint or one is not `http://host:port`.
    public init(_ options: EtcdOptions, timeout: Duration = .seconds(30)) throws {
        client = try EtcdClient(options, timeout: timeout)
        self.options = options
        self.timeout = timeout
    }

    deinit { client.close() }

    /// The etcd keys of the store at `prefix` begin with these bytes (the prefix and a zero byte).
    public static func namespace(ofPrefix prefix: String) -> [UInt8] { EtcdLayout(prefix: prefix).namespace }

    /// Stores `value` under the raw etcd key `key` (no store's namespace is added), replacing any
    /// value. Throws `EngineError.diskFull` when the cluster is out of space.
    public func put(_ value: [UInt8], forKey key: [UInt8]) throws {
        _ = try request("/v3/kv/put", ["key": key.base64, "value": value.base64])
    }

    /// The current value of the raw etcd key `key`, or `nil` when it is absent.
    public func get(_ key: [UInt8]) throws -> [UInt8]? {
        try request("/v3/kv/range", ["key": key.base64]).objects("kvs").first?.bytes("value")
    }

    /// The value `key` had at `revision`; throws ``EtcdError/snapshotCompacted(revision:)`` when
    /// the cluster's history no longer reaches back to it.
    public func get(_ key: [UInt8], atRevision revision: Int64) throws -> [UInt8]? {
        try request("/v3/kv/range", ["key": key.base64, "revision": String(revision)], at: revision).objects("kvs").first?.bytes("value")
    }

    /// Every key that begins with `prefix`, in order.
    public func keys(withPrefix prefix: [UInt8]) throws -> [[UInt8]] {
        try request("/v3/kv/range", ["key": prefix.base64, "range_end": successorOfPrefix(prefix).base64, "keys_only": true])
            .objects("kvs").map { $0.bytes("key") }
    }

    /// Deletes every key that begins with `prefix`; returns how many there were.
    @discardableResult
    public func deleteAll(withPrefix prefix: [UInt8]) throws -> Int {
        Int(try request("/v3/kv/deleterange", ["key": prefix.base64, "range_end": successorOfPrefix(prefix).base64]).int64("deleted"))
    }

    /// The cluster's current revision.
    public func revision() throws -> Int64 {
        try request("/v3/kv/range", ["key": [0].base64, "count_only": true]).revision
    }

    /// Compacts the cluster's history up to `revision`: snapshots before it can no longer be read.
    /// Throws ``EtcdError/snapshotCompacted(revision:)`` when the history was already compacted past it.
    public func compact(toRevision revision: Int64) throws {
        try translated(at: revision, "/v3/kv/compaction") { try client.compact(toRevision: revision, physical: true) }
    }

    /// The answering member's ID and the ID of the leader it knows (`/v3/maintenance/status`).
    public func status() throws -> (member: UInt64, leader: UInt64) {
        let answer = try request("/v3/maintenance/status", [:])
        let member = UInt64(answer.object("header")["member_id"] as? String ?? "") ?? 0
        return (member, UInt64(answer["leader"] as? String ?? "") ?? 0)
    }

    /// Gives a cluster that ran out of space (writes throw `EngineError.diskFull`) its space back:
    /// compacts the history up to the current revision, defragments every member, and disarms the
    /// space alarms. Free space first (delete data: deletes are allowed while the alarm is on),
    /// or the next writes fill the quota again.
    public func recoverSpace() throws {
        try compact(toRevision: try revision())
        for endpoint in options.endpoints {
            var one = options
            one.endpoints = [endpoint]
            let member = try EtcdKeySpace(one, timeout: timeout)
            _ = try member.request("/v3/maintenance/defragment", [:], wholeDeadline: true)
        }
        let alarms = try request("/v3/maintenance/alarm", ["action": "GET"]).objects("alarms")
        for alarm in alarms {
            _ = try request("/v3/maintenance/alarm", [
                "action": "DEACTIVATE", "memberID": alarm["memberID"] ?? "0", "alarm": alarm["alarm"] ?? "NOSPACE",
            ])
        }
    }

    /// Sends `body` to the gateway's `path` as it is (cluster administration in tests and tools:
    /// users, roles, `/v3/auth/enable`). Throws `EngineError.engineFailure` with etcd's answer.
    @_spi(Testing) public func administer(_ path: String, _ body: [String: String]) throws {
        _ = try request(path, body)
    }

    /// Sends a request (every one here is idempotent), its errors as the engine's public ones.
    private func request(_ path: String, _ body: JSON, at revision: Int64? = nil, wholeDeadline: Bool = false) throws -> JSON {
        try translated(at: revision, path) { try client.call(path, body, idempotent: true, wholeDeadline: wholeDeadline) }
    }

    /// Runs `body`, throwing etcd's refusals as public errors: no space `diskFull`, no permission
    /// `permissionDenied`, a compacted `revision` `snapshotCompacted`, any other `engineFailure`
    /// with etcd's code and message and the request's `path`.
    private func translated<R>(at revision: Int64?, _ path: String, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as EtcdServerError {
            if error.isNoSpace { throw EngineError.diskFull(path: "etcd cluster") }
            if error.isPermissionDenied { throw EngineError.permissionDenied(path: "etcd cluster", detail: error.message) }
            if error.isCompacted, let revision { throw EtcdError.snapshotCompacted(revision: revision) }
            throw EngineError.engineFailure(engine: "etcd", code: error.code, message: error.message, operation: path)
        }
    }
}
