import Foundation
@_spi(StrataInternals) import StrataEngine

/// One record change a committed transaction made: the record's type (its keyspace), its key and
/// whether it was inserted, replaced or deleted.
public struct RecordChange: Sendable, Hashable, CustomStringConvertible {
    /// What happened to the record.
    public enum Kind: Sendable, Hashable {
        /// No record had the key before.
        case insert
        /// A record with the key was replaced.
        case update
        /// The record with the key was deleted.
        case delete
    }

    /// The keyspace of the record's type (``RecordType/keyspace``).
    public let keyspace: String
    /// The record's key components, without the keyspace.
    public let key: EncodedIndexKey
    /// Insert, update or delete.
    public let kind: Kind

    /// The record as written, for an insert or update recorded while a live query observes the
    /// store (``Store/observe(_:limit:order:)``) that may need it (`ChangeInterest`), which tests
    /// it against its query without a read; `nil` otherwise (and for other processes' changes,
    /// read from the change feed). Not part of the change's equality.
    let record: ChangedRecord?

    /// A change, as the write funnel records it.
    public init(keyspace: String, key: EncodedIndexKey, kind: Kind) {
        self.init(keyspace: keyspace, key: key, kind: kind, record: nil)
    }

    @usableFromInline
    init(keyspace: String, key: EncodedIndexKey, kind: Kind, record: ChangedRecord?) {
        (self.keyspace, self.key, self.kind, self.record) = (keyspace, key, kind, record)
    }

    /// Equal when the keyspace, the key and the kind are.
    public static func == (a: RecordChange, b: RecordChange) -> Bool {
        a.keyspace == b.keyspace && a.key == b.key && a.kind == b.kind
    }

    /// Hashes the keyspace, the key and the kind.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(keyspace)
        hasher.combine(key)
        hasher.combine(kind)
    }

    /// `insert Person 02 44 61 00 …`: the kind, the keyspace and the key's bytes in hex.
    public var description: String {
        "\(kind) \(keyspace) " + key.bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined(separator: " ")
    }
}

/// A record an insert or update wrote, carried by its ``RecordChange`` to the live queries of its
/// type.
///
/// `@unchecked Sendable`: the value is a record the writer handed to `insert`; only a live query
/// of its own type reads it (cast back), and ``Store/observe(_:limit:order:)`` requires that type
/// to be `Sendable`.
@usableFromInline
struct ChangedRecord: @unchecked Sendable {
    @usableFromInline let value: Any
    @inlinable init(value: Any) { self.value = value }
}

/// Told of the record changes of each transaction of a ``Store`` that commits, after the engine's
/// commit returns, in commit order (GRDB's `TransactionObserver`).
///
/// Register one with ``Store/add(observer:)``. A write transaction records its changes when an
/// observer is registered as it begins, and a commit is told to the observers registered when it
/// is delivered:
///
/// - ``didCommit(_:)`` gets the committed transaction's changes in the order its body made them
///   (a key written twice appears twice). Transactions that change no record are not reported.
/// - A transaction that rolls back (its body threw, or the commit failed) is never reported.
/// - Calls are serialized: one at a time, for all observers of the store, in commit order.
/// - Only record writes through ``TransactionContext`` are changes: jobs that rewrite stored
///   bytes without changing a record's value (index builds, migrations by ``Store/prepare(_:batchSize:onBatch:)``,
///   format upgrades) are not.
///
/// `didCommit` runs on the thread of a writer that committed (one writer may deliver the commits
/// of others that finished before it; for `async` transactions, a thread of the cooperative pool),
/// and holds up that writer: keep it short, and hand work to another task. It may run a
/// transaction on the same store: that transaction's changes are delivered after `didCommit`
/// returns, in their order.
public protocol TransactionObserver: AnyObject, Sendable {
    /// The changes of one committed transaction, in the order they were made.
    func didCommit(_ changes: [RecordChange])
}

/// The observers of one store, and the order their notifications go out in. A write transaction
/// that records changes takes a ticket at the end of its body, while it holds the engine's writer
/// gate, so tickets follow commit order in this process; each ticket is then finished, with the
/// changes when the commit returned, without them when it did not, and finished tickets are
/// delivered in ticket order.
@usableFromInline
final class ObserverRegistry: Sendable {
    private struct State {
        var observers: [any TransactionObserver] = []
        /// The observed queries (``Store/observe(_:limit:order:)``), grouped by record type (the
        /// type's metatype identifier), by keyspace. A group stays once made.
        var groups: [String: [ObjectIdentifier: any LiveQueryGroup]] = [:]
        /// How many observed queries are registered.
        var liveQueries = 0
        var nextTicket: UInt64 = 0
        var nextDelivery: UInt64 = 0
        /// Finished tickets' changes, and whether they tell inserts from updates (a transaction
        /// that began with only observed queries does not: its changes go to them alone).
        var finished: [UInt64: (changes: [RecordChange], kinds: Bool)] = [:]
        /// What write transactions record, computed when one begins after a query or observer
        /// came or went (`nil` until then).
        var interest: ChangeInterest?
    }
    private let state = Locked(State())
    /// Held while delivering, so deliveries never overlap (and so keep their order); a writer
    /// that finds it taken leaves its ticket to the deliverer.
    private let delivering = Locked(())

    /// Whether a write transaction beginning now must record its changes.
    @usableFromInline var isObserved: Bool { state.withLock { !$0.observers.isEmpty || $0.liveQueries > 0 } }

    /// Whether a write transaction beginning now must keep the records it writes with its
    /// changes (observed queries test them, and key queries keep their results from them), and
    /// whether it must tell an insert from an update (a ``TransactionObserver`` is told which;
    /// observed queries need not).
    var recording: (keepsRecords: Bool, needsKinds: Bool, interest: ChangeInterest) {
        state.withLock { state in
            if state.interest == nil {
                var keyspaces: [String: KeySpans?] = [:]
                if state.observers.isEmpty {
                    for (keyspace, groups) in state.groups {
                        var ranges: [KeyRange]? = []
                        for group in groups.values { ranges = group.interest().flatMap { mine in ranges.map { $0 + mine } } }
                        // (`updateValue`: assigning `nil` would remove the keyspace, not want all of it.)
                        if ranges?.isEmpty != true { keyspaces.updateValue(ranges.map(KeySpans.init), forKey: keyspace) }
                    }
                }
                state.interest = ChangeInterest(everything: !state.observers.isEmpty, keyspaces: keyspaces)
            }
            return (state.liveQueries > 0, !state.observers.isEmpty, state.interest!)
        }
    }

    /// The ticket the next observed writer takes. Read by a transaction holding the engine's
    /// writer gate, it splits the commits in two: those with a lower ticket are in what the
    /// transaction reads, the others begin after it.
    var nextTicket: UInt64 { state.withLock { $0.nextTicket } }

    /// How many observed queries are registered.
    var liveQueryCount: Int { state.withLock { $0.liveQueries } }

    /// The groups of observed queries, by keyspace (for other processes' changes: ``FeedFollower``).
    func foreignGroups() -> [String: [any LiveQueryGroup]] {
        state.withLock { state in state.groups.mapValues { Array($0.values) } }
    }

    /// Ends every observed query with `error`.
    func failLiveQueries(_ error: any Error) {
        let groups = state.withLock { state in state.groups.values.flatMap(\.values) }
        for group in groups { group.fail(error) }
    }

    /// The group of `R`'s observed queries, made on first use.
    private func group<R: Record & Sendable>(_: R.Type) -> LiveQueries<R> {
        state.withLock { state in
            let type = ObjectIdentifier(R.self)
            if let group = state.groups[R.recordType.keyspace]?[type] as? LiveQueries<R> { return group }
            let group = LiveQueries<R>()
            state.groups[R.recordType.keyspace, default: [:]][type] = group
            return group
        }
    }

    /// Registers an observed query: from now on it holds every change of its type, until
    /// ``start(_:floor:holding:)``.
    func add<R>(_ query: LiveQuery<R>) {
        group(R.self).add(query)
        state.withLock { state in
            state.liveQueries += 1
            state.interest = nil
        }
    }

    /// The first snapshot of `query` holds the commits up to `floor` and the records keyed `holding`.
    func start<R>(_ query: LiveQuery<R>, floor: UInt64, holding: Set<[UInt8]>) {
        group(R.self).start(query, floor: floor, holding: holding)
    }

    /// Removes an observed query.
    func remove<R>(_ query: LiveQuery<R>) {
        guard group(R.self).remove(query) else { return }
        state.withLock { state in
            state.liveQueries -= 1
            state.interest = nil
        }
    }

    func add(_ observer: any TransactionObserver) {
        state.withLock { state in
            state.observers.append(observer)
            state.interest = nil
        }
    }

    func remove(_ observer: any TransactionObserver) {
        state.withLock { state in
            state.observers.removeAll { $0 === observer }
            state.interest = nil
        }
    }

    /// The next ticket; taken by a writer holding the engine's writer gate.
    func ticket() -> UInt64 {
        state.withLock { state in
            defer { state.nextTicket += 1 }
            return state.nextTicket
        }
    }

    /// Finishes `ticket` with the changes of a committed transaction (`[]` for one that did not
    /// commit), then delivers every finished ticket that is next in order, unless another
    /// delivery is under way: that one delivers it. So a transaction run by an observer's
    /// `didCommit` (on the delivering thread) is delivered after it returns, rather than wait
    /// for itself.
    func finish(_ ticket: UInt64, _ changes: [RecordChange], kinds: Bool = true) {
        state.withLock { $0.finished[ticket] = (changes, kinds) }
        while delivering.withLockIfAvailable({ _ in deliverReady() }) != nil {
            // Delivered and unlocked: a ticket finished meanwhile by a writer that found the lock
            // taken is this thread's to deliver.
            guard state.withLock({ $0.finished[$0.nextDelivery] != nil }) else { return }
        }
    }

    /// Delivers the finished tickets that are next in order; the caller holds `delivering`.
    private func deliverReady() {
        while let (ticket, changes, observers, groups) = state.withLock({ state -> (UInt64, [RecordChange], [any TransactionObserver], [String: [ObjectIdentifier: any LiveQueryGroup]])? in
            let ticket = state.nextDelivery
            guard let (changes, kinds) = state.finished.removeValue(forKey: ticket) else { return nil }
            state.nextDelivery += 1
            return (ticket, changes, kinds ? state.observers : [], state.liveQueries > 0 ? state.groups : [:])
        }) {
            guard !changes.isEmpty else { continue }
            for observer in observers { observer.didCommit(changes) }
            guard !groups.isEmpty else { continue }
            // Each group is handed the changes of its keyspace only; its version is the ticket + 1.
            // (Looked up once per run of one keyspace's changes: a transaction mostly writes one type.)
            var byKeyspace: [String: [RecordChange]] = [:]
            var run = changes.startIndex
            while run < changes.endIndex {
                let keyspace = changes[run].keyspace
                let end = changes[run...].firstIndex { $0.keyspace != keyspace } ?? changes.endIndex
                if groups[keyspace] != nil { byKeyspace[keyspace, default: []] += changes[run..<end] }
                run = end
            }
            for (keyspace, changes) in byKeyspace {
                for group in groups[keyspace]!.values { group.deliver(version: ticket + 1, changes) }
            }
        }
    }
}

/// One observed write: its ticket and its changes, handed from the transaction's body to the
/// store once the engine returns. Used by one thread at a time (the engine runs one body at a
/// time, and returns after it).
///
/// `@unchecked Sendable`: handed to the engine's write body, which may run on another thread
/// (async writes), but never used by two threads at once.
@usableFromInline
final class ObservedWrite: @unchecked Sendable {
    private var ticket: UInt64?
    private var changes: [RecordChange] = []
    /// Set once the engine returned from the write: it committed.
    private var committed = false
    /// Whether the changes are all of the transaction's and tell inserts from updates (a
    /// ``TransactionObserver`` was registered as it began: ``TransactionContext/changesNeedKinds``
    /// then).
    private var kinds = true
    private let registry: ObserverRegistry

    init(_ registry: ObserverRegistry) { self.registry = registry }

    /// Runs `body` on `ctx`, which records its changes, and takes the ticket once it returns (the
    /// writer gate still held). A ticket left by an earlier run of the body was not committed: it
    /// is finished empty first (defensive: no bundled engine runs a write body twice today).
    func run<R>(_ body: (TransactionContext) throws -> R, _ ctx: TransactionContext) throws -> R {
        if let ticket { registry.finish(ticket, []) }
        ticket = nil
        // Nobody observes: nothing is recorded and no ticket taken (asked under the writer gate,
        // so a query registered later reads its first snapshot after this commit).
        guard registry.isObserved else { return try ctx.runBody(body) }
        ctx.changes = []
        (ctx.changesKeepRecords, ctx.changesNeedKinds, ctx.changeInterest) = registry.recording
        // Whether the changes are complete and tell their kinds, as the transaction began (a
        // transaction observer was registered): the change feed makes the transaction tell kinds
        // too, but its `changes` still hold only what the observed queries wanted.
        kinds = ctx.changesNeedKinds
        let result = try ctx.runBody(body)
        changes = ctx.changes ?? []
        ticket = registry.ticket()
        return result
    }

    /// Takes the ticket for `changes` made known otherwise than by a body (other processes'
    /// changes, which the feed follower delivers), the writer gate held; an earlier run's ticket
    /// is finished empty first, as in ``run(_:_:)``. No ticket for no changes.
    func take(_ changes: [RecordChange], kinds: Bool) {
        if let ticket { registry.finish(ticket, []) }
        ticket = changes.isEmpty ? nil : registry.ticket()
        self.changes = changes
        self.kinds = kinds
    }

    /// Passes on the result of an engine write that returned: it committed.
    func committing<R>(_ result: R) -> R {
        committed = true
        return result
    }

    /// Once the write is over (deferred): the changes go out if it committed, else nothing.
    func finish() {
        guard let ticket else { return }
        self.ticket = nil
        registry.finish(ticket, committed ? changes : [], kinds: kinds)
    }
}

extension Store {
    /// Registers `observer`: it is told of the changes of every write transaction that begins
    /// from now on and commits (``TransactionObserver``). The store keeps it until
    /// ``remove(observer:)``.
    public func add(observer: any TransactionObserver) {
        observers.add(observer)
    }

    /// Stops telling `observer` of commits (a delivery under way still reaches it).
    public func remove(observer: any TransactionObserver) {
        observers.remove(observer)
    }
}
