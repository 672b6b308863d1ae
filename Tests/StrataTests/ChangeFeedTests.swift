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
}
