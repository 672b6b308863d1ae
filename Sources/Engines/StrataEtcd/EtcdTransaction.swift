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
        let answer = try readRange(RangeRequest(key: storage.layout.data(key)), what: "reading a key")
        guard let pair = answer.kvs.first else { return try body(nil) }
        return try pair.value.withUnsafeBytes { try body($0) }
    }

    /// Pages through the range at the transaction's revision, each page starting after the last
    /// key of the one before; pages grow while the visitor goes on, so a short scan costs one
    /// small request and a long one few. Reverse scans go window by window (see ``scanDescending``).
    func scan(
        _ range: ResolvedRange, reverse: Bool, limit: Int?,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let (start, end) = storage.layout.bounds(range)
        if reverse { return try scanDescending(from: start, to: end, limit: limit ?? .max, visit) }
        var low = start
        var remaining = limit ?? .max
        var page = 64
        while remaining > 0 {
            let answer = try readRange(RangeRequest(key: low, rangeEnd: end, limit: Int64(min(page, remaining))), what: "scanning")
            let (last, done) = try deliver(answer, remaining: &remaining, visit)
            guard !done, let last, answer.more else { return }
            low = last + [0]
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
                try readRange(RangeRequest(key: bound, rangeEnd: high, countOnly: true), what: "counting a range").count
            }, first: { bound in
                try readRange(RangeRequest(key: bound, rangeEnd: high, limit: 1, keysOnly: true), what: "scanning").kvs.first?.key
            })
            if low == start {
                // etcd reads the whole rest for any limit: take the largest page of it.
                page = 4096
                want = min(page, remaining)
            }
            let answer = try readRange(RangeRequest(key: low, rangeEnd: high, limit: Int64(want), descending: true), what: "scanning")
            let inWindow = answer.count
            if carried == nil { windows.learn(keys: inWindow, from: low, below: high) }
            let (last, done) = try deliver(answer, remaining: &remaining, visit)
            if done { return }
            page = min(page * 4, 4096)
            if let last, answer.more {
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
        _ answer: RangeResponse, remaining: inout Int, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws -> (last: [UInt8]?, done: Bool) {
        var last: [UInt8]?
        for pair in answer.kvs {
            let goOn = try storage.layout.storeKey(pair.key).withUnsafeBytes { k in try pair.value.withUnsafeBytes { try visit(k, $0) } }
            remaining -= 1
            if !goOn || remaining == 0 { return (pair.key, true) }
            last = pair.key
        }
        return (last, false)
    }

    /// `request` at the transaction's revision.
    private func readRange(_ request: RangeRequest, what: String) throws -> RangeResponse {
        var request = request
        request.revision = revision
        do {
            return try storage.call(request, idempotent: true, what: what)
        } catch let error as EtcdServerError where error.kind == .compacted {
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
        var ops: [RequestOp] = []
        ops.reserveCapacity(last.count + 2)
        for (key, value) in last {
            let etcdKey = key.withUnsafeBytes { storage.layout.data($0) }
            ops.append(value.map { .set(etcdKey, $0) } ?? .remove(etcdKey))
        }
        // Nothing to write: only the lock to give back (end() does).
        guard !ops.isEmpty else { return }
        let tokenBytes = Array(token.utf8)
        let commitKey = storage.layout.commit(instance: storage.instance)
        let lease = try storage.leaseID()
        ops.append(.set(commitKey, tokenBytes, lease: lease))
        ops.append(.remove(storage.layout.lock))
        let request = TxnRequest(compare: [.holds(storage.layout.lock, value: tokenBytes)], success: ops)
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
    private func send(_ request: TxnRequest, deadline: ContinuousClock.Instant) throws -> Int64 {
        let answer: TxnResponse
        do {
            answer = try storage.call(request, idempotent: false, deadline: deadline, what: "committing")
        } catch let error as EtcdServerError where error.kind == .leaseNotFound {
            throw lockLost()  // the lock lived on that lease
        }
        guard answer.succeeded else { throw lockLost() }
        return answer.header.revision
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
    private func resolve(_ request: TxnRequest, token tokenBytes: [UInt8], commitKey: [UInt8], lease: Int64, firstProblem: String, deadline: ContinuousClock.Instant) throws {
        var problem = firstProblem
        while ContinuousClock.now < deadline {
            let state: TxnResponse
            do {
                state = try storage.txn(success: [.get(commitKey), .get(storage.layout.lock)], idempotent: true, deadline: deadline,
                                        what: "learning a commit's outcome")
            } catch {
                problem = "\(error)"
                Thread.sleep(forTimeInterval: 0.05)
                continue
            }
            if state.rangeValue(0) == tokenBytes { return }
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
