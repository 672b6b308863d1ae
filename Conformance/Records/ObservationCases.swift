import Foundation
import StrataConformance
@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec
import StrataRecords

/// The record the observation cases write: key `id`, one value, a keyspace of its own.
struct WatchedNote: Record, Equatable, Sendable {
    var id: Int
    var value: Int
    static let recordType = RecordType(keyspace: "WatchedNote", version: 1, key: [("id", Int.self)], fields: [("value", Int.fieldFormat)])
    init(id: Int, value: Int) { (self.id, self.value) = (id, value) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(value) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        value = try fields.read()
    }
    static func key(_ id: Int) -> EncodedIndexKey { EncodedIndexKey(bytes: KeyCodec.encode(id)) }
}

/// What the observation case's two writers commit, generated from a seed so that the peer
/// process and the case agree on it without talking: writer `w` writes only the observed ranges
/// `r` with `r % 2 == w` below ``writtenRanges`` and ids of its own past every observed range.
/// Their keys never meet, so each writer's changes (inserts or updates, deletes that find a
/// record) follow from its own commits alone, whatever the interleaving.
struct ObservationWorkload {
    /// How many queries are observed, each on ids `width * r ..< width * (r + 1)`.
    let observedRanges: Int
    static let width = 10
    /// Ranges from here on (the last tenth) are observed and never written: their observers
    /// must never wake.
    var writtenRanges: Int { max(2, observedRanges * 9 / 10) }

    init(observers: Int) { observedRanges = max(observers, 3) }
    /// Ids from here on are read by no observer (each writer has 1,000 of them).
    static let unobserved = 1_000_000

    enum Operation: Equatable {
        case put(id: Int, value: Int)
        case delete(id: Int)
        var id: Int {
            switch self {
            case .put(let id, _), .delete(let id): return id
            }
        }
    }

    /// Writer `writer`'s `count` commits (1 to 3 writes each).
    func commits(seed: UInt64, writer: Int, count: Int) -> [[Operation]] {
        var random = SeededRandom(seed: seed &+ UInt64(writer) &* 0x9E37_79B9)
        return (0..<count).map { step in
            (0..<Int.random(in: 1...3, using: &random)).map { _ in
                let id: Int
                if Int.random(in: 0..<8, using: &random) == 0 {
                    id = Self.unobserved + writer * 1_000 + Int.random(in: 0..<1_000, using: &random)
                } else {
                    let range = 2 * Int.random(in: 0..<(writtenRanges / 2), using: &random) + writer
                    id = range * Self.width + Int.random(in: 0..<Self.width, using: &random)
                }
                return Int.random(in: 0..<4, using: &random) == 0 ? .delete(id: id) : .put(id: id, value: step)
            }
        }
    }

    /// Which writer writes the record stored as `key`.
    static func writer(of key: EncodedIndexKey) throws -> Int {
        let id = try self.id(key)
        return id >= unobserved ? (id - unobserved) / 1_000 : (id / width) % 2
    }

    /// The id of the record stored as `key`.
    static func id(_ key: EncodedIndexKey) throws -> Int {
        try key.bytes.withUnsafeBytes { bytes in
            var reader = KeyReader(bytes)
            return try reader.read(Int.self)
        }
    }

    /// The observed range holding `id`, if one does.
    func range(of id: Int) -> Int? { id < observedRanges * Self.width ? id / Self.width : nil }

    /// Runs `commits` on `store`, one write transaction each.
    static func write(_ commits: [[Operation]], to store: Store) throws {
        for operations in commits {
            try store.withTransaction { tx in
                for operation in operations {
                    switch operation {
                    case .put(let id, let value): try tx.insert(WatchedNote(id: id, value: value))
                    case .delete(let id): _ = try tx.delete(WatchedNote.self, key: WatchedNote.key(id))
                    }
                }
            }
        }
    }

    /// What `commits` leave, and the changes each made (commits that changed nothing left out),
    /// starting from `records`.
    static func replay(_ commits: [[Operation]], on records: inout [Int: Int]) -> [[RecordChange]] {
        var log: [[RecordChange]] = []
        for operations in commits {
            var changes: [RecordChange] = []
            for operation in operations {
                let key = WatchedNote.key(operation.id)
                switch operation {
                case .put(let id, let value):
                    changes.append(RecordChange(keyspace: "WatchedNote", key: key, kind: records[id] == nil ? .insert : .update))
                    records[id] = value
                case .delete(let id):
                    if records.removeValue(forKey: id) != nil { changes.append(RecordChange(keyspace: "WatchedNote", key: key, kind: .delete)) }
                }
            }
            if !changes.isEmpty { log.append(changes) }
        }
        return log
    }

    /// The peer's command `observation-writes SEED WRITER COUNT OBSERVERS`: writes that
    /// writer's commits through a record store on the peer's engine and replies `wrote COUNT`.
    static let peerCommand: ConformancePeer.Command = { engine, words in
        guard words.count == 4, let seed = UInt64(words[0]), let writer = Int(words[1]), let count = Int(words[2]), let observers = Int(words[3]) else {
            throw ConformanceFailure("observation-writes SEED WRITER COUNT OBSERVERS, got \(words)")
        }
        // Not closed: closing the store would close the peer's engine, which `quit` closes.
        let store = try Store(engine: engine)
        try write(ObservationWorkload(observers: observers).commits(seed: seed, writer: writer, count: count), to: store)
        return "wrote \(count)"
    }
}

/// Observed queries (``Store/observe(_:limit:order:)``) and the change feed under many commits:
/// a commit wakes exactly the observers whose ranges it wrote, none is missed, and the feed is
/// the model's log, with two processes writing where the engine allows it.
enum ObservationCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("observation", "observers on disjoint ranges (1,000) and random commits (10,000) from two writers, in two processes where the engine allows, the change feed on: no spurious wake-up, none missed, the feed is the model's log") { ctx in
            try run(ctx, feed: true)
        },
        ConformanceCase("observation", "observers on disjoint ranges (1,000) and random commits (10,000) from two threads, the change feed off (a transaction records only what the observers may need): no spurious wake-up, none missed") { ctx in
            try run(ctx, feed: false)
        },
    ]

    /// A case's body: with the feed on, the second writer is the peer process where the engine
    /// declares `multiProcess` (and the peer serves ``RecordConformance/peerCommands``); otherwise
    /// a second thread.
    static func run(_ ctx: CaseContext, feed: Bool) throws {
        let (observers, commits) = (CaseStores.observation.observers, CaseStores.observation.commits)
        let workload = ObservationWorkload(observers: observers)
        let store = try ctx.recordStore()
        if feed { try store.enableChangeFeed(retention: .forever) }
        let start = feed ? try store.changeFeedEnd() : nil
        let seed: UInt64 = 0x0B5E_17E5
        let perWriter = max(1, commits / 2)
        let plans = [0, 1].map { workload.commits(seed: seed, writer: $0, count: perWriter) }

        // The observers' iterators run on a thread of their own: a test suite holding the
        // cooperative pool cannot hold them back.
        let executor = ThreadExecutor(name: "strata-conformance-observers")
        defer { executor.shutdown() }
        let queries = (0..<workload.observedRanges).map { r in
            Query<WatchedNote>(RecordQuery.all.then(Comparison.range((r * ObservationWorkload.width)..<((r + 1) * ObservationWorkload.width))))
        }
        final class Observed: Sendable {
            let last: Locked<[[WatchedNote]?]>
            let ready = Locked(0)
            let snapshots = Locked(0)
            let failures = Locked<[String]>([])
            init(_ count: Int) { last = Locked(Array(repeating: nil, count: count)) }
        }
        let observed = Observed(queries.count)
        // Each task returns its observation's wake-ups once cancelled (`next()` then ends it).
        let tasks = queries.enumerated().map { i, query in
            Task(executorPreference: executor) { () -> Int in
                var iterator = store.observe(query).makeAsyncIterator()
                do {
                    let first = try await iterator.next()
                    if first?.records.isEmpty != true { observed.failures.withLock { $0.append("observer \(i): a first snapshot of an empty store held records") } }
                    observed.ready.withLock { $0 += 1 }
                    while let snapshot = try await iterator.next() {
                        observed.last.withLock { $0[i] = snapshot.records }
                        observed.snapshots.withLock { $0 += 1 }
                    }
                } catch {
                    observed.failures.withLock { $0.append("observer \(i): \(error)") }
                }
                return iterator.wakeUps
            }
        }
        defer { for task in tasks { task.cancel() } }
        let registering = Date().addingTimeInterval(300)
        while observed.ready.withLock({ $0 }) < queries.count && observed.failures.withLock({ $0.isEmpty }) && Date() < registering { Thread.sleep(forTimeInterval: 0.01) }
        try expectEqual(observed.failures.withLock { $0 }, [], "observations that failed to start")
        try expectEqual(observed.ready.withLock { $0 }, queries.count, "observations started within 300 s")

        // Writer 0 here; writer 1 in the peer process, or on a second thread where the engine
        // is one process's, the feed is off (the peer's commits would be invisible here), the
        // case's stores carry transforms the peer cannot open, or the peer lacks the command.
        var peer: PeerProcess?
        if feed && ctx.engine.capabilities.contains(.multiProcess) && !CaseStores.hasTransforms {
            let process = try ctx.peer()
            process.send("observation-writes \(seed) 1 0 \(observers)")
            let answer = try process.nextLine()
            if answer == "wrote 0" { peer = process } else if !answer.hasPrefix("error unknown command") {
                throw ConformanceFailure("the peer process, observation-writes: \(answer)")
            }
        }
        if let peer {
            peer.send("observation-writes \(seed) 1 \(perWriter) \(observers)")
            try ObservationWorkload.write(plans[0], to: store)
            let reply = try peer.nextLine(within: 1_200)
            try expectEqual(reply, "wrote \(perWriter)", "the peer process's writes")
        } else {
            let second = BackgroundThread { try ObservationWorkload.write(plans[1], to: store) }
            try ObservationWorkload.write(plans[0], to: store)
            try second.join()
        }

        // The model: each writer's records and log, and which commits concerned each range.
        var model: [Int: Int] = [:]
        let logs = plans.map { ObservationWorkload.replay($0, on: &model) }
        var touching = Array(repeating: [0, 0], count: queries.count)
        for (writer, log) in logs.enumerated() {
            for commit in log {
                for range in Set(try commit.compactMap { workload.range(of: try ObservationWorkload.id($0.key)) }) { touching[range][writer] += 1 }
            }
        }

        // The feed: versions one per commit from the start, each writer's commits in its order.
        if let start {
            var entries: [ChangeFeedEntry] = []
            var token: ChangeToken? = start
            while true {
                let page = try store.changes(since: token, limit: 5_000)
                entries += page.entries
                token = page.next
                if page.isAtEnd { break }
            }
            var byVersion: [(version: UInt64, changes: [RecordChange])] = []
            for entry in entries {
                if byVersion.last?.version == entry.version { byVersion[byVersion.count - 1].changes.append(entry.change) } else { byVersion.append((entry.version, [entry.change])) }
            }
            try expectSameList(byVersion.map(\.version), Array(start.version..<(start.version + UInt64(logs[0].count + logs[1].count))), "the feed's versions")
            for writer in 0..<2 {
                let commits = try byVersion.filter { try ObservationWorkload.writer(of: $0.changes[0].key) == writer }.map(\.changes)
                try expectSameList(commits.map { "\($0)" }, logs[writer].map { "\($0)" }, "writer \(writer)'s commits in the feed")
            }
        }

        // Every observer comes to its fresh query, which is the model's range.
        let fresh = try store.withReadTransaction { tx in try queries.map { try $0.select(in: tx) } }
        for (r, records) in fresh.enumerated() {
            let expected = model.filter { workload.range(of: $0.key) == r }.sorted { $0.key < $1.key }.map { WatchedNote(id: $0.key, value: $0.value) }
            try expectEqual(records, expected, "range \(r) read fresh against the model")
        }
        // Waits while snapshots keep coming: a missed change shows as a minute without one.
        var (seen, quiet) = (-1, Date())
        func behind() -> [Int] { observed.last.withLock { last in queries.indices.filter { (last[$0] ?? []) != fresh[$0] } } }
        while !behind().isEmpty && observed.failures.withLock({ $0.isEmpty }) {
            let now = observed.snapshots.withLock { $0 }
            if now != seen { (seen, quiet) = (now, Date()) } else if Date().timeIntervalSince(quiet) > 60 { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        try expectEqual(observed.failures.withLock { $0 }, [], "observations that failed")
        let late = behind()
        try expectTrue(late.isEmpty, "\(late.count) observers' last snapshots differ from a fresh query, and none came for 60 s (first: range \(late.first ?? -1): \(observed.last.withLock { $0[late.first ?? 0] ?? [] }) observed, \(fresh[late.first ?? 0]) stored)")

        // This process's commits may still be on their way to the observers (a writer returns
        // before another thread delivers its commit): a last commit, told to a transaction
        // observer, is delivered after every earlier one.
        final class Marker: TransactionObserver {
            let told = DispatchSemaphore(value: 0)
            func didCommit(_ changes: [RecordChange]) { if changes.contains(where: { $0.keyspace == "WatchedNote" }) { told.signal() } }
        }
        let marker = Marker()
        store.add(observer: marker)
        try store.insert(WatchedNote(id: ObservationWorkload.unobserved + 10_000, value: 0))
        guard marker.told.wait(timeout: .now() + 60) == .success else { throw ConformanceFailure("a last commit was not delivered within 60 s") }
        store.remove(observer: marker)

        // Wake-ups: this process's commits wake exactly the ranges they wrote, once each; the
        // other process's arrive in the batches the follower reads (at most one per commit);
        // ranges nobody writes never wake.
        for task in tasks { task.cancel() }
        let wakeUps = try blockingAwait(on: executor) { () -> [Int] in
            var wakeUps: [Int] = []
            for task in tasks { wakeUps.append(await task.value) }
            return wakeUps
        }
        for (r, wakes) in wakeUps.enumerated() {
            let (own, other) = peer != nil ? (touching[r][0], touching[r][1]) : (touching[r][0] + touching[r][1], 0)
            if r >= workload.writtenRanges { try expectEqual(wakes, 0, "wake-ups of range \(r), which nobody writes") }
            try expectTrue(wakes >= own && wakes <= own + other,
                           "range \(r): \(wakes) wake-ups for \(own) commits of this process and \(other) of the other")
        }
    }
}
