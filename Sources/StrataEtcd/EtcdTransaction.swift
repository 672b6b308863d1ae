import Foundation
import StrataEngine

/// A transaction on one etcd revision. A reader reads at the revision current when it began; a
/// writer (holding the writer lock, `token`) reads at the revision it took the lock at, buffers
/// its writes (the core overlays them on its reads) and sends them in one etcd transaction.
final class EtcdTransaction: BufferedStorageWriteTransaction {
    private let storage: EtcdStorage
    private let revision: Int64
    /// The writer lock's token; `nil` for a reader.
    private let token: String?
    private var writes: [(key: [UInt8], value: [UInt8]?)] = []
    private var committed = false

    init(storage: EtcdStorage, revision: Int64, token: String?) {
        self.storage = storage
        self.revision = revision
        self.token = token
    }

    // MARK: Reads

    func get<R>(_ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        let answer = try readRange(storage.layout.data(key), what: "reading a key")
        guard let pair = answer.objects("kvs").first else { return try body(nil) }
        return try pair.bytes("value").withUnsafeBytes { try body($0) }
    }

    /// Pages through the range at the transaction's revision, each page starting after the last
    /// key of the one before; pages grow while the visitor goes on, so a short scan costs one
    /// small request and a long one few. Reverse scans go window by window (see ``scanDescending``).
    func scan(
        _ range: ResolvedRange, reverse: Bool, limit: Int?,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let (start, end) = storage.layout.bounds(range)
        if reverse && !storage.faults.unwindowedReverseScans {
            return try scanDescending(from: start, to: end, limit: limit ?? .max, visit)
        }
        var (low, high) = (start, end)
        var remaining = limit ?? .max
        var page = 64
        while remaining > 0 {
            let answer = try readRange(low, to: high, limit: min(page, remaining), reverse ? Self.descending : [:], what: "scanning")
            if reverse { storage.faults.noteDescendingRead(keys: answer.int64("count")) }
            let (last, done) = try deliver(answer, remaining: &remaining, visit)
            guard !done, let last, answer["more"] as? Bool == true else { return }
            if reverse { high = last } else { low = last + [0] }
            page = min(page * 4, 4096)
        }
    }

    /// A reverse scan of `[start, end)` in windows near the end that each hold about a page of
    /// keys (see ``DescendingWindows``), since etcd 3.4 reads and sorts every key of a descending
    /// request's range, whatever its limit.
    private func scanDescending(
        from start: [UInt8], to end: [UInt8], limit: Int,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var windows = DescendingWindows(start: start)
        var high = end
        var remaining = limit
        var page = 64
        // The lower bound of the last window when it was not read to its end.
        var carried: [UInt8]?
        while remaining > 0 {
            var want = min(page, remaining)
            let low = try carried ?? windows.lowerBound(below: high, want: want, count: { bound in
                try readRange(bound, to: high, ["count_only": true], what: "counting a range").int64("count")
            }, first: { bound in
                try readRange(bound, to: high, limit: 1, ["keys_only": true], what: "scanning").objects("kvs").first?.bytes("key")
            })
            if low == start {
                // etcd reads the whole rest for any limit: take the largest page of it.
                page = 4096
                want = min(page, remaining)
            }
            let answer = try readRange(low, to: high, limit: want, Self.descending, what: "scanning")
            let inWindow = answer.int64("count")
            storage.faults.noteDescendingRead(keys: inWindow)
            if carried == nil { windows.learn(keys: inWindow, from: low, below: high) }
            let (last, done) = try deliver(answer, remaining: &remaining, visit)
            if done { return }
            page = min(page * 4, 4096)
            if let last, answer["more"] as? Bool == true {
                // Read the rest of this window next when it is not much more than a page.
                high = last
                carried = inWindow - Int64(want) <= 4 * Int64(min(page, remaining)) ? low : nil
            } else {
                if low == start { return }  // the window reached the range's start
                high = low
                carried = nil
            }
        }
    }

    /// Hands an answer's pairs to the visitor, as store keys, counting them off `remaining`;
    /// returns the last etcd key handed over, and whether the scan is done (the visitor stopped
    /// or the limit is reached).
    private func deliver(
        _ answer: JSON, remaining: inout Int, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws -> (last: [UInt8]?, done: Bool) {
        var last: [UInt8]?
        for pair in answer.objects("kvs") {
            let key = pair.bytes("key")
            let goOn = try storage.layout.storeKey(key).withUnsafeBytes { k in try pair.bytes("value").withUnsafeBytes { try visit(k, $0) } }
            remaining -= 1
            if !goOn || remaining == 0 { return (key, true) }
            last = key
        }
        return (last, false)
    }

    /// What a descending range request adds.
    private static var descending: JSON { ["sort_order": "DESCEND", "sort_target": "KEY"] }

    /// A range request at the transaction's revision: the key `key`, or the keys of `[key, end)`,
    /// at most `limit` of them (0: all), with `options` (`count_only`, `keys_only`, a sort order).
    private func readRange(_ key: [UInt8], to end: [UInt8]? = nil, limit: Int = 0, _ options: JSON = [:], what: String) throws -> JSON {
        var request = Txn.rangeRequest(key, end: end, limit: limit).merging(options) { $1 }
        request["revision"] = String(revision)
        do {
            return try storage.call("/v3/kv/range", request, idempotent: true, what: what)
        } catch let error as EtcdServerError where error.isCompacted {
            throw EtcdError.snapshotCompacted(revision: revision)
        }
    }

    // MARK: Writes

    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
        writes.append((Array(key), Array(value)))
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        writes.append((Array(key), nil))
    }

    func replayBufferedWrites(_ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer?) -> Void) {
        for write in writes {
            write.key.withUnsafeBytes { key in
                if let value = write.value { value.withUnsafeBytes { visit(key, $0) } } else { visit(key, nil) }
            }
        }
    }

    /// Sends the writes (the last one of each key) in one etcd transaction that also writes this
    /// instance's commit token and frees the lock, on condition that the lock is still ours.
    func commit() throws {
        guard let token else { return }
        var last: [[UInt8]: [UInt8]?] = [:]
        for write in writes { last[write.key] = write.value }
        var ops: [JSON] = []
        ops.reserveCapacity(last.count + 2)
        for (key, value) in last {
            let etcdKey = key.withUnsafeBytes { storage.layout.data($0) }
            ops.append(value.map { Txn.put(etcdKey, $0) } ?? Txn.delete(etcdKey))
        }
        // Nothing to write: only the lock to give back (end() does).
        guard !ops.isEmpty else { return }
        let tokenBytes = Array(token.utf8)
        let commitKey = storage.layout.commit(instance: storage.instance)
        let lease = try storage.leaseID()
        ops.append(Txn.put(commitKey, tokenBytes, lease: lease))
        ops.append(Txn.delete(storage.layout.lock))
        let request: JSON = ["compare": [Txn.holds(storage.layout.lock, tokenBytes)], "success": ops]
        do {
            storage.compactHistory(after: try send(request, deadline: ContinuousClock.now + storage.client.timeout))
        } catch let ambiguous as Ambiguous {
            // Resolving gets a timeout of its own: the send may have used all of its own.
            try resolve(request, token: tokenBytes, commitKey: commitKey, lease: lease, firstProblem: ambiguous.detail,
                        deadline: ContinuousClock.now + storage.client.timeout)
        }
        committed = true
    }

    /// Sends the commit once: returns the revision it applied at, throws ``Ambiguous`` when its
    /// outcome is unknown, and `mustRetry` when the lock was no longer ours (nothing applied).
    @discardableResult
    private func send(_ request: JSON, deadline: ContinuousClock.Instant) throws -> Int64 {
        if storage.faults.takeLostRequest() {
            throw Ambiguous(detail: "the commit request was lost before it reached the cluster (injected fault)")
        }
        if storage.faults.takeLostAnswer() {
            _ = try? storage.call("/v3/kv/txn", request, idempotent: false, deadline: deadline, what: "committing")
            throw Ambiguous(detail: "the answer to the commit was lost (injected fault)")
        }
        let answer: JSON
        do {
            answer = try storage.call("/v3/kv/txn", request, idempotent: false, deadline: deadline, what: "committing")
        } catch let error as EtcdServerError where error.isLeaseNotFound {
            throw lockLost()  // the lock lived on that lease
        }
        guard answer.succeeded else { throw lockLost() }
        return answer.revision
    }

    private func lockLost() -> EngineError {
        .mustRetry(reason: "the store's writer lock expired before the commit (the lease of \(storage.leaseTTL) s was not renewed in time); nothing was written")
    }

    /// Learns whether a commit whose answer was lost applied. The commit key holds the token of
    /// the last commit of this instance; the lock still holds ours while it has not applied (then
    /// the same request is sent again: only one copy can apply, since the first to apply frees
    /// the lock the other requires). When neither holds our token while the lease the commit key
    /// lives on is still alive, it never applied and never will (tokens are never reused). Any
    /// other answer, or none before the deadline, is ``EtcdError/commitOutcomeUnknown(detail:)``:
    /// once the outcome is unknown, only proof turns it into success or `mustRetry`.
    private func resolve(_ request: JSON, token tokenBytes: [UInt8], commitKey: [UInt8], lease: Int64, firstProblem: String, deadline: ContinuousClock.Instant) throws {
        var problem = firstProblem
        while ContinuousClock.now < deadline {
            let state: JSON
            do {
                state = try storage.txn(success: [Txn.range(commitKey), Txn.range(storage.layout.lock)], idempotent: true, deadline: deadline,
                                        what: "learning a commit's outcome")
            } catch {
                problem = "\(error)"
                Thread.sleep(forTimeInterval: 0.05)
                continue
            }
            if !storage.faults.skipCommitTokenCheck && state.rangeValue(0) == tokenBytes { return }
            if state.rangeValue(1) != tokenBytes {
                // The commit key is absent: proof that the commit never applied only while the
                // lease it would live on is alive (it vanishes with the lease).
                let alive: Bool
                do {
                    alive = try storage.leaseIsAlive(lease, deadline: deadline)
                } catch {
                    problem = "\(error)"
                    continue
                }
                guard alive else {
                    throw EtcdError.commitOutcomeUnknown(detail: "the lease holding the commit token expired before the outcome was read")
                }
                throw lockLost()
            }
            do {
                try send(request, deadline: deadline)
                return
            } catch {
                problem = "\(error)"  // whatever the resend met, the next look tells
            }
        }
        throw EtcdError.commitOutcomeUnknown(detail: problem)
    }

    func end() {
        if let token, !committed { storage.releaseLock(token: token) }
    }
}
