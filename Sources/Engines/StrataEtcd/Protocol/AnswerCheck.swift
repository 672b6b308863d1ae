/// What etcd promises of its answers, checked before the engine reads one: a member that breaks
/// a promise (a key outside the range asked for, keys out of order, more than the limit, an
/// operation's answer missing, a revision of 0, which reads as "the newest") is not etcd or is
/// damaged, and what it says must not reach a store. The caller gets
/// ``EtcdError/unexpectedAnswer(endpoint:detail:)`` instead (an ambiguous outcome, for a commit).
extension EtcdRequest {
    func problem(with answer: Response) -> String? { nil }
}

extension RangeRequest {
    func problem(with answer: RangeResponse) -> String? {
        if answer.header.revision <= 0 { return "a range answered at revision \(answer.header.revision)" }
        if revision > 0 && answer.header.revision < revision {
            return "a range at revision \(revision) answered from revision \(answer.header.revision)"
        }
        return bodyProblem(with: answer)
    }

    /// The checks of ``problem(with:)`` but the header's (a range inside a transaction has the
    /// transaction's header).
    func bodyProblem(with answer: RangeResponse) -> String? {
        if answer.count < 0 { return "a range counted \(answer.count) keys" }
        if countOnly {
            return answer.kvs.isEmpty ? nil : "a count-only range answered \(answer.kvs.count) keys"
        }
        if limit > 0 && answer.kvs.count > limit { return "a range limited to \(limit) keys answered \(answer.kvs.count)" }
        if answer.count < answer.kvs.count { return "a range of \(answer.count) keys answered \(answer.kvs.count)" }
        if answer.more && answer.kvs.isEmpty { return "a range answered no key but said there were more" }
        guard let rangeEnd else {
            if answer.kvs.count > 1 || answer.kvs.contains(where: { $0.key != key }) {
                return "a read of one key answered \(answer.kvs.count) keys, not all of them the key asked for"
            }
            return nil
        }
        // `rangeEnd` [0] reaches to the end of the key space.
        let open = rangeEnd == [0]
        var previous: [UInt8]?
        for pair in answer.kvs {
            guard !pair.key.lexicographicallyPrecedes(key), open || pair.key.lexicographicallyPrecedes(rangeEnd) else {
                return "a range answered a key outside the range asked for"
            }
            if let previous, !(descending ? pair.key.lexicographicallyPrecedes(previous) : previous.lexicographicallyPrecedes(pair.key)) {
                return "a range answered keys out of \(descending ? "descending" : "ascending") order"
            }
            if keysOnly && !pair.value.isEmpty { return "a keys-only range answered values" }
            previous = pair.key
        }
        return nil
    }
}

extension TxnRequest {
    func problem(with answer: TxnResponse) -> String? {
        if answer.header.revision <= 0 { return "a transaction answered at revision \(answer.header.revision)" }
        let ops = answer.succeeded ? success : failure
        guard answer.responses.count == ops.count else {
            return "a transaction of \(ops.count) operations answered \(answer.responses.count)"
        }
        for (op, response) in zip(ops, answer.responses) {
            switch (op, response) {
            case (.range(let request), .range(let range)):
                if let problem = request.bodyProblem(with: range) { return "in a transaction, \(problem)" }
            case (.put, .put), (.deleteRange, .deleteRange):
                continue
            default:
                return "a transaction answered an operation with another operation's answer"
            }
        }
        return nil
    }
}

extension DeleteRangeRequest {
    func problem(with answer: DeleteRangeResponse) -> String? {
        if answer.header.revision <= 0 { return "a delete answered at revision \(answer.header.revision)" }
        if answer.deleted < 0 { return "a delete answered \(answer.deleted) keys deleted" }
        if rangeEnd == nil && answer.deleted > 1 { return "a delete of one key answered \(answer.deleted) keys deleted" }
        return nil
    }
}

extension LeaseGrantRequest {
    func problem(with answer: LeaseGrantResponse) -> String? {
        answer.id == 0 ? "a lease grant answered lease 0 (no lease)" : nil
    }
}

extension WatchRequest {
    /// Why `answer`, one message of this watch's stream, cannot be one, or `nil` when it can:
    /// its changes lie in the watched keys, at revisions that do not go back.
    func problem(with answer: WatchResponse) -> String? {
        var previous: Int64 = 1
        let open = rangeEnd == [0]
        for event in answer.events {
            guard event.revision >= previous else { return "a watch answered a change at revision \(event.revision) after one at \(previous)" }
            let inside = rangeEnd.map { end in !event.key.lexicographicallyPrecedes(key) && (open || event.key.lexicographicallyPrecedes(end)) }
                ?? (event.key == key)
            if !inside { return "a watch answered a change of a key outside the keys it watches" }
            previous = event.revision
        }
        return nil
    }
}
