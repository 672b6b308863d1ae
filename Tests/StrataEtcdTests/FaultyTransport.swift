import Foundation
@_spi(StrataInternals) import StrataEngine
@_spi(Testing) @testable import StrataEtcd

/// A transport with the faults a network, a cluster or a broken client would have: the engine's
/// own transport inside, each fault switched on by a test. Only the tests link it (as LevelDB's
/// fault-injection `Env` wraps the real one); the engine has no fault switch of its own.
///
/// - Lost requests and answers: the engine sees what a broken connection shows, `mayHaveApplied`.
/// - The broken variants of the engine's algorithms, made from the outside: an answer that hides
///   a commit's token (the resolution cannot see that its commit applied), attempts that ignore
///   the client's per-attempt deadline (no failover slices), descending requests widened to the
///   start of the store's keys (etcd reads the whole rest of the range, as for a client without
///   windows; the answer is cut back to the range asked for); and lock releases that fail.
/// - A count of the keys etcd read for descending requests (each one's range, whatever its
///   limit): the cost of reverse scans on etcd 3.4.
// Unchecked: each switch is a `Guarded` box (its own lock), never replaced.
final class FaultyTransport: EtcdTransport, @unchecked Sendable {
    private let wrapped: any EtcdTransport
    private let layout: EtcdLayout
    /// Which requests may be lost (the others always pass): the commits, which write an engine
    /// instance's commit token.
    private let commitTokens: [UInt8]

    /// The next `n` commits are lost before they are sent.
    @Guarded var loseRequests = 0
    /// The next `n` commits are sent and applied, and their answers lost.
    @Guarded var loseAnswers = 0
    /// Answers the read that learns a lost commit's outcome as if the commit key were absent.
    @Guarded var hideCommitTokens = false
    /// The next `n` releases of the writer lock (a rollback's, and their retries at lease
    /// renewals) fail before they are sent, as when the cluster cannot be reached.
    @Guarded var failLockReleases = 0
    /// Every attempt may take this long, whatever deadline the client gave it.
    @Guarded var attemptsLast: Duration? = nil
    /// Descending range requests start at the store's first key instead of their own (their
    /// answers cut back to what was asked).
    @Guarded var widenDescending = false
    /// The keys etcd read to answer descending range requests.
    @Guarded var descendingKeysRead: Int64 = 0

    init(_ wrapped: any EtcdTransport, prefix: String) {
        self.wrapped = wrapped
        layout = EtcdLayout(prefix: prefix)
        commitTokens = layout.commit(instance: "")
    }

    func send<R: EtcdRequest>(_ request: R, to endpoint: EtcdEndpoint, token: String?,
                              deadline: ContinuousClock.Instant) throws(EtcdCallError) -> R.Response {
        let deadline = attemptsLast.map { .now + $0 } ?? deadline
        if var range = request as? RangeRequest, range.descending {
            let asked = range.key
            let dataStart = layout.namespace + [1]
            if widenDescending && dataStart.lexicographicallyPrecedes(asked) { range.key = dataStart }
            var answer = try wrapped.send(range, to: endpoint, token: token, deadline: deadline)
            _descendingKeysRead.update { $0 += answer.count }
            if range.key != asked {
                // The keys below the range asked for are cut off; etcd read them all the same.
                let asked = answer.kvs.prefix { !$0.key.lexicographicallyPrecedes(asked) }
                answer.more = answer.more && asked.count == answer.kvs.count
                answer.kvs = Array(asked)
            }
            return answer as! R.Response  // `R` is `RangeRequest`
        }
        guard let txn = request as? TxnRequest else { return try wrapped.send(request, to: endpoint, token: token, deadline: deadline) }
        if txn.success == [.remove(layout.lock)] && _failLockReleases.take() {
            throw .server(EtcdServerError(code: 9, message: "FaultyTransport failed this lock release"))
        }
        let isCommit = txn.success.contains { op in
            if case .put(let put) = op { return put.key.starts(with: commitTokens) }
            return false
        }
        if isCommit && _loseRequests.take() {
            throw .mayHaveApplied("\(endpoint): the connection broke as the request was written (FaultyTransport lost it)")
        }
        var answer = try wrapped.send(txn, to: endpoint, token: token, deadline: deadline)
        if isCommit && _loseAnswers.take() {
            throw .mayHaveApplied("\(endpoint): the connection broke before the answer arrived (FaultyTransport lost it)")
        }
        if hideCommitTokens, txn.success.count == 2, case .range(let read) = txn.success[0], read.key.starts(with: commitTokens),
           txn.success[1] == .get(layout.lock) {
            answer.responses[0] = .range(RangeResponse(header: answer.header))
        }
        return answer as! R.Response  // `R` is `TxnRequest`
    }

    func watch(_ request: WatchRequest, on endpoint: EtcdEndpoint, token: String?,
               receive: @escaping @Sendable (Result<WatchResponse, EtcdCallError>) -> Void) throws(EtcdCallError) -> any EtcdStream {
        try wrapped.watch(request, on: endpoint, token: token, receive: receive)
    }

    func close() { wrapped.close() }

    /// Opens the etcd store at `prefix` over a faulty transport (no fault switched on yet).
    static func engine(prefix: String, options: EngineOptions = EngineOptions(), etcd: EtcdOptions) throws -> (EtcdEngine, FaultyTransport) {
        let made = Locked<FaultyTransport?>(nil)
        let engine = try EtcdEngine(prefix: prefix, options: options, etcd: etcd) { transport in
            let wrapper = FaultyTransport(transport, prefix: prefix)
            made.withLock { $0 = wrapper }
            return wrapper
        }
        return (engine, made.withLock { $0! })
    }
}
