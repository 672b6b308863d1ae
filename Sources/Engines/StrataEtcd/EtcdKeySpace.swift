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
        _ = try request(PutRequest(key: key, value: value), "putting a key")
    }

    /// The current value of the raw etcd key `key`, or `nil` when it is absent.
    public func get(_ key: [UInt8]) throws -> [UInt8]? {
        try request(RangeRequest(key: key), "reading a key").kvs.first?.value
    }

    /// The value `key` had at `revision`; throws ``EtcdError/snapshotCompacted(revision:)`` when
    /// the cluster's history no longer reaches back to it.
    public func get(_ key: [UInt8], atRevision revision: Int64) throws -> [UInt8]? {
        try request(RangeRequest(key: key, revision: revision), "reading a key", at: revision).kvs.first?.value
    }

    /// Every key that begins with `prefix`, in order.
    public func keys(withPrefix prefix: [UInt8]) throws -> [[UInt8]] {
        try request(RangeRequest(key: prefix, rangeEnd: successorOfPrefix(prefix), keysOnly: true), "listing keys").kvs.map(\.key)
    }

    /// Deletes every key that begins with `prefix`; returns how many there were.
    @discardableResult
    public func deleteAll(withPrefix prefix: [UInt8]) throws -> Int {
        Int(try request(DeleteRangeRequest(key: prefix, rangeEnd: successorOfPrefix(prefix)), "deleting keys").deleted)
    }

    /// The cluster's current revision.
    public func revision() throws -> Int64 {
        try request(RangeRequest(key: [0], countOnly: true), "reading the revision").header.revision
    }

    /// Compacts the cluster's history up to `revision`: snapshots before it can no longer be read.
    /// Throws ``EtcdError/snapshotCompacted(revision:)`` when the history was already compacted past it.
    public func compact(toRevision revision: Int64) throws {
        try translated(at: revision, "compacting") { try client.compact(toRevision: revision, physical: true) }
    }

    /// The answering member's ID and the ID of the leader it knows (`/v3/maintenance/status`).
    public func status() throws -> (member: UInt64, leader: UInt64) {
        let answer = try request(StatusRequest(), "reading a member's status")
        return (answer.header.memberID, answer.leader)
    }

    /// Gives a cluster that ran out of space (writes throw `EngineError.diskFull`) its space back:
    /// compacts the history up to the current revision, defragments every member, and disarms the
    /// space alarms. Free space first (delete data: deletes are allowed while the alarm is on),
    /// or the next writes fill the quota again.
    public func recoverSpace() throws {
        try compactAndDefragment()
        for alarm in try request(AlarmRequest(action: .get), "reading the alarms").alarms {
            _ = try request(AlarmRequest(action: .deactivate(alarm)), "disarming an alarm")
        }
    }

    /// Compacts the cluster's history up to the current revision (a history already compacted
    /// that far is left as it is) and defragments every member, which gives the room of the
    /// history and of deleted keys back to the members' file systems. Reads of older revisions
    /// (another client's snapshot, a watch behind) fail with ``EtcdError/snapshotCompacted(revision:)``
    /// afterwards: compaction is the cluster's, not one store's.
    public func compactAndDefragment() throws {
        let current = try revision()
        do {
            try compact(toRevision: current)
        } catch EtcdError.snapshotCompacted(_) {
            // Compacted to this revision already (nothing was written since).
        }
        try forEachMember { member in _ = try member.request(DefragmentRequest(), "defragmenting", wholeDeadline: true) }
    }

    /// The sum of the members' backend database sizes, in bytes (each member's status).
    public func databaseSize() throws -> Int {
        var total = 0
        try forEachMember { member in total += Int(try member.request(StatusRequest(), "reading a member's status").dbSize) }
        return total
    }

    /// Runs `body` with access to each member alone, in the order of the options' endpoints.
    private func forEachMember(_ body: (EtcdKeySpace) throws -> Void) throws {
        for endpoint in options.endpoints {
            var one = options
            one.endpoints = [endpoint]
            try body(try EtcdKeySpace(one, timeout: timeout))
        }
    }

    /// Turns authentication on with one user, `user`, holding etcd's `root` role (the role that
    /// may do everything): for tests and tools that need a cluster with authentication.
    /// Throws `EngineError.engineFailure` with etcd's answer (a user that exists, …).
    @_spi(Testing) public func enableAuthentication(user: String, password: String) throws {
        let what = "administering authentication"
        _ = try request(UserAddRequest(name: user, password: password), what)
        _ = try request(RoleAddRequest(name: "root"), what)
        _ = try request(UserGrantRoleRequest(user: user, role: "root"), what)
        _ = try request(AuthEnableRequest(), what)
    }

    /// Sends a request (every one here is idempotent), its errors as the engine's public ones.
    private func request<R: EtcdRequest>(_ request: R, _ what: String, at revision: Int64? = nil, wholeDeadline: Bool = false) throws -> R.Response {
        try translated(at: revision, what) { try client.call(request, idempotent: true, wholeDeadline: wholeDeadline) }
    }

    /// Runs `body`, throwing etcd's refusals as public errors (``EtcdServerError/publicError(at:what:keeping:compactedRevision:)``).
    private func translated<R>(at revision: Int64?, _ what: String, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as EtcdServerError {
            throw error.publicError(at: "etcd cluster", what: what, compactedRevision: revision)
        }
    }
}
