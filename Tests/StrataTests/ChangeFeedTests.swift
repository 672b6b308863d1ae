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
}

