import Foundation
@_spi(StrataInternals) import StrataEngine
@_spi(Testing) @testable import StrataEtcd

/// A transport that loses what a network loses: the engine's own transport inside, with
/// requests dropped before they leave and answers dropped after the cluster applied the
/// request. The engine sees what it would see from a network that failed: `mayHaveApplied`.
/// Only the tests link it (as LevelDB's fault-injection `Env` wraps the real one).
final class LossyTransport: EtcdTransport, @unchecked Sendable {
    private let wrapped: any EtcdTransport
    /// Which requests may be lost (the others always pass).
    private let affects: @Sendable (any EtcdRequest) -> Bool
    /// The next `n` affected requests are lost before they are sent.
    @Guarded var loseRequests = 0
    /// The next `n` affected requests are sent and applied, and their answers lost.
    @Guarded var loseAnswers = 0

    init(_ wrapped: any EtcdTransport, affecting affects: @escaping @Sendable (any EtcdRequest) -> Bool) {
        self.wrapped = wrapped
        self.affects = affects
    }

    func send<R: EtcdRequest>(_ request: R, to endpoint: EtcdEndpoint, token: String?,
                              deadline: ContinuousClock.Instant) throws(EtcdCallError) -> R.Response {
        guard affects(request) else { return try wrapped.send(request, to: endpoint, token: token, deadline: deadline) }
        if _loseRequests.take() {
            throw .mayHaveApplied("\(endpoint): the connection broke as the request was written (LossyTransport lost it)")
        }
        let answer = try wrapped.send(request, to: endpoint, token: token, deadline: deadline)
        if _loseAnswers.take() {
            throw .mayHaveApplied("\(endpoint): the connection broke before the answer arrived (LossyTransport lost it)")
        }
        return answer
    }

    func watch(_ request: WatchRequest, on endpoint: EtcdEndpoint, token: String?,
               receive: @escaping @Sendable (Result<WatchResponse, EtcdCallError>) -> Void) throws(EtcdCallError) -> any EtcdStream {
        try wrapped.watch(request, on: endpoint, token: token, receive: receive)
    }

    func close() { wrapped.close() }

    /// Opens the etcd store at `prefix` over a lossy transport that affects its commits (the
    /// transactions that write an engine instance's commit token).
    static func engine(prefix: String, etcd: EtcdOptions) throws -> (EtcdEngine, LossyTransport) {
        let commitTokens = EtcdLayout(prefix: prefix).commit(instance: "")
        let lossy = Locked<LossyTransport?>(nil)
        let engine = try EtcdEngine(prefix: prefix, options: EngineOptions(), etcd: etcd) { transport in
            let wrapper = LossyTransport(transport) { request in
                guard let txn = request as? TxnRequest else { return false }
                return txn.success.contains { op in
                    if case .put(let put) = op { return put.key.starts(with: commitTokens) }
                    return false
                }
            }
            lossy.withLock { $0 = wrapper }
            return wrapper
        }
        return (engine, lossy.withLock { $0! })
    }
}
