import Foundation
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// The change feed beyond the conformance cases (`Conformance/Records/ChangeFeedCases.swift`,
/// which run on every engine): its setting kept in the store across opens, the feature that keeps
/// older builds out, the feed beside observers, read-only stores, async writes.
@Suite("Change feed")
struct ChangeFeedTests {
    private static func personChange(_ p: Person, _ kind: RecordChange.Kind) -> RecordChange {
        RecordChange(keyspace: "Person", key: EncodedIndexKey(bytes: KeyCodec.encode(p.lastName, p.firstName)), kind: kind)
    }

    @Test("the feed stays on across opens, its versions go on, and the store lists the feature while it is on",
          arguments: BundledEngines.all.filter { $0.declaration.capabilities.contains(.persistent) })
    func keptAcrossOpens(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        func features(_ store: Store) throws -> [String] {
            try store.engine.read { try $0.get(SystemKey.features).map(Manifest.decodeFeatures) ?? [] }
        }
        do {
            let store = try Store(kind.configuration(path: dir.path))
            defer { try? store.close() }
            try store.enableChangeFeed(retention: .commits(50))
            try store.insert(people[0])
            #expect(try features(store) == ["changefeed"])
        }
        do {
            let store = try Store(kind.configuration(path: dir.path), mode: .openExisting)
            defer { try? store.close() }
            #expect(try store.changeFeedRetention() == .commits(50))
            try store.insert(people[1])
            try store.insert(people[0])
            let entries = try store.changes(since: nil).entries
            #expect(entries.map(\.version) == [1, 2, 3])
            #expect(entries.map(\.change) == [Self.personChange(people[0], .insert), Self.personChange(people[1], .insert), Self.personChange(people[0], .update)])
            #expect(entries.allSatisfy { abs($0.committedAt.timeIntervalSinceNow) < 600 })
            try store.disableChangeFeed()
            #expect(try features(store) == [])
        }
    }

    @Test("a store opened read-only reads the feed; turning it on there is refused and changes nothing")
    func readOnly() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        do {
            let store = try Store(.lmdb(path: dir.path))
            try store.enableChangeFeed()
            try store.insert(people[2])
            try store.close()
        }
        let store = try Store(.lmdb(path: dir.path), mode: .readOnly)
        defer { try? store.close() }
        #expect(try store.changes(since: nil).entries.map(\.change) == [Self.personChange(people[2], .insert)])
        #expect(throws: (any Error).self) { try store.enableChangeFeed(retention: .commits(1)) }
        #expect(try store.changeFeedRetention() == .commits(100_000))
    }

    @Test("with observers registered, the feed and a TransactionObserver see the same changes, for synchronous and async writes",
          arguments: TestEngines.all)
    func besideObservers(kind: EngineKind) async throws {
        try await withAsyncStore(kind) { store in
            try store.enableChangeFeed()
            let log = CommitRecorder()
            store.add(observer: log)
            let start = try store.changeFeedEnd()
            try store.insert(people[0])
            try await store.withTransaction { ctx in
                try ctx.insert(people[1])
                try ctx.insert(people[0])
                _ = try ctx.delete(people[1])
            }
            // A write transaction that began with no observer and no feed read: the feed alone
            // must still get insert and update right (an unobserved insert reads nothing).
            store.remove(observer: log)
            try store.insert(people[3])
            try store.insert(people[3])
            let feed = try store.changes(since: start).entries
            let observed = log.all.flatMap { $0 }
            #expect(Array(feed.prefix(observed.count).map(\.change)) == observed)
            #expect(feed.map(\.change) == [
                Self.personChange(people[0], .insert), Self.personChange(people[1], .insert), Self.personChange(people[0], .update),
                Self.personChange(people[1], .delete), Self.personChange(people[3], .insert), Self.personChange(people[3], .update),
            ])
            #expect(feed.map(\.version) == [1, 2, 2, 2, 3, 4])
        }
    }

    @Test("a transaction that changes no record, or rolls back, takes no version")
    func noVersionWithoutChanges() throws {
        try withStore(.memory) { store, _ in
            try store.enableChangeFeed()
            try store.withTransaction { ctx in _ = try ctx.delete(people[0]) }  // nothing to delete
            struct Abort: Error {}
            #expect(throws: Abort.self) { try store.withTransaction { ctx in try ctx.insert(people[0]); throw Abort() } }
            try store.insert(people[4])
            #expect(try store.changes(since: nil).entries.map(\.version) == [1])
            #expect(try store.changeFeedEnd().version == 2)
        }
    }

    /// Found by the `entries` fuzz target: a chunk with a valid checksum whose keyspace position
    /// does not fit an Int, or whose first change is near Int.max, trapped instead of throwing.
    @Test("a chunk naming an absurd keyspace position or first change is a typed error, not a trap",
          arguments: [(UInt64.max, 0), (UInt64(0), Int.max)] as [(UInt64, Int)])
    func absurdChunk(keyspacePosition: UInt64, first: Int) throws {
        let key = [0] + KeyCodec.encode("changes") + KeyCodec.encode(5, 1, first)
        var w = FieldWriter()
        w.write(UInt64(1))            // committed at
        w.write(7)                    // writer
        w.writeVarint(2)              // changes in the transaction
        w.write(["Note"])             // keyspaces
        w.writeVarint(1)              // changes in the chunk
        w.writeVarint(keyspacePosition)
        w.write(UInt8(0))             // kind
        w.writeBytes([1, 2])          // key
        let checksum = key.withUnsafeBytes { k in w.bytes.withUnsafeBytes { RecordChecksum.of(key: k, value: $0) } }
        let value = w.bytes + withUnsafeBytes(of: checksum.littleEndian) { Array($0) }
        #expect(throws: RecordError.self) {
            try key.withUnsafeBytes { k in try value.withUnsafeBytes { try ChangeLog.decodeChunk(key: k, value: $0, feed: 5) } }
        }
    }

    /// Found by the `entries` fuzz target's round trip: a chunk's transaction count was read as a
    /// count of the bytes left, so a large transaction's last, short chunk was refused as damaged.
    @Test("a chunk holding fewer bytes than its transaction has changes (a large transaction's last) reads")
    func lastChunkOfALargeTransaction() throws {
        let key = [0] + KeyCodec.encode("changes") + KeyCodec.encode(5, 1, 4_999)
        let change = RecordChange(keyspace: "Note", key: EncodedIndexKey(bytes: KeyCodec.encode(7)), kind: .insert)
        let value = ChangeLog.encodeChunk(key: key, committedAt: 1, writer: 9, total: 5_000, [change][...])
        let chunk = try key.withUnsafeBytes { k in try value.withUnsafeBytes { try ChangeLog.decodeChunk(key: k, value: $0, feed: 5) } }
        #expect(chunk.total == 5_000 && chunk.first == 4_999 && chunk.changes == [change])
    }

    /// A transaction's chunks are encoded as its changes are made (`ChangeLogChunks`): each chunk
    /// fits its budget (but for a first change larger than it), lists only its own changes'
    /// keyspaces, and together they hold every change in order.
    @Test("chunks built change by change fit the budget, list their own keyspaces only and hold every change in order")
    func chunksAsChangesAreMade() throws {
        var rng = SeededGenerator(seed: 44)
        for budget in [64, 200, 1_000, 100_000] {
            let settings = ChangeLog.Settings(feed: 5, retention: ChangeFeedRetention())
            var chunks = ChangeLogChunks(settings: settings, version: 3, expired: [], maxValueLength: budget * 2)
            let keyspaces = ["A", "Bee", "Ç", "dee-long-keyspace-name"]
            let types: [Any.Type] = [Int.self, String.self, Double.self, Bool.self]  // a type per keyspace
            var made: [RecordChange] = [], offsets: [Int] = []
            for _ in 0..<500 {
                // Runs of one keyspace, as transactions mostly write, and single changes between.
                let keyspace = keyspaces[Int.random(in: 0..<4, using: &rng)]
                for _ in 0..<Int.random(in: 1...5, using: &rng) {
                    // Keys of 128 bytes and more (a length of two varint bytes) where the budget allows.
                    let length = Int.random(in: 0...(budget >= 1_000 ? 300 : budget > 100 ? 90 : 120), using: &rng)
                    let key = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                    let kind = [RecordChange.Kind.insert, .update, .delete][Int.random(in: 0..<3, using: &rng)]
                    offsets.append(key.withUnsafeBytes { chunks.append(type: ObjectIdentifier(types[keyspaces.firstIndex(of: keyspace)!]), keyspace: keyspace, kind, key: $0) })
                    made.append(RecordChange(keyspace: keyspace, key: EncodedIndexKey(bytes: key), kind: kind))
                }
            }
            // Kinds told later (DeferredKinds) rewrite one byte each, at the offset the append gave.
            for i in stride(from: 3, to: made.count, by: 7) {
                let kind = [RecordChange.Kind.insert, .update, .delete][Int.random(in: 0..<3, using: &rng)]
                chunks.setKind(kind, at: offsets[i])
                made[i] = RecordChange(keyspace: made[i].keyspace, key: made[i].key, kind: kind)
            }
            var read: [RecordChange] = []
            let values = chunks.values(committedAt: 1_700_000_000_000, writer: 9)
            #expect(values.count > 1 || budget == 100_000, "budget \(budget): \(values.count) chunks")
            for (key, value) in values {
                let chunk = try key.withUnsafeBytes { k in try value.withUnsafeBytes { try ChangeLog.decodeChunk(key: k, value: $0, feed: 5) } }
                #expect(chunk.version == 3 && chunk.first == read.count && chunk.total == made.count && chunk.writer == 9)
                var listed: [String] = []
                for change in chunk.changes where !listed.contains(change.keyspace) { listed.append(change.keyspace) }
                let names = try value.withUnsafeBytes { raw in
                    var r = FieldReader(raw)
                    _ = try r.read(UInt64.self); _ = try r.read(Int.self); _ = try r.readVarint()
                    return try r.read([String].self)
                }
                #expect(names == listed, "budget \(budget): the chunk lists \(names), its changes name \(listed)")
                let changeBytes = chunk.changes.reduce(0) { $0 + $1.key.bytes.count + 8 } + listed.reduce(0) { $0 + $1.utf8.count + 2 }
                #expect(chunk.changes.count == 1 || changeBytes <= budget, "budget \(budget): a chunk of \(changeBytes) bytes")
                read += chunk.changes
            }
            #expect(read == made, "budget \(budget)")
        }
    }

    /// A writer trims up to twice the chunks it wrote and 16 more. It looks for the first 18 as
    /// it begins; a transaction of more than one chunk looks again as it ends.
    @Test("a writer trims up to twice the chunks it wrote and 16 more, also past the 18 it looks for as it begins")
    func trimBudget() throws {
        let long = String(repeating: "w", count: 400)
        for names in [1, 1_000] {  // 1,000 keys of ~410 bytes fill 13 chunks of 32 KiB
            try withStore(.memory) { store, _ in
                try store.enableChangeFeed(retention: .forever)
                for i in 0..<100 { try store.insert(Person(lastName: "\(i)", firstName: "", age: 1)) }
                // The retention shrunk without the trim that turning the feed on again would run:
                // the next writer finds all 100 transactions expired.
                try store.engine.write { tx in
                    var settings = try ChangeLog.settings(in: tx)!
                    settings.maxCommits = 1
                    try tx.put(settings.encoded(), forKey: SystemKey.changeFeed)
                }
                try store.withTransaction { ctx in for i in 0..<names { try ctx.insert(Person(lastName: "\(long)\(i)", firstName: "", age: 1)) } }
                let versions = try store.engine.read { tx in
                    let feed = try ChangeLog.settings(in: tx)!.feed
                    return try tx.keys(ChangeLog.range(feed: feed)).map { key in try key.withUnsafeBytes { try ChangeLog.position(ofChunk: $0, feed: feed).version } }
                }
                let written = versions.filter { $0 == 101 }.count
                #expect(names == 1 ? written == 1 : written > 9, "\(names) changes: \(written) chunks")
                let trimmed = min(100, 2 * written + 16)
                #expect(versions == Array(UInt64(trimmed + 1)...100) + Array(repeating: 101, count: written),
                        "\(names) changes, \(written) chunks: versions \(versions.first ?? 0)... of \(versions.count) chunks left")
            }
        }
    }

    /// Records migrated by `prepare` are rewritten, not changed: observers are not told of them,
    /// and neither is the feed (found in review: the feed's chunks took them as updates).
    @Test("records migrated by prepare take no feed version")
    func migrationsStayOutOfTheFeed() throws {
        let dir = TemporaryDirectory()
        let store = try Store(.lmdb(path: dir.path))
        try store.enableChangeFeed()
        try store.withTransaction { ctx in for person in people { try ctx.insert(person) } }
        let end = try store.changeFeedEnd()
        try store.close()
        let upgraded = try Store(.lmdb(path: dir.path))
        let report = try upgraded.prepare(PersonV2.self, batchSize: 2).wait()
        #expect(report.migrated == people.count)
        #expect(try upgraded.changes(since: end).entries.isEmpty)
        try upgraded.insert(PersonV2(lastName: "New", firstName: "One", age: 1))
        #expect(try upgraded.changes(since: end).entries.map(\.version) == [end.version])
        try upgraded.close()
    }

    /// A transaction observer registered while a transaction runs is not told of it: with the
    /// feed on, that transaction tells kinds but records for the observed queries only what they
    /// want (found in review: the observer got the one change of 11 a key query wanted).
    @Test("an observer registered during a transaction with the feed on is told of the next, whole, not a part of that one")
    func observerRegisteredMidTransaction() async throws {
        try await withAsyncStore(.memory) { store in
            try store.enableChangeFeed()
            var observation = store.observe(Query<Person>(RecordQuery.all.equal("Zed"))).makeAsyncIterator()
            _ = try await observation.next()
            let late = CommitRecorder()
            try await store.withTransaction { ctx in
                for person in people { try ctx.insert(person) }
                try ctx.insert(Person(lastName: "Zed", firstName: "a", age: 1))
                store.add(observer: late)
            }
            try store.insert(Person(lastName: "Other", firstName: "b", age: 2))
            _ = try await observation.next()
            let feed = try store.changes(since: nil).entries
            #expect(feed.filter { $0.version == 1 }.count == people.count + 1)
            #expect(late.all == [[RecordChange(keyspace: "Person", key: EncodedIndexKey(bytes: KeyCodec.encode("Other", "b")), kind: .insert)]])
        }
    }

    /// The feed's reads at a transaction's first record use can fail (a damaged chunk key here);
    /// a body that catches the error must not then commit records without their changes.
    @Test("a body that catches the feed's failed first read cannot commit records the feed misses")
    func caughtFeedReadFailure() throws {
        try withStore(.memory) { store, _ in
            try store.enableChangeFeed()
            try store.insert(people[0])
            let feed = try store.engine.read { try ChangeLog.settings(in: $0)!.feed }
            try store.engine.write { try $0.put([1], forKey: ChangeLog.chunkKey(feed: feed, version: 9, first: 0) + [0xEE]) }
            #expect(throws: RecordError.self) {
                try store.withTransaction { ctx in
                    _ = try? ctx.insert(people[1])
                    try ctx.insert(people[2])
                }
            }
            #expect(try store.withReadTransaction { try $0.fetch(Person.self, RecordQuery.all.equal(people[2].lastName).equal(people[2].firstName)) } == nil)
        }
    }
}
