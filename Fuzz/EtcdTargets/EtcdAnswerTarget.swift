import Foundation
import FuzzSupport
import StrataEngine
@testable import StrataEtcd
import SwiftProtobuf

/// etcd's answers as a member could send them (protobuf bytes, decoded by swift-protobuf), mapped
/// to the engine's messages (`WireMessages.swift`) and checked against what etcd promises
/// (`AnswerCheck.swift`), and etcd's error texts classified (`EtcdServerError.Kind`). Must never
/// crash; and an answer the check lets through must be one the engine can read without a trap:
/// every key of a store range inside the range asked for, so inside the store's data keys (the
/// engine cuts the namespace off each one), in the order asked for, no more than the limit.
enum EtcdAnswerTarget {
    static let target = FuzzTarget(name: "etcd", run: run, seeds: seeds)

    static let layout = EtcdLayout(prefix: "fuzz")

    /// The range requests the engine sends for a store's keys: a point read, scans both ways with a
    /// limit, the first key of a window (keys only) and a count.
    static var requests: [RangeRequest] {
        let (start, end) = (layout.namespace + [1], layout.namespace + [2])
        return [
            RangeRequest(key: layout.namespace + [1, 0x61], revision: 9),
            RangeRequest(key: start, rangeEnd: end, limit: 64, revision: 9),
            RangeRequest(key: start, rangeEnd: end, limit: 64, revision: 9, descending: true),
            RangeRequest(key: start, rangeEnd: end, limit: 1, revision: 9, keysOnly: true),
            RangeRequest(key: start, rangeEnd: end, revision: 9, countOnly: true),
        ]
    }

    static func run(_ bytes: UnsafeRawBufferPointer) {
        var input = InputReader(bytes)
        let kind = input.byte() % 4
        let choice = Int(input.byte())
        let message = Data(input.rest())
        switch kind {
        case 0:
            guard let wire = try? Etcdserverpb_RangeResponse(serializedBytes: message) else { return }
            let request = requests[choice % requests.count]
            let answer = RangeRequest.answer(wire)
            if answer.kvs.count != wire.kvs.count || answer.count != wire.count || answer.more != wire.more {
                violated("a range answer's mapping lost pairs or fields")
            }
            if request.problem(with: answer) == nil { readable(answer, for: request) }
        case 1:
            guard let wire = try? Etcdserverpb_TxnResponse(serializedBytes: message) else { return }
            let request = TxnRequest(compare: [.absent(layout.marker)], success: [.get(layout.marker), .range(requests[choice % requests.count])],
                                     failure: [.get(layout.marker)])
            let answer = TxnRequest.answer(wire)
            if answer.responses.count != wire.responses.count { violated("a transaction answer's mapping lost operations") }
            guard request.problem(with: answer) == nil else { return }
            let ops = answer.succeeded ? request.success : request.failure
            for (i, op) in ops.enumerated() {
                guard case .range(let range) = op else { continue }
                // What the engine reads of a transaction's ranges.
                _ = answer.rangeValue(i)
                readable(RangeResponse(header: answer.header, kvs: answer.rangePairs(i), more: false, count: Int64(answer.rangePairs(i).count)), for: range)
            }
        case 2:
            guard let wire = try? Etcdserverpb_WatchResponse(serializedBytes: message) else { return }
            let commits = layout.commit(instance: "")
            let request = WatchRequest(key: commits, rangeEnd: successorOfPrefix(commits), startRevision: Int64(choice))
            let answer = WatchRequest.answer(wire)
            if answer.events.count != wire.events.count { violated("a watch answer's mapping lost events") }
            guard request.problem(with: answer) == nil else { return }
            var previous: Int64 = 1
            for event in answer.events {
                if !event.key.starts(with: commits) { violated("a watch answer let through a key outside the watched keys") }
                if event.revision < previous { violated("a watch answer let through revisions going back") }
                previous = event.revision
            }
        default:
            // etcd's errors: any code and text is classified, the same way every time.
            let text = String(decoding: message, as: UTF8.self)
            let error = EtcdServerError(code: choice, message: text)
            if EtcdServerError(code: choice, message: text).kind != error.kind { violated("an error's classification changed") }
            _ = error.mayHaveApplied
            _ = error.description
        }
    }

    /// What the engine does with a range answer the check let through, with its own invariants:
    /// each key is in the range, in order, not past the limit, and a store key follows from it.
    static func readable(_ answer: RangeResponse, for request: RangeRequest) {
        if request.limit > 0 && answer.kvs.count > request.limit { violated("more pairs than the limit let through") }
        var previous: [UInt8]?
        for pair in answer.kvs {
            if let end = request.rangeEnd {
                if Bytewise.compare(pair.key, request.key) < 0 || Bytewise.compare(pair.key, end) >= 0 {
                    violated("a key outside the range let through")
                }
            } else if pair.key != request.key {
                violated("another key than the one read let through")
            }
            if let previous, Bytewise.compare(previous, pair.key) * (request.descending ? -1 : 1) >= 0 {
                violated("keys out of order let through")
            }
            previous = pair.key
            // A range of the store's data: the engine cuts the namespace off each key.
            if request.key.starts(with: layout.namespace + [1]) {
                guard pair.key.starts(with: layout.namespace + [1]) else { violated("a key outside the store's data let through") }
                _ = layout.storeKey(pair.key)
            }
        }
    }

    /// Real answers: a point read, a page of three pairs both ways, a count, a transaction that
    /// found the marker, a watch message with two changes, and etcd's error texts.
    static func seeds() -> [[UInt8]] {
        func pair(_ suffix: [UInt8], _ value: String) -> Etcdserverpb_KeyValue {
            var kv = Etcdserverpb_KeyValue()
            kv.key = Data(layout.namespace + [1] + suffix)
            kv.value = Data(value.utf8)
            kv.modRevision = 7
            return kv
        }
        func range(_ kvs: [Etcdserverpb_KeyValue], more: Bool = false) -> Etcdserverpb_RangeResponse {
            var wire = Etcdserverpb_RangeResponse()
            wire.header.revision = 12
            wire.kvs = kvs
            wire.count = Int64(kvs.count) + (more ? 5 : 0)
            wire.more = more
            return wire
        }
        func framed(_ kind: UInt8, _ choice: UInt8, _ message: some SwiftProtobuf.Message) -> [UInt8] {
            [kind, choice] + Array((try? message.serializedBytes() as [UInt8]) ?? [])
        }
        let page = [pair([0x61], "a"), pair([0x62], "b"), pair([0x63], "c")]
        var txn = Etcdserverpb_TxnResponse()
        txn.header.revision = 12
        txn.succeeded = false
        var found = Etcdserverpb_ResponseOp()
        var marker = range([])
        marker.kvs = [Etcdserverpb_KeyValue.with { $0.key = Data(layout.marker); $0.value = Data(EtcdLayout.format) }]
        marker.count = 1
        found.responseRange = marker
        txn.responses = [found]
        var watch = Etcdserverpb_WatchResponse()
        watch.header.revision = 14
        watch.events = ([13, 14] as [Int64]).map { revision in
            Etcdserverpb_Event.with { event in
                event.kv.key = Data(layout.commit(instance: "A"))
                event.kv.modRevision = revision
            }
        }
        let errors = ["etcdserver: mvcc: required revision has been compacted", "etcdserver: request timed out",
                      "etcdserver: invalid auth token", "etcdserver: mvcc: database space exceeded"]
        return [
            framed(0, 0, range([pair([0x61], "a")])),
            framed(0, 1, range(page, more: true)),
            framed(0, 2, range(page.reversed(), more: true)),
            framed(0, 4, range([], more: false)),
            framed(1, 0, txn),
            framed(2, 13, watch),
        ] + errors.enumerated().map { i, text in [3, UInt8(i == 0 ? 11 : 2)] + Array(text.utf8) }
    }
}
