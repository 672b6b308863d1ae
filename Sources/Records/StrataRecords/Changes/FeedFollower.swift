import Foundation
@_spi(StrataInternals) import StrataEngine

/// Brings other processes' commits to this store's observed queries, through the change feed.
///
/// While queries are observed on an engine other processes may write to
/// (``EngineCapabilities/multiProcess``: LMDB, SQLite, etcd) and the store's change feed is on, a
/// thread of the store reads the feed on from where the queries' first snapshots were read. It
/// wakes when the engine's commit signal (``KeyValueEngine/makeCommitSignal()``: inotify on the
/// store's directory, etcd's watch) fires, and at least every ``Store/otherProcessPolling``. Chunks this store wrote are
/// skipped (their writer is this store's identity): its own commits are delivered as they commit.
/// Other processes' changes are delivered as one commit, read under the writer gate with the
/// records as they are then (so a commit of this process is never overtaken by an older state),
/// to the queries they concern, exactly as this process's own commits are.
///
/// Without the feed, other processes' commits are not seen (documented); a feed trimmed past
/// the follower's position ends every observation with ``RecordError/historyTruncated(detail:)``.
final class FeedFollower: Sendable {
    private struct State {
        /// Where the feed is read on; `nil` until a query's first snapshot says where.
        var token: ChangeToken?
        /// Set when no query was observed at a turn: the next first snapshot says where to go on
        /// (the position kept may be long past, even trimmed).
        var idle = false
        var interval: Duration = .milliseconds(100)
        var started = false
        var stopped = false
        /// The engine failures turns met (tried again at the next turn), and the last one: for
        /// tests and diagnostics.
        var failures = 0
        var lastFailure: (any Error)?
        /// What the thread waits on; closed by `stop()`, which so wakes it.
        var signal: (any CommitSignal)?
    }
    private let state = Locked(State())

    /// Whether following is possible at all on `engine`: only another process can write what
    /// this process did not.
    static func applies(to engine: any KeyValueEngine) -> Bool { engine.capabilities.contains(.multiProcess) }

    /// The longest wait between two looks at the feed.
    var interval: Duration {
        get { state.withLock { $0.interval } }
        set { state.withLock { $0.interval = newValue } }
    }

    /// A query's first snapshot was read at `end` of the feed (under the writer gate): follow
    /// from there unless already following (an earlier position only repeats changes the snapshot
    /// holds, which queries apply again harmlessly). Starts the thread on first use.
    func begin(at end: ChangeToken, store: Store) {
        let start = state.withLock { state -> Bool in
            if state.token == nil || state.idle || state.token!.feed != end.feed {
                state.token = end
                state.idle = false
            }
            defer { state.started = true }
            return !state.started && !state.stopped
        }
        guard start else { return }
        let thread = Thread { [weak store, self] in self.run { store } }
        thread.name = "strata-feed-follower"
        thread.start()
    }

    /// How many turns failed with an engine error, and the last such error.
    var failures: (count: Int, last: (any Error)?) { state.withLock { ($0.failures, $0.lastFailure) } }

    /// Stops the thread (at the store's close), waking it from its wait.
    func stop() {
        state.withLock { state in
            state.stopped = true
            return state.signal
        }?.close()
    }

    /// The thread's loop, until the store closes or is gone (`store` holds it weakly).
    private func run(_ store: () -> Store?) {
        let signal = store()?.engine.makeCommitSignal()
        defer { signal?.close() }
        let stopped = state.withLock { state in
            state.signal = signal
            return state.stopped
        }
        if stopped { return }
        while true {
            let (interval, stopped) = state.withLock { ($0.interval, $0.stopped) }
            if stopped { return }
            if let signal { signal.wait(upTo: interval) } else { Thread.sleep(forTimeInterval: interval.secondsValue) }
            guard let store = store() else { return }
            do {
                try turn(store)
            } catch EngineError.closed {
                return
            } catch RecordError.changeFeedOff {
                // Turned off while queries are observed: they go on with this process's commits
                // (documented), and a later first snapshot with the feed on again follows it.
                state.withLock { $0.token = nil }
            } catch let error as RecordError {
                // The feed moved on without this store (trimmed past it, or turned off and on):
                // what the queries missed cannot be told.
                state.withLock { $0.token = nil }
                store.observers.failLiveQueries(error)
            } catch {
                // An engine failure (a member down, a timeout, a commit that failed): try again at
                // the next turn, from the same position.
                state.withLock {
                    $0.failures += 1
                    $0.lastFailure = error
                }
            }
        }
    }

    /// One look at the feed: delivers other processes' changes since the position, if any.
    private func turn(_ store: Store) throws {
        let token = state.withLock { state -> ChangeToken? in
            // Read in the lock `begin` takes: a query registered before this is counted, or
            // begins after it and moves the position.
            if store.observers.liveQueryCount == 0 { state.idle = true }
            return state.idle ? nil : state.token
        }
        guard let token else { return }
        // First without the writer gate: nothing new, or only this store's commits, is the common case.
        let (foreign, next) = try store.engine.read { tx in try Self.foreignChanges(since: token, of: store, in: tx) }
        guard !foreign.isEmpty else {
            advance(from: token, to: next)
            return
        }
        // Then under it: the changes, the records as they are now, and a ticket that orders them
        // after every commit of this process before them and before every one after.
        // The ticket is taken under the gate and always finished: with the changes once the
        // transaction returned, empty when it threw after taking it (a commit that failed: LMDB
        // growing its map while other processes write, a disk full). One left open would hold
        // back every later delivery.
        let write = ObservedWrite(store.observers)
        defer { write.finish() }
        let deliver = { (tx: any KeyValueReader) throws -> ChangeToken in
            // The groups as the gate finds them: a first query of a type registered before it
            // reads its snapshot after these changes, and needs them delivered.
            let groups = store.observers.foreignGroups()
            let (foreign, next) = try Self.foreignChanges(since: token, of: store, in: tx)
            let ctx = TransactionContext(store: store, reader: tx, writer: nil)
            var changes: [RecordChange] = []
            var byKeyspace: [String: [RecordChange]] = [:]
            for change in foreign where groups[change.keyspace] != nil { byKeyspace[change.keyspace, default: []].append(change) }
            for (keyspace, list) in byKeyspace.sorted(by: { $0.key < $1.key }) {
                for group in groups[keyspace]! { changes += group.withRecords(list, in: ctx) }
            }
            write.take(changes, kinds: false)
            return next
        }
        let after: ChangeToken
        do {
            after = write.committing(try store.engine.write { tx in try deliver(tx) })
        } catch EngineError.readOnly {
            after = write.committing(try store.engine.read { tx in try deliver(tx) })
        }
        write.finish()
        advance(from: token, to: after)
    }

    /// Moves the position on, unless a first snapshot moved it meanwhile.
    private func advance(from token: ChangeToken, to next: ChangeToken) {
        state.withLock { state in
            if state.token == token { state.token = next }
        }
    }

    /// The changes other stores made after `token`, and the position after them.
    private static func foreignChanges(since token: ChangeToken, of store: Store, in tx: any KeyValueReader) throws -> ([RecordChange], ChangeToken) {
        var foreign: [RecordChange] = []
        var position = token
        while true {
            let page = try ChangeLog.read(since: position, limit: 1_000, skipping: store.writerID, in: tx)
            for entry in page.entries where entry.writer != store.writerID { foreign.append(entry.change) }
            position = page.next
            if page.isAtEnd { return (foreign, position) }
        }
    }
}

extension Store {
    /// How often a store with observed queries looks at the change feed for other processes'
    /// commits at most (by default every 100 ms); another process's commit also wakes it at once
    /// (inotify on the store's directory on LMDB and SQLite, a watch on etcd).
    public var otherProcessPolling: Duration {
        get { follower.interval }
        set { follower.interval = newValue }
    }
}
