import Foundation
@testable import StrataRecords
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
import StrataMemory
import Testing

/// Paging, cursors, streams and cancellation (#15).
@Suite("Reading many records")
struct ReadingTests {
    /// A person's key as the model keeps it.
    struct Key: Hashable, Comparable {
        let last: String, first: String
        static func < (a: Key, b: Key) -> Bool { (a.last, a.first) < (b.last, b.first) }
        var person: Person { Person(lastName: last, firstName: first, age: 0) }
    }

    /// Pages through `query` while inserting and deleting at random between pages (tokens go
    /// through JSON), and checks the contract: a record present for the whole paging and not
    /// deleted is returned exactly once; nothing is returned twice; a record inserted behind the
    /// cursor is not returned; pages come in the query's order.
    @Test("paging against a model with inserts and deletes between pages, both orders, composite keys", arguments: TestEngines.all)
    func pagingModel(kind: EngineKind) throws {
        var random = SeededGenerator(seed: 0x5EED_0015)
        for round in 0..<6 {
            try withStore(kind) { store, _ in
                let descending = round % 2 == 1
                let lasts = ["A", "B", "C", "D"]
                func randomKey() -> Key { Key(last: lasts.randomElement(using: &random)!, first: String(format: "%03d", Int.random(in: 0..<120, using: &random))) }
                var present = Set((0..<150).map { _ in randomKey() })
                try store.withTransaction { ctx in for key in present { try ctx.insert(key.person) } }
                // The query: last names from B on (ascending), or up to C (descending, nearest first).
                let query = descending ? Query<Person>(.all.then(Comparison<String>.lessThanOrEqual("C")))
                    : Query<Person>(.all.then(Comparison<String>.greaterThanOrEqual("B")))
                #expect(query.defaultOrder == (descending ? .descending : .ascending))
                func matches(_ key: Key) -> Bool { descending ? key.last <= "C" : key.last >= "B" }
                var stable = Set(present.filter(matches))  // present for the whole paging, so far
                var returned: [Key] = []
                var token: PageToken?
                // Keys inserted behind the cursor, with how many records had been returned then.
                var insertedBehind: [Key: Int] = [:]
                repeat {
                    let page = try store.withReadTransaction { ctx in try query.page(in: ctx, limit: 7, after: token) }
                    returned += page.records.map { Key(last: $0.lastName, first: $0.firstName) }
                    token = try page.next.map { try JSONDecoder().decode(PageToken.self, from: try JSONEncoder().encode($0)) }
                    // Between pages: inserts anywhere (also behind the cursor) and deletes.
                    try store.withTransaction { ctx in
                        for _ in 0..<3 {
                            let key = randomKey()
                            if present.insert(key).inserted {
                                try ctx.insert(key.person)
                                if let last = returned.last, descending ? key > last : key < last { insertedBehind[key] = returned.count }
                            }
                        }
                        for _ in 0..<2 {
                            guard let key = present.randomElement(using: &random) else { break }
                            present.remove(key)
                            stable.remove(key)
                            #expect(try ctx.delete(key.person))
                        }
                    }
                } while token != nil
                #expect(Set(returned).count == returned.count, "a record returned twice")
                #expect(stable.isSubset(of: Set(returned)), "missing: \(stable.subtracting(returned).sorted().prefix(5))")
                let returnedLate = insertedBehind.filter { key, index in returned[index...].contains(key) }
                #expect(returnedLate.isEmpty, "inserted behind the cursor, yet returned: \(returnedLate.keys.sorted().prefix(3))")
                #expect(returned == (descending ? returned.sorted(by: >) : returned.sorted()), "out of order")
                #expect(returned.allSatisfy(matches))
            }
        }
    }

    @Test("a page token is refused by another query, order or record type, and by a future layout")
    func tokenRefusals() throws {
        try withStore(.memory) { store, _ in
            try store.withTransaction { ctx in for i in 0..<5 { try ctx.insert(Person(lastName: "A", firstName: "\(i)", age: i)) } }
            let query = Query<Person>(.all.equal("A"))
            let token = try #require(try store.withReadTransaction { ctx in try query.page(in: ctx, limit: 2).next })
            let refusals: [(String, (TransactionContext) throws -> Void)] = [
                ("was made by another query", { ctx in _ = try Query<Person>(.all.equal("B")).page(in: ctx, limit: 2, after: token) }),
                ("was made for the ascending order", { ctx in _ = try query.page(in: ctx, limit: 2, order: .descending, after: token) }),
                ("belongs to keyspace \"Person\"", { ctx in _ = try Query<Reading>(.all.equal(1)).page(in: ctx, limit: 2, after: token) }),
            ]
            for (why, read) in refusals {
                #expect(throws: RecordError.self, "\(why)") { try store.withReadTransaction { ctx in try read(ctx) } }
                do {
                    try store.withReadTransaction { ctx in try read(ctx) }
                } catch let error as RecordError {
                    #expect(error.description.contains(why), "\(error)")
                }
            }
            // A token from a later build (another layout version) is refused, not misread.
            var json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(token)) as! [String: Any]
            json["version"] = 3
            let future = try JSONDecoder().decode(PageToken.self, from: JSONSerialization.data(withJSONObject: json))
            #expect(throws: RecordError.self) { try store.withReadTransaction { ctx in try query.page(in: ctx, limit: 2, after: future) } }
            // The second page continues the first.
            let second = try store.withReadTransaction { ctx in try query.page(in: ctx, limit: 2, after: token) }
            #expect(second.records.map(\.firstName) == ["2", "3"])
        }
    }

    /// Tokens from strangers (#46): a service hands page tokens to its clients and gets them back.
    @Test("a page token that was altered, truncated, made on another store or oversized is refused with a typed error")
    func tokensFromStrangers() throws {
        func people(_ store: Store) throws {
            try store.withTransaction { ctx in for i in 0..<6 { try ctx.insert(Person(lastName: "A", firstName: "\(i)", age: i)) } }
        }
        let query = Query<Person>(.all.equal("A"))
        func read(_ store: Store, _ json: [String: Any]) throws -> Page<Person> {
            let token = try JSONDecoder().decode(PageToken.self, from: JSONSerialization.data(withJSONObject: json))
            return try store.withReadTransaction { ctx in try query.page(in: ctx, limit: 2, after: token) }
        }
        func refusal(_ store: Store, _ json: [String: Any]) -> String? {
            do {
                _ = try read(store, json)
                return nil
            } catch let error as RecordError {
                return error.description
            } catch {
                return "not a RecordError: \(error)"
            }
        }
        try withStore(.memory) { store, _ in
            try people(store)
            let token = try #require(try store.withReadTransaction { ctx in try query.page(in: ctx, limit: 2).next })
            let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(token)) as! [String: Any]
            #expect(try read(store, json).records.map(\.firstName) == ["2", "3"], "the token as made continues")

            // Edited fields: the check no longer matches.
            for (field, value) in [("after", Data(KeyCodec.encode("A", "4")).base64EncodedString() as Any), ("query", 7 as Any),
                                   ("keyspace", "Reading" as Any), ("descending", true as Any), ("store", 1 as Any)] {
                var edited = json
                edited[field] = value
                let why = refusal(store, edited)
                #expect(why?.contains("is damaged or was altered") == true, "\(field): \(why ?? "read")")
            }
            // Layout 1 (no store, no check).
            var old = json
            (old["version"], old["store"], old["check"]) = (1, nil, nil)
            #expect(refusal(store, old)?.contains("layout version 1") == true)
            var unchecked = json
            unchecked["check"] = nil
            #expect(refusal(store, unchecked)?.contains("is damaged or was altered") == true)
            // Truncated bytes: Foundation's typed DecodingError, before Strata sees anything.
            let bytes = try JSONEncoder().encode(token)
            for cut in [1, bytes.count / 2, bytes.count - 1] {
                #expect(throws: DecodingError.self) { try JSONDecoder().decode(PageToken.self, from: bytes.prefix(cut)) }
            }
            // A position longer than any key, with a check that matches.
            var oversized = json
            let long = Data(repeating: 0x41, count: KeyLimits.maxKeyLength + 1)
            oversized["after"] = long.base64EncodedString()
            oversized["check"] = Int(PageToken.check(store: UInt64("\(json["store"]!)")!, keyspace: "Person", index: nil,
                                                     query: UInt32("\(json["query"]!)")!, descending: false, after: long))
            #expect(refusal(store, oversized)?.contains("longer than any key") == true, "\(refusal(store, oversized) ?? "read")")
            // A position rewritten with its check recomputed reads on from there, inside the query only.
            var moved = json
            let position = Data(KeyCodec.encode("A", "3"))
            moved["after"] = position.base64EncodedString()
            moved["check"] = Int(PageToken.check(store: UInt64("\(json["store"]!)")!, keyspace: "Person", index: nil,
                                                  query: UInt32("\(json["query"]!)")!, descending: false, after: position))
            #expect(try read(store, moved).records.map(\.firstName) == ["4", "5"])

            // The same token on another store with the same records: refused.
            try withStore(.memory) { other, _ in
                try people(other)
                #expect(refusal(other, json)?.contains("was made on another store") == true, "\(refusal(other, json) ?? "read")")
            }
        }
    }

    @Test("a store made before identities: read-only, its tokens carry 0; the first writable open draws one and they are refused")
    func tokensOfAnOlderStore() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let query = Query<Person>(.all.equal("A"))
        do {
            let store = try Store(.lmdb(path: dir.path))
            try store.withTransaction { ctx in for i in 0..<6 { try ctx.insert(Person(lastName: "A", firstName: "\(i)", age: i)) } }
            try store.engine.write { tx in try tx.delete(SystemKey.identity) }  // as a build without identities left it
            try store.close()
        }
        let token: PageToken
        do {
            let reader = try Store(.lmdb(path: dir.path), mode: .readOnly)
            defer { try? reader.close() }
            token = try #require(try reader.withReadTransaction { ctx in try query.page(in: ctx, limit: 2).next })
            #expect(try reader.withReadTransaction { ctx in try query.page(in: ctx, limit: 2, after: token) }.records.map(\.firstName) == ["2", "3"])
        }
        let writer = try Store(.lmdb(path: dir.path))
        defer { try? writer.close() }
        #expect(try writer.engine.read { tx in try tx.get(SystemKey.identity) } != nil, "the writable open drew an identity")
        #expect(throws: RecordError.self) { try writer.withReadTransaction { ctx in try query.page(in: ctx, limit: 2, after: token) } }
    }

    @Test("a cursor reads in batches inside its transaction and refuses to read after it")
    func cursor() throws {
        let engine = CountingEngine(MemoryEngine())
        let store = try Store(engine: engine)
        try store.withTransaction { ctx in for i in 0..<1_000 { try ctx.insert(Person(lastName: "L", firstName: String(format: "%04d", i), age: i)) } }
        var escaped: RecordCursor<Person>?
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            engine.counts.reset()
            let cursor = Query<Person>().cursor(in: ctx, batchSize: 50)
            #expect(try cursor.next()?.age == 0)
            #expect(engine.counts.rows == 50 && engine.counts.seeks == 1, "one batch read: \(engine.counts.rows) rows")
            var ages: [Int] = [0]
            while let person = try cursor.next() { ages.append(person.age) }
            #expect(ages == Array(0..<1_000))
            #expect(engine.counts.seeks == 21, "20 full batches and one empty read: \(engine.counts.seeks)")
            escaped = Query<Person>(.all.equal("L")).cursor(in: ctx, order: .descending, batchSize: 10)
            #expect(try escaped?.next()?.age == 999)
        }
        // Its buffered batch is still there; the next read needs the transaction.
        for _ in 0..<9 { _ = try escaped?.next() }
        #expect(throws: EngineError.transactionEnded) { _ = try escaped?.next() }
        try store.close()
    }

    @Test("a stream reads every record in short transactions; a cancelled consumer stops within one batch")
    func stream() async throws {
        let engine = CountingEngine(MemoryEngine())
        let store = try Store(engine: engine)
        try await store.withTransaction { ctx in for i in 0..<2_000 { try ctx.insert(Person(lastName: "L", firstName: String(format: "%04d", i), age: i)) } }
        var ages: [Int] = []
        for try await person in Query<Person>().stream(from: store, batchSize: 300) { ages.append(person.age) }
        #expect(ages == Array(0..<2_000))

        engine.counts.reset()
        let consumer = Task {
            var seen = 0
            for try await _ in Query<Person>().stream(from: store, batchSize: 100) {
                seen += 1
                if seen == 150 { withUnsafeCurrentTask { $0?.cancel() } }
            }
            return seen
        }
        await #expect(throws: CancellationError.self) { try await consumer.value }
        #expect(engine.counts.rows == 200, "two batches read, no third: \(engine.counts.rows) rows")
        try store.close()
    }

    @Test("an async transaction whose task is cancelled before it starts does not start")
    func cancelledBeforeStart() async throws {
        let store = try Store(.memory)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let body: @Sendable (TransactionContext) throws -> Void = { ctx in try ctx.insert(Person(lastName: "X", firstName: "Y", age: 1)) }
            try await store.withTransaction(body)
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(try await store.withReadTransaction { ctx in try ctx.count(Person.self) } == 0)
        try store.close()
    }

    @Test("record views: the same records as select, read in place, in either order, with limits; a damaged value throws", arguments: TestEngines.all)
    func views(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let people = (0..<300).map { Person(lastName: "L\($0 % 3)", firstName: String(format: "%03d", $0), age: $0, email: $0 % 2 == 0 ? "e\($0)" : nil) }
            try store.withTransaction { ctx in for p in people { try ctx.insert(p) } }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                let query = RecordQuery.all.equal("L1").then(Comparison<String>.lessThan("200"))
                var viewed: [Person] = []
                var ages: [Int] = []
                try ctx.forEachView(Person.self, query) { view in
                    #expect(view.isCurrent)
                    var key = view.keyReader()
                    #expect(try key.read(String.self) == "L1")
                    var fields = view.fieldReader()
                    ages.append(try fields.read(Int.self))
                    viewed.append(try view.record())
                    return true
                }
                #expect(viewed == (try ctx.select(Person.self, query)))
                #expect(ages == viewed.map(\.age) && ages.first == 199, "nearest first: \(ages.prefix(3))")
                var limited: [String] = []
                try Query<Person>(query).forEachView(in: ctx, limit: 5, order: .ascending) { view in
                    limited.append(try view.record().firstName)
                    return limited.count < 3
                }
                #expect(limited == ["001", "004", "007"])
            }
            // A damaged value: the view is never handed out.
            try store.engine.write { tx in
                let key = KeyCodec.encode("Person", "L0", "000")
                var value = try #require(try tx.get(key))
                value[2] ^= 0x40
                try tx.put(value, forKey: key)
            }
            #expect(throws: RecordError.self) {
                try store.withReadTransaction { ctx in try ctx.forEachView(Person.self) { _ in true } }
            }
        }
    }

    /// More blocking transaction bodies than the cooperative pool has threads: each waits until
    /// released, and the test (without blocking a thread itself) waits until all are running at
    /// once. On the cooperative pool (one thread per core) at most one per core could be.
    ///
    /// Other tests may hold the cooperative threads for a while (Swift Testing runs synchronous
    /// tests there), so the tasks may start late: the time limit for running at once starts when
    /// every task has asked for its transaction.
    @Test("async transactions run outside the cooperative pool: more blocked bodies than cores run at once")
    func offTheCooperativePool() async throws {
        let store = try Store(.memory)
        let bodies = ProcessInfo.processInfo.activeProcessorCount + 1
        let release = DispatchSemaphore(value: 0)
        let running = Concurrency()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<bodies {
                group.addTask {
                    running.submit()
                    try await store.withReadTransaction { _ in
                        running.enter()
                        _ = release.wait(timeout: .now() + 120)
                        running.leave()
                    }
                }
            }
            let submitted = ContinuousClock.now + .seconds(300)
            while running.submitted < bodies && ContinuousClock.now < submitted { try await Task.sleep(for: .milliseconds(20)) }
            #expect(running.submitted == bodies, "only \(running.submitted) of \(bodies) tasks started in 5 minutes")
            let deadline = ContinuousClock.now + .seconds(30)
            while running.highest < bodies && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(running.highest == bodies, "at most \(running.highest) of \(bodies) transaction bodies ran at once")
            for _ in 0..<bodies { release.signal() }
            try await group.waitForAll()
        }
        try store.close()
    }
}

/// How many bodies run at once, and the most that did.
final class Concurrency: @unchecked Sendable {
    private let lock = NSLock()
    private var now = 0
    private var most = 0
    private var asked = 0
    func submit() { lock.withLock { asked += 1 } }
    var submitted: Int { lock.withLock { asked } }
    func enter() { lock.withLock { now += 1; most = max(most, now) } }
    func leave() { lock.withLock { now -= 1 } }
    var highest: Int { lock.withLock { most } }
}

/// A small deterministic generator (SplitMix64) for reproducible random tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
