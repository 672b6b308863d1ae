import StrataEngine
import StrataKeyCodec

/// Chooses how a predicate query reads: the key or the value index whose leading components the
/// predicate's top-level `&&` fixes best (equalities, then one range or `in` list on the next
/// component), and whether that range's order gives the sort.
///
/// A candidate's score counts its equalities twice and a final range or list once; the key wins
/// a tie (no point read per record), then a covering index. With no candidate fixing anything, a
/// range whose order gives the sort is taken (so a limit stops the read early), else the whole key.
/// Terms the range answers exactly are dropped from the filter; everything else stays in it.
///
/// A plan that reads an index carries the plan of the key alone, which its reads take instead
/// while an index it reads is being built (``FilterPlan/readable(in:)``).
struct Planner<R: Record> {
    let conjuncts: [PredicateTerm<R>]
    let sort: [SortField<R>]
    /// Whether value indexes are candidates (else the key alone).
    var indexed = true

    /// One way to read: the components of the key or of an index, in order, by key path.
    private struct Candidate {
        /// The index's name; `nil` for the key.
        var name: String? = nil
        let access: (RecordQuery) -> AccessPlan<R>
        let keyPaths: [AnyKeyPath?]
        let multiValued: [Bool]
        let typeIDs: [ObjectIdentifier]
        let isKey: Bool
        let covering: Bool
    }

    /// What a candidate's components take from the predicate.
    private struct Match {
        var query = RecordQuery()
        var used: Set<Int> = []
        var equalities = 0
        var ranged = false
        /// The first component the range's order is by (after the equalities).
        var orderedFrom = 0
        var score: Int { equalities * 2 + (ranged ? 1 : 0) }
    }

    func plan() -> FilterPlan<R> {
        var plan = readPlan()
        plan.countedBy = totals()
        if indexed && !plan.access.indexes.isEmpty {
            var keyOnly = self
            keyOnly.indexed = false
            plan.unindexed = UnindexedPlan(keyOnly.plan())
        }
        return plan
    }

    /// An index of totals whose groups the predicate selects exactly (every term answered by
    /// equalities on its leading components and a range on the next, every multi-valued component
    /// fixed by a `contains`), so that counting the
    /// records reads the groups' totals instead of the records: ``FilterPlan/count(in:)``.
    private func totals() -> TotalsCount<R>? {
        for index in R.indexes where index.storage == .totals {
            let candidate = Candidate(
                access: { .index(IndexScanPlan(index, $0)) }, keyPaths: index.components.map(\.keyPath),
                multiValued: index.components.map(\.isMultiValued), typeIDs: index.components.map(\.typeID), isKey: false, covering: false)
            let match = self.match(candidate)
            // A multi-valued component left open would count a record once per element (and not
            // at all with none): only a `contains` on it selects each record once.
            let openMultiValued = index.components.indices.contains { index.components[$0].isMultiValued && $0 >= match.equalities }
            if match.used.count == conjuncts.count && !openMultiValued { return TotalsCount(index: index, query: match.query) }
        }
        return nil
    }

    private func readPlan() -> FilterPlan<R> {
        var candidates = [keyCandidate()]
        for index in R.indexes where indexed && index.kind == IndexKinds.value {
            candidates.append(Candidate(
                name: index.name, access: { .index(IndexScanPlan(index, $0)) }, keyPaths: index.components.map(\.keyPath),
                multiValued: index.components.map(\.isMultiValued), typeIDs: index.components.map(\.typeID), isKey: false,
                covering: index.covering))
        }
        var best: (Candidate, Match)?
        for candidate in candidates {
            let match = self.match(candidate)
            guard let current = best else { best = (candidate, match); continue }
            if match.score > current.1.score || (match.score == current.1.score && rank(candidate) > rank(current.0)) {
                best = (candidate, match)
            }
        }
        var (candidate, match) = best!
        if match.score == 0, let union = union(candidates) {
            return FilterPlan(access: .union(union.plan), residual: union.exact ? nil : PredicateTerm.all(conjuncts), sort: sort,
                              accessOrder: .ascending, orderNote: nil)
        }
        if match.score == 0 {
            // Nothing fixed: a range whose order gives the sort lets a limit stop early.
            if let ordered = candidates.first(where: { sortOrder(of: $0, from: 0) != nil }) {
                (candidate, match) = (ordered, Match())
            } else {
                (candidate, match) = (candidates[0], Match())
            }
        }
        let residualTerms = conjuncts.enumerated().filter { !match.used.contains($0.offset) }.map(\.element)
        let residual = residualTerms.isEmpty ? nil : PredicateTerm.all(residualTerms)
        if let intersection = intersection(candidate, match, candidates) {
            return FilterPlan(access: .union(intersection), residual: residual, sort: sort, accessOrder: .ascending, orderNote: nil)
        }
        let access = candidate.access(match.query)
        let where_ = candidate.isKey ? "in key order" : "in index order"
        if sort.isEmpty {
            return FilterPlan(access: access, residual: residual, sort: [], accessOrder: .ascending, orderNote: nil)
        }
        if let order = sortOrder(of: candidate, from: match.orderedFrom) {
            return FilterPlan(access: access, residual: residual, sort: [], accessOrder: order, orderNote: "sorted " + where_)
        }
        return FilterPlan(access: access, residual: residual, sort: sort, accessOrder: .ascending, orderNote: nil)
    }

    /// A union for a conjunct `a || b || …` whose every side fixes leading components of the key or
    /// an index (the best of each side's candidates), and whether the sides' ranges answer it
    /// exactly (it is the whole predicate and no side leaves a filter).
    private func union(_ candidates: [Candidate]) -> (plan: UnionPlan<R>, exact: Bool)? {
        for conjunct in conjuncts {
            guard case .or(let sides) = conjunct else { continue }
            var branches: [AccessPlan<R>] = []
            var exact = conjuncts.count == 1
            for side in sides.flatMap(\.disjuncts) {
                let planner = Planner(conjuncts: side.conjuncts, sort: [])
                let matches = candidates.map { ($0, planner.match($0)) }
                guard let (candidate, match) = matches.max(by: { $0.1.score < $1.1.score }), match.score > 0 else { branches = []; break }
                exact = exact && match.used.count == side.conjuncts.count
                branches.append(candidate.access(match.query))
            }
            if !branches.isEmpty { return (UnionPlan(branches), exact) }
        }
        return nil
    }

    /// An intersection of the best candidate's range with those of other indexes whose equalities
    /// answer terms the best leaves to the filter: when the best is an index read by a point read
    /// per entry (not the key, not covering) whose order no sort needs, so that fewer records are
    /// read. The filter keeps the other ranges' terms (an intersection may skip a range: see
    /// ``UnionPlan``).
    private func intersection(_ best: Candidate, _ match: Match, _ candidates: [Candidate]) -> UnionPlan<R>? {
        guard !best.isKey, !best.covering, match.equalities > 0 else { return nil }
        if !sort.isEmpty && sortOrder(of: best, from: match.orderedFrom) != nil { return nil }
        var branches = [best.access(match.query)]
        var answered = match.used
        for other in candidates where !other.isKey && other.name != best.name {
            let more = self.match(other)
            guard more.equalities > 0, !more.used.isSubset(of: answered) else { continue }
            branches.append(other.access(more.query))
            answered.formUnion(more.used)
        }
        return branches.count > 1 ? UnionPlan(branches, intersecting: true) : nil
    }

    private func rank(_ candidate: Candidate) -> Int { candidate.isKey ? 2 : candidate.covering ? 1 : 0 }

    private func keyCandidate() -> Candidate {
        let key = R.recordType.key
        let paths = R.storedKeyPaths
        return Candidate(
            access: { .key(KeyScanPlan($0)) }, keyPaths: key.map { paths[$0.name] }, multiValued: key.map { _ in false },
            typeIDs: key.map(\.typeID), isKey: true, covering: true)
    }

    /// The equalities on the candidate's leading components, then a range or list on the next.
    private func match(_ candidate: Candidate) -> Match {
        var match = Match()
        for (i, keyPath) in candidate.keyPaths.enumerated() {
            guard let keyPath else { break }
            let typeID = candidate.typeIDs[i]
            func on(_ property: PropertyReference<R>) -> Bool { property.keyPath == keyPath && property.typeID == typeID }
            // An equality (or, multi-valued, a `contains`) extends the prefix.
            if let (n, value) = conjuncts.enumerated().lazy.compactMap({ n, term -> (Int, [UInt8])? in
                switch term {
                case let .compare(property, .equal, value, _) where !candidate.multiValued[i] && on(property): (n, value)
                case let .contains(property, value, _) where candidate.multiValued[i] && on(property): (n, value)
                default: nil
                }
            }).first {
                match.query.prefix += value
                match.query.componentTypes.append(typeID)
                match.used.insert(n)
                match.equalities += 1
                match.orderedFrom = i + 1
                continue
            }
            guard !candidate.multiValued[i] else { break }
            // Else an `in` list, or the range of every comparison on the component, ends it.
            if let (n, values) = conjuncts.enumerated().lazy.compactMap({ n, term -> (Int, [[UInt8]])? in
                if case let .oneOf(property, values, _) = term, on(property) { return (n, values) }
                return nil
            }).first {
                match.query.componentTypes.append(typeID)
                match.query.hasComparison = true
                match.query.bounds = values.map { [.above($0, inclusive: true), .below($0, inclusive: true)] }
                match.query.isEmpty = values.isEmpty
                match.used.insert(n)
                match.ranged = true
                match.orderedFrom = i
                break
            }
            // The tightest lower and upper bounds; the others stay in the filter.
            var lower: (value: [UInt8], inclusive: Bool, term: Int)?
            var upper: (value: [UInt8], inclusive: Bool, term: Int)?
            for (n, term) in conjuncts.enumerated() {
                guard case let .compare(property, op, value, _) = term, on(property) else { continue }
                switch op {
                case .greater, .greaterOrEqual:
                    let c = lower.map { Bytewise.compare(value, $0.value) } ?? 1
                    if c > 0 || (c == 0 && op == .greater) { lower = (value, op == .greaterOrEqual, n) }
                case .less, .lessOrEqual:
                    let c = upper.map { Bytewise.compare(value, $0.value) } ?? -1
                    if c < 0 || (c == 0 && op == .less) { upper = (value, op == .lessOrEqual, n) }
                case .equal, .notEqual: continue
                }
            }
            var bounds: [ComponentBound] = []
            if let lower {
                bounds.append(.above(lower.value, inclusive: lower.inclusive))
                match.used.insert(lower.term)
            }
            if let upper {
                bounds.append(.below(upper.value, inclusive: upper.inclusive))
                match.used.insert(upper.term)
            }
            if !bounds.isEmpty {
                match.query.componentTypes.append(typeID)
                match.query.hasComparison = true
                match.query.bounds = [bounds]
                match.ranged = true
            }
            match.orderedFrom = i
            break
        }
        // A multi-valued component has an entry per element: left open (no `contains` fixing it),
        // a record with no element has no entry, and the range would miss it. Such a candidate
        // answers nothing.
        if candidate.multiValued[match.equalities...].contains(true) { return Match() }
        return match
    }

    /// The range order that gives the sort when the candidate's components from `first` on are
    /// the sort's fields, all in one direction (a field the equalities fix may stand anywhere).
    private func sortOrder(of candidate: Candidate, from first: Int) -> Order? {
        let fixed = Set(candidate.keyPaths[..<min(first, candidate.keyPaths.count)].compactMap { $0 })
        let fields = sort.filter { !fixed.contains($0.keyPath) }
        // Ties go by primary key in the first sort field's direction, fixed or not.
        let descending = sort.first?.descending ?? false
        guard fields.allSatisfy({ $0.descending == descending }) else { return nil }
        // Ties come in primary-key order: after the sort's fields an index must have no other
        // component (its entries then order by primary key); the key's next components are its own.
        let end = first + fields.count
        guard candidate.isKey ? end <= candidate.keyPaths.count : end == candidate.keyPaths.count else { return nil }
        for (offset, field) in fields.enumerated() {
            let i = first + offset
            guard candidate.keyPaths[i] == field.keyPath, !candidate.multiValued[i] else { return nil }
        }
        return descending ? .descending : .ascending
    }
}
