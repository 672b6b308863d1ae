import Foundation
import StrataConformance
@_spi(StrataInternals) import StrataEngine
@_spi(Testing) @testable import StrataEtcd
import Testing

/// A transport that damages the next range answer as a failing member (or something that is
/// not etcd) could: the engine's own transport inside. Only the tests link it.
final class DamagingTransport: EtcdTransport, @unchecked Sendable {
    /// What a damaged answer breaks of etcd's promises.
    enum Damage: CaseIterable {
        case shortKey, keyBelowRange, keyPastRange, outOfOrder, overLimit, revisionZero, moreWithoutKeys, negativeCount, otherKey
    }

    private let wrapped: any EtcdTransport
    /// The damage to do to the next range answer it applies to (then cleared).
    @Guarded var next: Damage? = nil
    /// Whether the last armed damage was done (some do not apply to every answer: two keys are
    /// needed to swap them).
    @Guarded var done = false

    init(_ wrapped: any EtcdTransport) { self.wrapped = wrapped }

    func send<R: EtcdRequest>(_ request: R, to endpoint: EtcdEndpoint, token: String?,
                              deadline: ContinuousClock.Instant) throws(EtcdCallError) -> R.Response {
        let answer = try wrapped.send(request, to: endpoint, token: token, deadline: deadline)
        guard let range = request as? RangeRequest, var damaged = answer as? RangeResponse, let damage = next else { return answer }
        guard apply(damage, to: &damaged, for: range) else { return answer }
        next = nil
        done = true
        // `R.Response` is `RangeResponse` here (`request` is a range).
        return damaged as! R.Response
    }

    /// Damages `answer`; false when `damage` does not apply to it.
    private func apply(_ damage: Damage, to answer: inout RangeResponse, for request: RangeRequest) -> Bool {
        let value: [UInt8] = request.keysOnly ? [] : [7]
        switch damage {
        case .shortKey:
            guard !request.countOnly else { return false }
            answer.kvs.insert(KeyValue(key: [1], value: value), at: 0)
        case .keyBelowRange:
            guard !request.countOnly, request.rangeEnd != nil, !request.key.isEmpty else { return false }
            answer.kvs.insert(KeyValue(key: Array(request.key.dropLast()), value: value), at: request.descending ? answer.kvs.count : 0)
        case .keyPastRange:
            guard !request.countOnly, let end = request.rangeEnd, end != [0] else { return false }
            answer.kvs.insert(KeyValue(key: end, value: value), at: request.descending ? 0 : answer.kvs.count)
            answer.count += 1
        case .outOfOrder:
            guard answer.kvs.count >= 2 else { return false }
            answer.kvs.swapAt(0, 1)
        case .overLimit:
            guard request.limit > 0, answer.kvs.count == Int(request.limit), let last = answer.kvs.last else { return false }
            answer.kvs.append(last)
        case .revisionZero:
            answer.header.revision = 0
        case .moreWithoutKeys:
            guard !request.countOnly else { return false }
            answer.kvs = []
            answer.more = true
        case .negativeCount:
            answer.count = -1
        case .otherKey:
            guard request.rangeEnd == nil, !request.countOnly else { return false }
            answer.kvs = [KeyValue(key: request.key + [0], value: value)]
        }
        return true
    }

    func watch(_ request: WatchRequest, on endpoint: EtcdEndpoint, token: String?,
               receive: @escaping @Sendable (Result<WatchResponse, EtcdCallError>) -> Void) throws(EtcdCallError) -> any EtcdStream {
        try wrapped.watch(request, on: endpoint, token: token, receive: receive)
    }

    func close() { wrapped.close() }
}

@Suite("etcd answers that break etcd's promises", .serialized)
struct HostileAnswerTests {
    /// Random reads (point reads, scans both ways with and without limits) each with a random
    /// damage to one of its range answers: every damaged read ends in `unexpectedAnswer` (never a
    /// crash, never wrong data), every undamaged one reads what was written, and the store reads
    /// whole afterwards. Seeded: a failure names its seed.
    @Test("a damaged range answer is a typed error, never a crash or wrong data", arguments: [1, 2, 3] as [UInt64])
    func damagedAnswersAreRefused(seed: UInt64) throws {
        let damaging = Locked<DamagingTransport?>(nil)
        let engine = try EtcdEngine(prefix: Clusters.prefix("hostile"), options: EngineOptions(mode: .create),
                                    etcd: Clusters.options(Clusters.defaults)) { transport in
            let wrapper = DamagingTransport(transport)
            damaging.withLock { $0 = wrapper }
            return wrapper
        }
        defer { try? engine.close() }
        let transport = damaging.withLock { $0! }
        let model = (0..<40).map { i in (key: Array(String(format: "k%03d", i).utf8), value: Array("value \(i)".utf8)) }
        try engine.write { tx in for pair in model { try tx.put(pair.value, forKey: pair.key) } }

        var random = SeededRandom(seed: seed)
        var refused = 0
        for round in 0..<TestScale.count(60, full: 600) {
            let damage = DamagingTransport.Damage.allCases.randomElement(using: &random)!
            let from = Int.random(in: 0..<model.count, using: &random)
            let limit = Bool.random(using: &random) ? Int.random(in: 1...10, using: &random) : nil
            let reverse = Bool.random(using: &random)
            let pointRead = Int.random(in: 0..<4, using: &random) == 0
            transport.done = false
            transport.next = damage
            let expected: [[UInt8]]
            let read: () throws -> [[UInt8]]
            if pointRead {
                expected = [model[from].value]
                read = { try engine.read { tx in try tx.get(model[from].key).map { [$0] } ?? [] } }
            } else {
                var keys = model.map(\.key).filter { reverse ? $0.lexicographicallyPrecedes(model[from].key) : !$0.lexicographicallyPrecedes(model[from].key) }
                if reverse { keys.reverse() }
                expected = Array(keys.prefix(limit ?? .max))
                let range = reverse ? KeyRange(upper: .exclusive(model[from].key)) : KeyRange(lower: .inclusive(model[from].key))
                read = { try engine.read { tx in try tx.keys(range, reverse: reverse, limit: limit) } }
            }
            do {
                let got = try read()
                #expect(!transport.done, "seed \(seed) round \(round): \(damage) was done and the read returned \(got.count) results")
                #expect(got == expected, "seed \(seed) round \(round): an undamaged read")
            } catch EtcdError.unexpectedAnswer(_, let detail) {
                #expect(transport.done, "seed \(seed) round \(round): refused an answer that was not damaged: \(detail)")
                refused += 1
            }
            transport.next = nil
        }
        #expect(refused > 0, "seed \(seed): some damage was done")
        #expect(try engine.read { tx in try tx.keys().count } == model.count)
        #expect(try engine.read { tx in try tx.get(model[7].key) } == model[7].value)
    }
}
