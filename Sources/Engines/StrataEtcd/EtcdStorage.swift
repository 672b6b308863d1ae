import Foundation
@_spi(StrataInternals) import StrataEngine

/// A store's storage primitives on an etcd cluster: snapshots are etcd revisions, a write
/// transaction holds the store's writer lock (a key on this instance's lease) and commits in one
/// etcd transaction that checks it still holds the lock.
///
/// `@unchecked Sendable`: `sequence` is used only by the engine core's one writer; the rest is immutable or `Locked`.
final class EtcdStorage: KeyValueStorage, @unchecked Sendable {
    let client: EtcdClient
    let layout: EtcdLayout
    /// The store's location as the user named it (its prefix), for errors.
    let location: String
    let leaseTTL: Int
    let compaction: EtcdCompaction
    /// The revision the engine last compacted the history at (0: not yet).
    private let compactedAt = Locked<Int64>(0)
    /// Identifies this engine instance in lock tokens and its commit key.
    let instance = UUID().uuidString
    private let lease: LeaseKeeper
    private var sequence = 0
    /// The token of a lock whose release is owed (until it succeeds).
    private let unreleased = Locked<String?>(nil)
    /// The cluster's options and the request timeout, for maintenance that reaches each member
    /// (compaction).
    let cluster: (options: EtcdOptions, timeout: Duration)

    init(client: EtcdClient, cluster: (options: EtcdOptions, timeout: Duration), prefix: String, mode: OpenMode, leaseTTL: Int, compaction: EtcdCompaction) throws {
        self.compaction = compaction
        self.client = client
        self.cluster = cluster
        layout = EtcdLayout(prefix: prefix)
        location = prefix
        self.leaseTTL = leaseTTL
        lease = LeaseKeeper(client: client, ttl: leaseTTL)
        try open(mode: mode)
        lease.onRenewal { [weak self] in self?.releaseLeftLock() }
    }

    /// Checks what the namespace holds: a store of this layout, nothing (created with `.create`),
    /// or something else (refused, untouched).
    private func open(mode: OpenMode) throws {
        let answer = try txn(success: [
            .get(layout.marker),
            .range(RangeRequest(key: layout.namespace, rangeEnd: layout.namespaceEnd, limit: 1, keysOnly: true)),
        ], idempotent: true, what: "opening")
        if let value = answer.rangeValue(0) {
            guard value == EtcdLayout.format else {
                throw EngineError.notAStore(path: location, reason: "its marker says \"\(String(decoding: value, as: UTF8.self))\", not \"\(String(decoding: EtcdLayout.format, as: UTF8.self))\"")
            }
            return
        }
        guard answer.rangePairs(1).isEmpty else {
            throw EngineError.notAStore(path: location, reason: "the prefix holds keys that no Strata store wrote (no store marker)")
        }
        guard mode == .create else { throw EngineError.notFound(path: location) }
        // Created at most once, even by several processes at the same time.
        let created = try txn(
            compare: [.absent(layout.marker)], success: [.set(layout.marker, EtcdLayout.format)],
            failure: [.get(layout.marker)], idempotent: true, what: "creating the store")
        if !created.succeeded {
            guard created.rangeValue(0) == EtcdLayout.format else { throw EngineError.notAStore(path: location, reason: "another format's marker appeared while creating") }
        }
    }

    func beginRead() throws -> any StorageReadTransaction {
        let answer = try call(RangeRequest(key: layout.marker, countOnly: true), idempotent: true, what: "beginning a read")
        return EtcdTransaction(storage: self, revision: answer.header.revision, token: nil)
    }

    func beginWrite() throws -> any StorageWriteTransaction {
        sequence += 1
        let token = "\(instance)/\(sequence)"
        let revision = try acquireLock(token: token)
        return EtcdTransaction(storage: self, revision: revision, token: token)
    }

    func close() throws {
        lease.revoke()
        client.close()
    }

    /// This instance's lease (the commit key lives on it).
    func leaseID() throws -> Int64 {
        do { return try lease.id() } catch let error as EtcdServerError { throw translate(error, what: "granting the engine's lease") }
    }

    /// Whether the lease `id` still exists on the cluster.
    func leaseIsAlive(_ id: Int64, deadline: ContinuousClock.Instant) throws -> Bool {
        try call(LeaseTimeToLiveRequest(id: id), idempotent: true, deadline: deadline, what: "checking the lease").ttl > 0
    }

    /// Compacts the history as ``EtcdCompaction/keepRevisions(_:)`` says, once a commit at
    /// `revision` has made it due. Best effort: a compaction that fails (another engine compacted
    /// further, the cluster is busy) is tried again after the next commit.
    func compactHistory(after revision: Int64) {
        guard case .keepRevisions(let keep) = compaction else { return }
        let due = compactedAt.withLock { compactedAt in
            guard revision - keep > 0, revision - compactedAt >= max(keep / 4, 1) else { return false }
            compactedAt = revision
            return true
        }
        guard due else { return }
        do {
            try client.compact(toRevision: revision - keep, physical: false, deadline: .now + .seconds(2))
        } catch let error as EtcdServerError where error.kind == .compacted {
            // Already compacted to there or beyond, by another engine or the cluster itself.
        } catch {
            compactedAt.withLock { $0 = 0 }
        }
    }

    // MARK: The writer lock

    /// Takes the store's writer lock for `token`, waiting while another instance holds it (at most
    /// its lease's TTL after that instance dies), and returns the revision it was taken at.
    private func acquireLock(token: String) throws -> Int64 {
        let deadline = ContinuousClock.now + client.timeout
        var pause = 0.001
        while true {
            // Every path round the loop is bounded by the timeout (also during elections).
            guard ContinuousClock.now < deadline else { throw EngineError.locked(path: location) }
            let leaseID = try self.leaseID()
            let answer: TxnResponse
            do {
                answer = try txn(
                    compare: [.absent(layout.lock)], success: [.set(layout.lock, Array(token.utf8), lease: leaseID)],
                    failure: [.get(layout.lock)], idempotent: false, what: "taking the writer lock")
            } catch let error as EtcdServerError where error.kind == .leaseNotFound {
                lease.expired(leaseID)
                continue
            } catch is Ambiguous {
                // Whether the lock was taken is learned by the next attempt (the holder's token is ours).
                Thread.sleep(forTimeInterval: pause)
                continue
            }
            if answer.succeeded { return answer.header.revision }
            let holder = String(decoding: answer.rangeValue(0) ?? [], as: UTF8.self)
            if holder == token { return answer.header.revision }
            if holder.hasPrefix(instance + "/") {
                // A lock this instance failed to release (its rollback could not reach the
                // cluster): no transaction of ours holds it, so take it over.
                let taken: TxnResponse
                do {
                    taken = try txn(
                        compare: [.holds(layout.lock, value: Array(holder.utf8))], success: [.set(layout.lock, Array(token.utf8), lease: leaseID)],
                        idempotent: true, what: "taking over this instance's stale writer lock")
                } catch let error as EtcdServerError where error.kind == .leaseNotFound {
                    lease.expired(leaseID)
                    continue
                }
                if taken.succeeded { return taken.header.revision }
                continue
            }
            if ContinuousClock.now + .milliseconds(Int(pause * 1000)) > deadline {
                throw EngineError.locked(path: location)
            }
            Thread.sleep(forTimeInterval: pause)
            pause = min(pause * 2, 0.05)
        }
    }

    /// Gives the lock back without committing (a rollback). A release that fails is tried again
    /// at each lease renewal (a third of the TTL), and a lock left behind is taken over by this
    /// instance's next writer.
    func releaseLock(token: String) {
        unreleased.withLock { $0 = token }
        releaseLeftLock()
    }

    /// Releases the lock whose release is owed (a rollback's, or one that failed before: called
    /// again at each lease renewal, so that other instances do not wait for it while this one
    /// does not write).
    private func releaseLeftLock() {
        guard let token = unreleased.withLock({ $0 }) else { return }
        if (try? txn(compare: [.holds(layout.lock, value: Array(token.utf8))], success: [.remove(layout.lock)],
                     idempotent: true, deadline: .now + .seconds(2), what: "releasing the writer lock")) != nil {
            unreleased.withLock { if $0 == token { $0 = nil } }
        }
    }

    // MARK: Requests

    func call<R: EtcdRequest>(_ request: R, idempotent: Bool, deadline: ContinuousClock.Instant? = nil, what: String) throws -> R.Response {
        do {
            return try client.call(request, idempotent: idempotent, deadline: deadline)
        } catch let error as EtcdServerError {
            throw translate(error, what: what)
        }
    }

    func txn(compare: [Compare] = [], success: [RequestOp], failure: [RequestOp] = [], idempotent: Bool,
             deadline: ContinuousClock.Instant? = nil, what: String) throws -> TxnResponse {
        try call(TxnRequest(compare: compare, success: success, failure: failure), idempotent: idempotent, deadline: deadline, what: what)
    }

    /// etcd's refusal as the store's error; the lease and compaction refusals stay as they are
    /// (their callers handle them: a lease granted again, a snapshot's own revision named).
    func translate(_ error: EtcdServerError, what: String) -> Error {
        error.publicError(at: "etcd cluster (store \(location))", what: what, keeping: [.leaseNotFound, .compacted])
    }
}

/// This instance's lease, granted when first needed and kept alive by a thread until it is
/// revoked: the writer lock and the commit key live on it, so they vanish `ttl` seconds after
/// the process dies.
///
/// `@unchecked Sendable`: every variable is guarded by `lock` (a condition).
final class LeaseKeeper: @unchecked Sendable {
    private let client: EtcdClient
    private let ttl: Int
    private let lock = NSCondition()
    private var current: Int64?
    private var stopped = false
    private var keeper: Thread?
    private var failed = false
    private var chore: (@Sendable () -> Void)?

    init(client: EtcdClient, ttl: Int) {
        self.client = client
        self.ttl = ttl
    }

    /// The live lease's ID, granting one when there is none.
    func id() throws -> Int64 {
        if let current = lock.withLock({ current }) { return current }
        let granted = try client.call(LeaseGrantRequest(ttl: Int64(ttl)), idempotent: true).id
        lock.withLock {
            current = granted
            if keeper == nil {
                // Holds the keeper only while it renews: an engine dropped without close() stops it.
                let thread = Thread { [weak self] in
                    while let keeper = self, keeper.renewOnce() {}
                }
                thread.name = "strata-etcd-lease"
                keeper = thread
                thread.start()
            }
        }
        return granted
    }

    /// Work the keeper's thread does after each renewal (a lock this instance owes a release).
    func onRenewal(_ chore: @escaping @Sendable () -> Void) { lock.withLock { self.chore = chore } }

    /// Forgets a lease the cluster no longer knows.
    func expired(_ id: Int64) {
        lock.withLock { if current == id { current = nil } }
    }

    func revoke() {
        let id: Int64? = lock.withLock {
            stopped = true
            lock.broadcast()
            return current
        }
        if let id {
            _ = try? client.call(LeaseRevokeRequest(id: id), idempotent: true, deadline: .now + .seconds(2))
        }
    }

    deinit { if !stopped { revoke() } }

    /// Waits a third of the TTL (a fifth of a second after a failed renewal, so that one lost
    /// answer does not cost the lease), then renews; returns false once revoked.
    private func renewOnce() -> Bool {
        let period = max(Double(ttl) / 3, 0.2)
        let (stopped, id, chore): (Bool, Int64?, (@Sendable () -> Void)?) = lock.withLock {
            _ = lock.wait(until: Date(timeIntervalSinceNow: failed ? min(period, 0.2) : period))
            return (self.stopped, current, self.chore)
        }
        if stopped { return false }
        guard let id else { return true }
        let answer = try? client.call(LeaseKeepAliveRequest(id: id), idempotent: true, deadline: .now + .seconds(max(ttl / 3, 1)))
        failed = answer == nil
        // An answer naming the lease with no time left: it is gone.
        if let answer, answer.id != 0 && answer.ttl <= 0 {
            expired(id)
        }
        chore?()
        return true
    }
}

/// etcd keeps every revision of every key until its history is compacted, and its backend file
/// keeps the room of compacted revisions until a member is defragmented. A compaction does both
/// for the whole cluster (``EtcdKeySpace/compactAndDefragment()``): it is the cluster's history,
/// shared by every store and client on it, so another client's snapshot older than the current
/// revision can no longer be read (``EtcdError/snapshotCompacted(revision:)``, the transaction is
/// run again). Each step is etcd's own and atomic; the store's keys are not touched.
extension EtcdStorage: CompactingStorage {
    func compact() throws -> CompactionReport {
        let space = try EtcdKeySpace(cluster.options, timeout: cluster.timeout)
        let before = try space.databaseSize()
        try space.compactAndDefragment()
        return CompactionReport(bytesBefore: before, bytesAfter: try space.databaseSize())
    }
}
