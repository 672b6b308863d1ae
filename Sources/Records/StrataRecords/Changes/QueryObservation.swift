import StrataEngine
import StrataKeyCodec

/// One state of an observed query's result (``Store/observe(_:limit:order:)``).
public struct QuerySnapshot<R: Record & Sendable>: Sendable {
    /// The query's records, in its order, at most its limit.
    public let records: [R]
    /// The commit this snapshot follows: every commit of this store up to this version is in it.
    /// Versions number this `Store`'s observed write transactions in commit order; they never go
    /// backwards within an observation.
    public let version: UInt64
    /// How the result differs from the previous snapshot's, by primary key, taken from the
    /// commits' own write sets; `nil` for the first snapshot.
    public let changes: QueryChanges?
}

/// The records a query's result gained, replaced and lost since its previous snapshot, by primary
/// key (``Record/writeKey(to:)``'s components, without the keyspace), each list in key order.
public struct QueryChanges: Sendable, Hashable {
    /// Records that entered the result.
    public let inserted: [EncodedIndexKey]
    /// Records still in the result that were written (even with the same value).
    public let updated: [EncodedIndexKey]
    /// Records that left the result (deleted, or changed so that they no longer match).
    public let deleted: [EncodedIndexKey]

    /// Whether nothing changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }

    /// The three lists from keys in any order.
    init(_ inserted: [[UInt8]], _ updated: [[UInt8]], _ deleted: [[UInt8]]) {
        func sorted(_ keys: [[UInt8]]) -> [EncodedIndexKey] {
            keys.sorted { Bytewise.compare($0, $1) < 0 }.map { EncodedIndexKey(bytes: $0) }
        }
        (self.inserted, self.updated, self.deleted) = (sorted(inserted), sorted(updated), sorted(deleted))
    }
}

extension Store {
    /// The results of `query` as they change: an `AsyncSequence` whose first element is the
    /// current result and each later one the result after a commit that changed it.
    ///
    /// ```swift
    /// for try await snapshot in store.observe(Person.query(lastName: "Dallas")) {
    ///     show(snapshot.records)   // redraw
    /// }
    /// ```
    ///
    /// - A commit wakes the observation only when it writes a record the query holds or a record
    ///   that matches the query (its key range, its index range, its predicate). Other commits
    ///   cost a range test per changed record and wake nothing.
    /// - A key query without a limit keeps its result up to date from the commits' own records
    ///   (no read); any other query is read again, in a read transaction, after a commit that
    ///   concerns it.
    /// - A consumer slower than the commits gets coalesced snapshots: the next one holds every
    ///   commit made meanwhile, with their changes merged. Versions never go backwards.
    /// - The observation starts at the first `next()` and ends when the iteration ends or the task
    ///   is cancelled (`next()` then returns `nil`).
    /// - Seen: commits of write transactions through this `Store`; with the store's change feed on
    ///   (``enableChangeFeed(retention:)``), also those of other processes and other `Store`
    ///   instances on LMDB, SQLite and etcd, read from the feed (woken through inotify on the
    ///   store's directory, and at least every ``otherProcessPolling``). Not seen: other
    ///   processes' commits without the feed, and jobs that do not change what a record reads as
    ///   (index builds, ``prepare(_:batchSize:onBatch:)``'s migrations, format upgrades).
    ///
    /// The first snapshot is read in a write transaction (other writers wait for that read), so
    /// that it splits the commits exactly: those before it are in it, those after it are
    /// delivered; on a read-only store it is read in a read transaction.
    public func observe<R: Record & Sendable>(_ query: Query<R>, limit: Int? = nil, order: Order? = nil) -> QueryObservation<R> {
        QueryObservation(store: self, query: query, limit: limit, order: order ?? query.defaultOrder)
    }
}

/// The snapshots of an observed query (``Store/observe(_:limit:order:)``).
public struct QueryObservation<R: Record & Sendable>: AsyncSequence, Sendable {
    /// One state of the query's result.
    public typealias Element = QuerySnapshot<R>
    let store: Store
    let query: Query<R>
    let limit: Int?
    let order: Order

    /// Starts nothing yet: the observation begins at the iterator's first `next()`.
    public func makeAsyncIterator() -> Iterator { Iterator(QueryObserver(self)) }

    /// Reads the snapshots; use it from one task.
    public struct Iterator: AsyncIteratorProtocol {
        let observer: QueryObserver<R>
        init(_ observer: QueryObserver<R>) { self.observer = observer }

        /// The next snapshot: the current result first, then the result after a commit that
        /// changed it; `nil` once the task is cancelled. Throws what a read throws, and then
        /// the observation is over (`nil` after that).
        public mutating func next() async throws -> QuerySnapshot<R>? { try await observer.next() }

        /// How many commits concerned the observation since it began: each woke it once (a
        /// coalesced snapshot may hold several; other processes' commits come in the batches
        /// the store reads them in). Commits that wrote nothing the query reads are not counted:
        /// they cost the observation nothing. Copies of the iterator share the count.
        public var wakeUps: Int { observer.live.wakes }
    }
}

/// The consuming side of an observation: registers its ``LiveQuery`` at the first `next()`,
/// removes it when the iterator goes away, and turns the changes taken into snapshots.
///
/// `@unchecked Sendable`: used by one task at a time (the iterator's), like the iterator itself;
/// what writers touch is in the ``LiveQuery``'s lock.
final class QueryObserver<R: Record & Sendable>: @unchecked Sendable {
    let observation: QueryObservation<R>
    let live: LiveQuery<R>
    /// The records of the last snapshot, and their primary keys (in the same order).
    var records: [R] = []
    var keys: [[UInt8]] = []
    var version: UInt64 = 0
    var started = false
    /// Set once the observation ended (cancelled, or a read threw): `next()` returns `nil`.
    var ended = false
    /// Whether the result is kept from the commits' records (a key query without a limit).
    let incremental: Bool

    init(_ observation: QueryObservation<R>) {
        self.observation = observation
        live = LiveQuery(observation.query)
        incremental = observation.limit == nil && live.access.byKeyAlone
    }

    deinit {
        if started {
            live.end()
            observation.store.observers.remove(live)
        }
    }

    func next() async throws -> QuerySnapshot<R>? {
        if ended { return nil }
        do {
            return try await snapshot()
        } catch {
            end()
            throw error
        }
    }

    /// Ends the observation: its query is removed, and `next()` returns `nil` from now on.
    private func end() {
        ended = true
        live.end()
        observation.store.observers.remove(live)
    }

    private func snapshot() async throws -> QuerySnapshot<R>? {
        if !started {
            started = true
            observation.store.observers.add(live)
            return try await first()
        }
        while true {
            if Task.isCancelled {
                end()
                return nil
            }
            let taken = try live.take()
            if taken.isEmpty {
                await live.wait()
                continue
            }
            version = taken.last!.version
            if incremental, let applied = apply(taken) {
                if let snapshot = applied { return snapshot }
                continue
            }
            if let snapshot = try await reread(taken) { return snapshot }
        }
    }

    /// The first snapshot, read where no commit can slip between it and the ones delivered.
    private func first() async throws -> QuerySnapshot<R> {
        let (store, query, limit, order) = (observation.store, observation.query, observation.limit, observation.order)
        // Other processes' commits come through the change feed, from where this snapshot reads it.
        let follows = FeedFollower.applies(to: store.engine)
        let read: @Sendable (any KeyValueReader, Bool) throws -> (UInt64, [R], ChangeToken?) = { tx, underGate in
            // Under the writer gate no commit is under way: the tickets below the next one are all
            // committed, and in what this transaction reads.
            let floor = underGate ? store.observers.nextTicket : 0
            let records = try query.select(in: TransactionContext(store: store, reader: tx, writer: nil), limit: limit, order: order)
            return (floor, records, follows ? try ChangeLog.end(in: tx) : nil)
        }
        let (floor, records, feedEnd): (UInt64, [R], ChangeToken?)
        do {
            (floor, records, feedEnd) = try await store.engine.write { tx in try read(tx, true) }
        } catch EngineError.readOnly {
            (floor, records, feedEnd) = try await store.engine.read { tx in try read(tx, false) }
        }
        self.records = records
        keys = records.map(Self.key)
        version = floor
        // A key query's range alone decides what it holds; others are told by the keys they hold.
        observation.store.observers.start(live, floor: floor, holding: live.access.byKeyAlone ? [] : Set(keys))
        if let feedEnd { observation.store.follower.begin(at: feedEnd, store: observation.store) }
        return QuerySnapshot(records: records, version: floor, changes: nil)
    }

    static func key(_ record: R) -> [UInt8] {
        var writer = KeyWriter()
        record.writeKey(to: &writer)
        return writer.bytes
    }

    /// Applies the changes of a key query's commits to its records, in key order: the snapshot,
    /// or `.some(nil)` when they changed nothing; `nil` when a write came without its record (a
    /// writer that began before the observation), and the query must be read again.
    private func apply(_ taken: [(version: UInt64, change: RecordChange)]) -> QuerySnapshot<R>?? {
        let descending = observation.order == .descending
        func position(_ key: [UInt8]) -> (Int, found: Bool) {
            var (low, high) = (0, keys.count)
            while low < high {
                let middle = (low + high) / 2
                let c = Bytewise.compare(keys[middle], key)
                if c == 0 { return (middle, true) }
                if descending ? c > 0 : c < 0 { low = middle + 1 } else { high = middle }
            }
            return (low, false)
        }
        func writesInRange(_ change: RecordChange) -> Bool { change.kind != .delete && live.access.holds(key: change.key.bytes) }
        // Checked before anything is applied, so a read again compares with the last snapshot.
        if taken.contains(where: { writesInRange($0.change) && !($0.change.record?.value is R) }) { return nil }
        var before: [[UInt8]: Bool] = [:]
        for (_, change) in taken {
            let key = change.key.bytes
            let (at, found) = position(key)
            if before[key] == nil { before[key] = found }
            if !writesInRange(change) {
                if found {
                    keys.remove(at: at)
                    records.remove(at: at)
                }
            } else if let record = change.record?.value as? R {
                if found { records[at] = record } else {
                    keys.insert(key, at: at)
                    records.insert(record, at: at)
                }
            }
        }
        var (inserted, updated, deleted): ([[UInt8]], [[UInt8]], [[UInt8]]) = ([], [], [])
        for (key, was) in before {
            let now = position(key).found
            switch (was, now) {
            case (false, true): inserted.append(key)
            case (true, true): updated.append(key)
            case (true, false): deleted.append(key)
            case (false, false): break
            }
        }
        let changes = QueryChanges(inserted, updated, deleted)
        return .some(changes.isEmpty ? nil : QuerySnapshot(records: records, version: version, changes: changes))
    }

    /// Reads the query again after commits that concern it; `nil` when its result did not change.
    private func reread(_ taken: [(version: UInt64, change: RecordChange)]) async throws -> QuerySnapshot<R>? {
        let (store, query, limit, order) = (observation.store, observation.query, observation.limit, observation.order)
        let records = try await store.withReadTransaction { ctx in try query.select(in: ctx, limit: limit, order: order) }
        return snapshot(after: records, taken)
    }

    /// The snapshot of `records`, read after the commits `taken`, with its changes against the
    /// previous one; `nil` when none of its records changed.
    private func snapshot(after records: [R], _ taken: [(version: UInt64, change: RecordChange)]) -> QuerySnapshot<R>? {
        let newKeys = records.map(Self.key)
        let (old, new) = (Set(keys), Set(newKeys))
        let written = Set(taken.map(\.change.key.bytes))
        let inserted = new.subtracting(old), deleted = old.subtracting(new)
        let updated = new.intersection(old).intersection(written)
        self.records = records
        keys = newKeys
        let changes = QueryChanges(Array(inserted), Array(updated), Array(deleted))
        return changes.isEmpty ? nil : QuerySnapshot(records: records, version: version, changes: changes)
    }
}
