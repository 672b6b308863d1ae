@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec

/// The observed queries of one record type in one store, as the ``ObserverRegistry`` hands them a
/// commit's changes.
protocol LiveQueryGroup: AnyObject, Sendable {
    /// The keyspace of the record type.
    var keyspace: String { get }
    /// The changes of one commit to ``keyspace``, in the order they were made; called one commit
    /// at a time, in commit order, by the thread delivering it.
    func deliver(version: UInt64, _ changes: [RecordChange])
    /// Other processes' changes to ``keyspace`` (from the change feed, without their records),
    /// each with its record as `ctx` reads it now: a record no longer there is a delete.
    func withRecords(_ changes: [RecordChange], in ctx: TransactionContext) -> [RecordChange]
    /// Ends every observation of the group with `error`.
    func fail(_ error: any Error)
    /// The keys (without the keyspace's prefix) whose changes its queries may need, started or
    /// not; `nil` when they may need any change (a query not by key alone).
    func interest() -> [KeyRange]?
}

/// Decides which observed queries of `R` a commit's changes concern, without asking each query:
///
/// - A change concerns a query whose ranges hold the record's key or one of its entries' values
///   (looked up in a ``RangeIndex`` per domain: O(log ranges) per change, however many queries),
///   if the query's residual holds for the record as written.
/// - It also concerns the queries that hold the record (``State/holders``): it changed or left.
///   A key query needs no holders: its range alone says whether a key is one of its records
///   (only existing records are reported deleted).
///
/// So a commit costs the queries it does not concern nothing: they are not visited.
final class LiveQueries<R: Record & Sendable>: LiveQueryGroup {
    let keyspace = R.recordType.keyspace

    struct Member {
        let query: LiveQuery<R>
        let byKeyAlone: Bool
        /// Whether its first snapshot is read; until then it holds every change of the keyspace.
        var started = false
        /// The keys of the records it holds or may hold (not for queries by key alone): those of
        /// its first snapshot, then every record whose last write matched it. Exact without a
        /// limit; with one, also records past the limit that matched since the first snapshot.
        var holding: Set<[UInt8]> = []
    }

    struct State {
        var members: [ObjectIdentifier: Member] = [:]
        /// For each record key, the queries (not by key alone) holding it.
        var holders: [[UInt8]: [ObjectIdentifier]] = [:]
        /// The started queries' ranges, per domain; rebuilt after a query starts or ends.
        var ranges: [AccessDomain: RangeIndex] = [:]
        /// The indexes the started queries' ranges read, by name.
        var indexes: [String: RecordIndex<R>] = [:]
        var stale = false
        /// How many queries wait for their first snapshot, and how many started ones are not by
        /// key alone (when none, no record is tested and no holder kept).
        var waiting = 0
        var recordQueries = 0
    }
    let state = Locked(State())

    /// Adds `query`, which holds every change until ``start(_:floor:holding:)``.
    func add(_ query: LiveQuery<R>) {
        state.withLock { state in
            state.members[ObjectIdentifier(query)] = Member(query: query, byKeyAlone: query.access.byKeyAlone)
            state.waiting += 1
        }
    }

    /// Removes `query`; returns whether it was there.
    @discardableResult
    func remove(_ query: LiveQuery<R>) -> Bool {
        state.withLock { state in
            let id = ObjectIdentifier(query)
            guard let member = state.members.removeValue(forKey: id) else { return false }
            for key in member.holding {
                state.holders[key]?.removeAll { $0 == id }
                if state.holders[key]?.isEmpty == true { state.holders[key] = nil }
            }
            if member.started {
                state.stale = true
                if !member.byKeyAlone { state.recordQueries -= 1 }
            } else {
                state.waiting -= 1
            }
            return true
        }
    }

    /// The first snapshot of `query` holds the commits up to `floor` and the records keyed
    /// `holding`: from now on the query is looked up by its ranges, and the changes it held
    /// meanwhile are sorted (``LiveQuery/start(floor:_:)``).
    func start(_ query: LiveQuery<R>, floor: UInt64, holding: Set<[UInt8]>) {
        state.withLock { state in
            let id = ObjectIdentifier(query)
            guard var member = state.members[id], !member.started else { return }
            member.started = true
            state.waiting -= 1
            if !member.byKeyAlone { state.recordQueries += 1 }
            if !member.byKeyAlone { member.holding = holding }
            let access = query.access
            query.start(floor: floor) { change in
                let key = change.key.bytes
                if member.byKeyAlone { return access.holds(key: key) }
                let now = change.kind != .delete && (change.record.map { ($0.value as? R).map { access.matches($0, key: key) } ?? true } ?? true)
                let was = now ? !member.holding.insert(key).inserted : member.holding.remove(key) != nil
                return was || now
            }
            for key in member.holding { state.holders[key, default: []].append(id) }
            state.members[id] = member
            state.stale = true
        }
    }

    func interest() -> [KeyRange]? {
        state.withLock { state in
            var ranges: [KeyRange] = []
            for member in state.members.values {
                guard member.byKeyAlone else { return nil }
                ranges += member.query.access.ranges.map(\.range)
            }
            return ranges
        }
    }

    func deliver(version: UInt64, _ changes: [RecordChange]) {
        state.withLock { state in
            if state.stale { rebuild(&state) }
            let keyRanges = state.ranges[.key]
            var shares: [ObjectIdentifier: [RecordChange]] = [:]
            for change in changes {
                if state.waiting > 0 {
                    for member in state.members.values where !member.started { member.query.hold(version: version, change) }
                }
                let key = change.key.bytes
                var concerned: [ObjectIdentifier] = []
                var candidates: [ObjectIdentifier] = []
                for id in keyRanges?.stab(key) ?? [] {
                    if state.members[id]!.byKeyAlone { concerned.append(id) } else { candidates.append(id) }
                }
                if state.recordQueries > 0 {
                    // Queries that now hold the record (not by key alone), and those that held it.
                    let was = state.holders[key] ?? []
                    var now: [ObjectIdentifier] = []
                    if change.kind != .delete {
                        if let record = change.record?.value as? R {
                            for (name, index) in state.indexes {
                                guard let ranges = state.ranges[.index(name)] else { continue }
                                for entry in index.entryValues(of: record) { candidates += ranges.stab(entry.bytes) }
                            }
                            for id in candidates where !now.contains(id) && state.members[id]!.query.access.passesResidual(record) { now.append(id) }
                        } else {
                            // Written without its record (by a writer that began before any such query
                            // was observed, or another process, read from the feed): every query
                            // may hold it and reads again, but for those whose first snapshot holds
                            // this commit: they keep what the snapshot said (and ignore its delivery).
                            now = state.members.filter { id, member in
                                member.started && !member.byKeyAlone && (member.query.floor < version || was.contains(id))
                            }.map(\.key)
                        }
                    }
                    if !was.isEmpty || !now.isEmpty {
                        for id in was where !now.contains(id) { state.members[id]?.holding.remove(key) }
                        for id in now where !was.contains(id) { state.members[id]?.holding.insert(key) }
                        state.holders[key] = now.isEmpty ? nil : now
                        for id in was + now where !concerned.contains(id) { concerned.append(id) }
                    }
                }
                for id in concerned { shares[id, default: []].append(change) }
            }
            for (id, share) in shares { state.members[id]?.query.enqueue(version: version, share) }
        }
    }

    func withRecords(_ changes: [RecordChange], in ctx: TransactionContext) -> [RecordChange] {
        changes.map { change in
            let key = change.key.bytes
            // A record that cannot be read is left without one: the queries it may concern read
            // again, and meet the error themselves.
            let found: R?
            do { found = try ctx.fetch(R.self) { $0.write(contentsOf: key) } } catch { return change }
            guard let record = found else { return RecordChange(keyspace: keyspace, key: change.key, kind: .delete) }
            return RecordChange(keyspace: keyspace, key: change.key, kind: change.kind == .delete ? .update : change.kind,
                                record: ChangedRecord(value: record))
        }
    }

    func fail(_ error: any Error) {
        let queries = state.withLock { $0.members.values.map(\.query) }
        for query in queries { query.fail(error) }
    }

    /// The range lookups of the started queries.
    private func rebuild(_ state: inout State) {
        var spans: [AccessDomain: [(KeyRange, ObjectIdentifier)]] = [:]
        var indexes: [String: RecordIndex<R>] = [:]
        for (id, member) in state.members where member.started {
            for (domain, range) in member.query.access.ranges { spans[domain, default: []].append((range, id)) }
            indexes.merge(member.query.access.indexes) { a, _ in a }
        }
        state.ranges = spans.mapValues(RangeIndex.init)
        state.indexes = indexes
        state.stale = false
    }
}

/// Byte ranges, each tagged with a query, looked up by a key: which ranges hold it. The ranges'
/// ends cut the byte strings into segments; each segment lists the ranges covering it, so a lookup
/// is one binary search (memory: the segments times the ranges covering each, which nested ranges
/// make grow).
struct RangeIndex {
    /// The segments' starts, ascending; segment `i` runs to `starts[i + 1]` (the last one, up).
    private var starts: [[UInt8]] = []
    private var covering: [[ObjectIdentifier]] = []

    init(_ ranges: [(KeyRange, ObjectIdentifier)]) {
        let spans = ranges.compactMap { range, id in range.span.map { ($0.low, $0.high, id) } }
        var points = Set<[UInt8]>()
        for (low, high, _) in spans {
            points.insert(low)
            if let high { points.insert(high) }
        }
        starts = points.sorted { Bytewise.compare($0, $1) < 0 }
        covering = Array(repeating: [], count: starts.count)
        for (low, high, id) in spans {
            let end = high.map { segment(of: $0)! } ?? starts.count
            for i in segment(of: low)!..<end { covering[i].append(id) }
        }
    }

    /// The segment holding `key`, or `nil` when it lies below them all.
    private func segment(of key: [UInt8]) -> Int? {
        var (low, high) = (0, starts.count)
        while low < high {
            let middle = (low + high) / 2
            if Bytewise.compare(starts[middle], key) <= 0 { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : low - 1
    }

    /// The tags of the ranges that hold `key`.
    func stab(_ key: [UInt8]) -> [ObjectIdentifier] {
        segment(of: key).map { covering[$0] } ?? []
    }
}
