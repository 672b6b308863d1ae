import Foundation
@_spi(StrataInternals) import StrataEngine

/// The changes to a range of the cluster's keys from a revision on: one stream that outlives
/// the members carrying it.
///
/// A member ends a watch by failing (killed, left without a leader) or by cancelling it; a member
/// that freezes or is cut off says nothing, so the stream asks for progress every 5 s and counts
/// one silent for ``silenceLimit`` as failed. Then the watch opens again on the next endpoint,
/// from the revision after the last change it received, after a pause that grows while members
/// keep failing (50 ms to 1 s): every
/// change is delivered once, in revision order, whichever members carried it (etcd sends all
/// the changes of one revision in one message). When the revisions it still needs were
/// compacted away, it fails with ``EtcdError/historyCompacted(from:compactedTo:)``: the
/// changes in between can no longer be told.
///
/// Reading blocks, as the engine does: ``next(until:)`` waits for changes up to a deadline.
/// Messages arrive on the transport's threads and wait in the watch until read; the watch
/// never calls the client while holding its lock (a message's thread may be waiting for it).
///
/// `@unchecked Sendable`: every `var` is guarded by `condition`.
final class EtcdWatch: @unchecked Sendable {
    private let client: EtcdClient
    private let key: [UInt8]
    private let rangeEnd: [UInt8]?
    private let condition = NSCondition()
    private var received: [WatchEvent] = []
    /// The first revision not received yet (0 until the first stream opens: then the revision
    /// after the cluster's current one).
    private var from: Int64
    private var stream: (any EtcdStream)?
    /// A stream is being opened (outside the lock).
    private var opening = false
    /// Counts the streams opened: messages of an earlier one are ignored.
    private var generation = 0
    /// Streams that failed, counted round the endpoints: the next one opens on the next member.
    private var attempt = 0
    private var retryAt = ContinuousClock.now
    private var pause: Duration = .zero
    private var failure: EtcdError?
    private var cancelled = false
    /// When the open stream last brought a message (or opened).
    private var lastHeard = ContinuousClock.now

    /// How long an open stream may stay silent before it counts as failed: three of its
    /// progress requests unanswered.
    static let silenceLimit = GRPCTransport.watchProgressInterval * 3
    /// Why the last stream ended (for diagnostics).
    private(set) var lastProblem: String?

    /// A watch of `key`, or of the keys of `[key, rangeEnd)`, from revision `from` (0: from
    /// the revision after the cluster's current one when the first stream opens).
    init(client: EtcdClient, key: [UInt8], rangeEnd: [UInt8]? = nil, from: Int64) {
        self.client = client
        self.key = key
        self.rangeEnd = rangeEnd
        self.from = from
    }

    deinit { cancel() }

    /// The changes received since the previous call, in revision order; waits for some until
    /// `deadline` and returns none then. Throws ``EtcdError/historyCompacted(from:compactedTo:)``
    /// once the revisions it needs are gone. After ``cancel()``, returns none at once.
    func next(until deadline: ContinuousClock.Instant) throws -> [WatchEvent] {
        condition.lock()
        defer { condition.unlock() }
        while !cancelled {
            if let failure { throw failure }
            if !received.isEmpty {
                defer { received = [] }
                return received
            }
            let now = ContinuousClock.now
            if stream == nil && !opening && now >= retryAt {
                open(by: deadline)
                continue
            }
            if stream != nil && now - lastHeard > Self.silenceLimit {
                broken("no answer to the watch's progress requests for \(Self.silenceLimit) (a member frozen or cut off)")
                continue
            }
            if now >= deadline { break }
            let until = stream == nil && !opening ? min(deadline, retryAt) : min(deadline, lastHeard + Self.silenceLimit)
            _ = condition.wait(until: Date(timeIntervalSinceNow: now.duration(to: until).secondsValue))
        }
        return []
    }

    /// Ends the watch: its stream is cancelled, and ``next(until:)`` returns none.
    func cancel() {
        condition.lock()
        let open = stream
        stream = nil
        cancelled = true
        condition.broadcast()
        condition.unlock()
        open?.cancel()
    }

    /// Opens the next stream by `deadline` (called with the lock held; releases it meanwhile).
    /// A watch from "the next revision" first learns which that is, so that a stream that fails
    /// before saying it cannot make the next one skip what was committed in between.
    private func open(by deadline: ContinuousClock.Instant) {
        generation += 1
        let mine = generation
        var start = from
        let attempt = self.attempt
        opening = true
        condition.unlock()
        var opened: (any EtcdStream)?
        var problem: String?
        do {
            if start == 0 {
                start = try client.call(RangeRequest(key: key, countOnly: true), idempotent: true, deadline: deadline).header.revision + 1
            }
            let request = WatchRequest(key: key, rangeEnd: rangeEnd, startRevision: start)
            opened = try client.watch(request, attempt: attempt, deadline: deadline) { [weak self] endpoint, message in
                self?.take(message, from: endpoint, generation: mine)
            }
        } catch {
            problem = "opening the watch: \(error)"
        }
        condition.lock()
        defer { condition.broadcast() }
        opening = false
        if from == 0 { from = start }
        if let problem {
            broken(problem)
        } else if cancelled || generation != mine || failure != nil {
            opened?.cancel()
        } else {
            stream = opened
            lastHeard = .now
        }
    }

    /// A message of the stream `mine`, or its end.
    private func take(_ message: Result<WatchResponse, EtcdCallError>, from endpoint: EtcdEndpoint, generation mine: Int) {
        var invalidToken = false
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
            if invalidToken { client.forgetToken() }
        }
        guard mine == generation, !cancelled, failure == nil else { return }
        lastHeard = .now
        switch message {
        case .success(let answer):
            if answer.compactRevision > 0 {
                failure = .historyCompacted(from: from, compactedTo: answer.compactRevision)
                stream?.cancel()
                stream = nil
            } else if answer.canceled {
                // etcd refuses a watch (a token expired, a permission missing) by cancelling it.
                invalidToken = EtcdServerError(code: 0, message: answer.cancelReason).kind == .invalidToken
                broken("\(endpoint): the member cancelled the watch (\(answer.cancelReason))")
            } else if let problem = WatchRequest(key: key, rangeEnd: rangeEnd, startRevision: from).problem(with: answer) {
                // Not what etcd sends: the member is failing (or is not etcd); the next one takes over.
                broken("\(endpoint): \(problem)")
            } else {
                // A stream opened at `from` sends nothing older; a later stream of a member that
                // lags sends nothing older either: etcd answers from the revision asked for.
                let fresh = answer.events.filter { $0.revision >= from }
                if let last = fresh.last {
                    from = last.revision + 1
                    received += fresh
                }
                pause = .zero
            }
        case .failure(let error):
            if case .server(let refusal) = error, refusal.kind == .invalidToken { invalidToken = true }
            broken("\(endpoint): \(error)")
        }
    }

    /// The stream ended: the next one opens on the next member, after a pause.
    private func broken(_ problem: String) {
        stream?.cancel()
        stream = nil
        generation += 1
        attempt += 1
        pause = min(max(pause * 2, .milliseconds(50)), .seconds(1))
        retryAt = .now + pause
        lastProblem = problem
    }
}

/// Wakes a process when another engine instance commits to the same etcd store: every commit
/// writes its instance's commit token (`N 00 "commit/" ID`, ``EtcdLayout``), so a watch of those
/// keys, but this instance's own, sees each commit of the others as it applies.
final class EtcdCommitSignal: CommitSignal {
    private let client: EtcdClient
    private let layout: EtcdLayout
    private let own: [UInt8]
    private let watch: Locked<EtcdWatch?>

    init(client: EtcdClient, layout: EtcdLayout, instance: String) {
        self.client = client
        self.layout = layout
        own = layout.commit(instance: instance)
        watch = Locked(Self.watch(client, layout))
    }

    private static func watch(_ client: EtcdClient, _ layout: EtcdLayout) -> EtcdWatch {
        let tokens = layout.commit(instance: "")
        return EtcdWatch(client: client, key: tokens, rangeEnd: successorOfPrefix(tokens), from: 0)
    }

    func wait(upTo timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        while let watch = watch.withLock({ $0 }) {
            do {
                let changes = try watch.next(until: deadline)
                if changes.isEmpty || changes.contains(where: { $0.key != own }) { return }
            } catch {
                // Compacted past what it had read: those commits are in the change feed, which
                // the caller reads now; watch on from the cluster's next revision.
                self.watch.withLock { $0 = $0 == nil ? nil : Self.watch(client, layout) }
                return
            }
        }
    }

    func close() {
        watch.withLock { watch in
            defer { watch = nil }
            return watch
        }?.cancel()
    }
}
