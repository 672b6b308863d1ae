@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec

/// One observed query (``Store/observe(_:limit:order:)``) as writers and its reader share it: the
/// changes that concern it, not yet taken, and the task waiting for them.
///
/// Which changes concern it is decided by its record type's ``LiveQueries`` (one for all the
/// observed queries of the type), which hands each commit's share to ``enqueue(version:_:)``.
final class LiveQuery<R: Record & Sendable>: Sendable {
    /// Which records the query reads (limit and order aside).
    let access: QueryAccess<R>

    struct State {
        /// The changes that concern the query, with their commit's version, not yet taken.
        var pending: [(version: UInt64, change: RecordChange)] = []
        /// Commits up to this version are in the first snapshot; later deliveries of them are
        /// ignored.
        var floor: UInt64 = 0
        /// The task waiting for a change, if any.
        var waiter: CheckedContinuation<Void, Never>?
        /// How many commits concerned the query (for tests: a wake-up for an unrelated commit
        /// is a bug).
        var wakes = 0
        /// Set when the observation ends: nothing more is kept.
        var ended = false
        /// Why the observation cannot go on (another process's commits were lost to it); its
        /// reader throws it.
        var failure: (any Error)?
    }
    let state = Locked(State())

    init(_ query: Query<R>) { access = QueryAccess(query) }

    /// Keeps the changes of one commit that concern the query, and wakes its reader.
    func enqueue(version: UInt64, _ changes: some Sequence<RecordChange>) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.ended, version > state.floor else { return nil }
            for change in changes { state.pending.append((version, change)) }
            state.wakes += 1
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Keeps the changes of a commit made before the query's first snapshot is read (which
    /// changes concern it is decided once that snapshot says what it holds: ``LiveQueries``).
    func hold(version: UInt64, _ change: RecordChange) {
        state.withLock { $0.pending.append((version, change)) }
    }

    /// The first snapshot holds the commits up to `floor`: the changes held for later commits
    /// pass through `concerns` (in order); those that concern the query stay pending, and count as
    /// wake-ups, one per commit. Returns whether any did.
    func start(floor: UInt64, _ concerns: (RecordChange) -> Bool) {
        state.withLock { state in
            state.floor = floor
            state.pending = state.pending.filter { $0.version > floor && concerns($0.change) }
            state.wakes += Set(state.pending.map(\.version)).count
        }
    }

    /// Takes the pending changes (empty when there are none); throws the failure that ended the
    /// observation, if one did.
    func take() throws -> [(version: UInt64, change: RecordChange)] {
        try state.withLock { state in
            if let failure = state.failure { throw failure }
            defer { state.pending = [] }
            return state.pending
        }
    }

    /// Ends the observation with `error`, which its reader throws.
    func fail(_ error: any Error) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
        }
        wake()
    }

    /// Suspends until a change concerns the query or the task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if !state.pending.isEmpty || state.ended || state.failure != nil || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            wake()
        }
    }

    /// Resumes a waiting task, if any.
    func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Ends the observation: nothing more is kept, and a waiting task resumes.
    func end() {
        state.withLock { state in
            state.ended = true
            state.pending = []
        }
        wake()
    }

    /// How many commits concerned the query.
    var wakes: Int { state.withLock { $0.wakes } }

    /// The version of the commits its first snapshot holds (those up to it are not delivered).
    var floor: UInt64 { state.withLock { $0.floor } }
}

/// Where a query finds records: by their key, or by the values of their entries in an index.
enum AccessDomain: Hashable {
    /// The record's key, without the keyspace.
    case key
    /// The values of the record's entries in the index with this name.
    case index(String)
}

/// Which records a query reads, as ranges over the bytes a record is found by: its key (without
/// the keyspace) or the values of its entries in an index; then a residual test of the record.
///
/// `@unchecked Sendable`: the residual's terms are `Sendable` values and closures over them (a
/// predicate's), not marked `@Sendable` because the generic metatypes captured there are not
/// (yet) `Sendable`.
struct QueryAccess<R: Record>: @unchecked Sendable {
    /// The ranges the query reads, each on a domain: a record is in them when its key, or one of
    /// its entries' values, is in one on its domain.
    let ranges: [(domain: AccessDomain, range: KeyRange)]
    /// The indexes the ranges read, by name.
    let indexes: [String: RecordIndex<R>]
    /// What the ranges do not decide; `nil` when they decide everything.
    let residual: PredicateTerm<R>?
    /// Whether the key alone decides membership (a key query): then no record need be tested,
    /// and a change concerns the query exactly when its key is in the ranges.
    var byKeyAlone: Bool { residual == nil && ranges.allSatisfy { $0.domain == .key } }

    init(_ query: Query<R>) {
        var ranges: [(AccessDomain, KeyRange)] = []
        var indexes: [String: RecordIndex<R>] = [:]
        func add(_ access: AccessPlan<R>) {
            switch access {
            case .key(let plan):
                for range in plan.recordQuery.ranges(keyspacePrefix: []) { ranges.append((.key, range)) }
            case .index(let plan):
                indexes[plan.scanned.name] = plan.scanned
                for range in plan.recordQuery.ranges(keyspacePrefix: []) { ranges.append((.index(plan.scanned.name), range)) }
            case .union(let plan) where plan.intersecting:
                // The first range holds every record the intersection reads; the filter has the others' terms.
                add(plan.branches[0])
            case .union(let plan):
                for branch in plan.branches { add(branch) }
            }
        }
        switch query.held {
        case .key(let plan):
            add(.key(plan))
            residual = nil
        case .index(let plan):
            add(.index(plan))
            residual = nil
        case .filter(let plan):
            add(plan.access)
            residual = plan.residual
        }
        self.ranges = ranges
        self.indexes = indexes
    }

    /// Whether a query by key alone (``byKeyAlone``) reads the record stored as `key`.
    func holds(key: [UInt8]) -> Bool { ranges.contains { $0.range.contains(key) } }

    /// Whether `record` (stored as `key`) is one the query reads. A residual that throws (an
    /// opaque term) counts as a match: the query is read again.
    func matches(_ record: R, key: [UInt8]) -> Bool {
        let inRanges = ranges.contains { domain, range in
            switch domain {
            case .key: return range.contains(key)
            case .index(let name): return indexes[name]!.entryValues(of: record).contains { range.contains($0.bytes) }
            }
        }
        return inRanges && passesResidual(record)
    }

    /// Whether the residual holds for `record` (a throwing term counts as holding).
    func passesResidual(_ record: R) -> Bool {
        guard let residual else { return true }
        return (try? residual.matches(record)) != false
    }
}
