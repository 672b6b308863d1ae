import StrataConformance
import StrataRecords

extension RecordConformance {
    /// The index cases for an index of any kind on a record type of your own: how a new kind of
    /// index (an `IndexMaintainer`, given to a `RecordIndex`) shows that it keeps the same
    /// promises as the built-in kinds, on every engine the kit runs on.
    ///
    /// `R`'s key is one `Int`, read by `id`. `record(id, random)` makes a record with that key;
    /// `values(record)` are the values the record's entries hold in the index's one component
    /// (none, one, or several for a multi-valued kind); `universe` lists the values the checks
    /// ask about. The case runs a random log of inserts, replacements, deletes by key and by key
    /// range, with one transaction in six rolled back, and after every step checks, for each value
    /// of `universe`, that an equality on the index returns the model's records holding it in key
    /// order (both orders), that `count` agrees, and that `verifyIndexes` finds the index exact; a
    /// unique index must refuse exactly the inserts that would share a value.
    public static func indexKindCases<R: Record & Sendable, Value: KeyComponent & Hashable & Sendable>(
        _ index: RecordIndex<R>,
        id: @escaping @Sendable (R) -> Int,
        record: @escaping @Sendable (_ id: Int, _ random: inout SeededRandom) -> R,
        values: @escaping @Sendable (R) -> Set<Value>,
        universe: [Value]
    ) -> [ConformanceCase] {
        let kind = index.kind
        return [
            ConformanceCase("index-kind", "\(kind) (\(index.name)): random logs of writes, deletes and aborted transactions keep the index equal to a model") { ctx in
                let store = try CaseStores.store(on: try ctx.open())
                defer { try? store.close() }
                var model: [Int: R] = [:]
                try randomLog(store, seed: 0x4B_1D, steps: 60, model: &model) { tx, working, random, step in
                    let key = Int.random(in: 0..<30, using: &random)
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<6:
                        let new = record(key, &random)
                        let clash = index.unique && working.values.contains { id($0) != key && !values($0).isDisjoint(with: values(new)) }
                        do {
                            try tx.insert(new)
                            try expectTrue(!clash, "step \(step): an insert of \(key) sharing a value of the unique index was accepted")
                            working[key] = new
                        } catch RecordError.uniqueViolation {
                            try expectTrue(clash, "step \(step): a unique violation for \(key), which shares no value")
                        }
                    case 6..<8:
                        let removed = try tx.delete(R.self, .all.equal(key))
                        try expectEqual(removed, working[key] != nil ? 1 : 0, "step \(step): delete \(key)")
                        working[key] = nil
                    default:
                        let removed = try tx.delete(R.self, .all.then(Comparison.range(key..<(key + 5))))
                        try expectEqual(removed, working.keys.filter { (key..<(key + 5)).contains($0) }.count, "step \(step): range delete")
                        for gone in key..<(key + 5) { working[gone] = nil }
                    }
                } check: { model, step in
                    try store.withReadTransaction { tx in
                        let results = try tx.verifyIndexes(R.self)
                        for result in results where result.index == index.name {
                            try expectTrue(result.isExact, "step \(step): \(result.missingCount) entries missing, \(result.staleCount) stale")
                        }
                        try expectTrue(results.contains { $0.index == index.name }, "step \(step): verifyIndexes did not check \(index.name)")
                        let inKeyOrder = model.keys.sorted()
                        for value in universe {
                            let expected = inKeyOrder.filter { values(model[$0]!).contains(value) }
                            try expectEqual(try index.select(in: tx, .all.equal(value), order: .ascending).map(id), expected,
                                            "step \(step): equal \(value)")
                            try expectEqual(try index.select(in: tx, .all.equal(value), order: .descending).map(id), expected.reversed(),
                                            "step \(step): equal \(value), descending")
                            try expectEqual(try index.count(in: tx, .all.equal(value)), expected.count, "step \(step): count \(value)")
                        }
                    }
                }
            },
        ]
    }
}
