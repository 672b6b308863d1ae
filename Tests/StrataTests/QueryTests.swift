import Foundation
import StrataRecords
import StrataBundledEngines
import StrataEngine
import Testing

@Suite("Record queries, on every engine")
struct QueryTests {
    static func firstNames(_ records: [Person]) -> [String] { records.map(\.firstName) }

    @Test("insert, fetch by full key, upsert, insert-if-absent, delete", arguments: TestEngines.all)
    func pointOperations(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.withTransaction { ctx in for p in people { try ctx.insert(p) } }
            try store.withTransaction { (ctx: TransactionContext) throws in
                let korben = RecordQuery.all.equal("Dallas").equal("Korben")
                #expect(try ctx.fetch(Person.self, korben) == people[0])
                try ctx.insert(Person(lastName: "Dallas", firstName: "Korben", age: 46))
                #expect(try ctx.fetch(Person.self, korben)?.age == 46)
                #expect(try ctx.insertIfAbsent(Person(lastName: "Dallas", firstName: "Korben", age: 99)) == false)
                #expect(try ctx.insertIfAbsent(Person(lastName: "Dallas", firstName: "New", age: 1)) == true)
                #expect(try ctx.delete(people[1]) == true)
                #expect(try ctx.delete(people[1]) == false)
                #expect(try ctx.fetch(Person.self, RecordQuery.all.equal("Dallas").equal("Leeloo")) == nil)
                #expect(try ctx.fetch(Person.self, RecordQuery.all.equal("Nobody").equal("Here")) == nil)
                // The direct form encodes the key components in place.
                #expect(try ctx.fetch(Person.self) { $0.append("Dallas"); $0.append("Korben") }?.age == 46)
                #expect(try ctx.fetch(Person.self) { $0.append("Dallas"); $0.append("Leeloo") } == nil)
            }
        }
    }

    @Test("every comparison on the last component", arguments: TestEngines.all)
    func comparisons(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.withTransaction { ctx in for p in people { try ctx.insert(p) } }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                let dallas = RecordQuery.all.equal("Dallas")
                func names(_ c: Comparison<String>) throws -> [String] { Self.firstNames(try Person.select(in: ctx, dallas.then(c))) }
                #expect(try names(.equals("Korben")) == ["Korben"])
                #expect(try names(.equals("Nobody")) == [])
                #expect(try names(.lessThan("Korben")) == ["Anna"])
                // lessThan and lessThanOrEqual walk down from the bound: nearest first, unless told.
                #expect(try names(.lessThanOrEqual("Korben")) == ["Korben", "Anna"])
                #expect(Self.firstNames(try Person.select(in: ctx, dallas.then(Comparison<String>.lessThanOrEqual("Korben")), order: .ascending)) == ["Anna", "Korben"])
                #expect(Self.firstNames(try Person.select(in: ctx, dallas.then(Comparison<String>.greaterThan("Anna")), limit: 1)) == ["Korben"])
                #expect(try names(.greaterThan("Korben")) == ["Leeloo", "Zed"])
                #expect(try names(.greaterThanOrEqual("Korben")) == ["Korben", "Leeloo", "Zed"])
                #expect(try names(.range("B"..<"Leeloo")) == ["Korben"])
                #expect(try names(.closedRange("B"..."Leeloo")) == ["Korben", "Leeloo"])
                #expect(try names(.oneOf(["Zed", "Missing", "Anna", "Zed"])) == ["Anna", "Zed"])
                #expect(try names(.oneOf([])) == [])
                // The prefix "Dallas" does not reach "Dallas\0".
                #expect(try Person.count(in: ctx, dallas) == 4)
                #expect(try Person.count(in: ctx, RecordQuery.all.equal("Dallas\u{0}")) == 1)
                #expect(try Person.count(in: ctx) == people.count)
                // A range on the first component of a composite key.
                let byLastName = try Person.select(in: ctx, RecordQuery.all.then(Comparison<String>.range("D"..<"Z")))
                #expect(byLastName.map(\.lastName) == ["Dallas", "Dallas", "Dallas", "Dallas", "Dallas\u{0}", "Rhod"])
            }
        }
    }

    @Test("ranges on the second component, reverse order with limits", arguments: TestEngines.all)
    func orderAndLimits(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let t0 = Date(timeIntervalSince1970: 1_700_000_000)
            try store.withTransaction { (ctx: TransactionContext) throws in
                for sensor in [1, 2, 3] {
                    for i in 0..<50 { try ctx.insert(Reading(sensor: sensor, time: t0 + Double(i) * 60, value: Double(sensor * 1000 + i))) }
                }
            }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                let two = RecordQuery.all.equal(2)
                let window = two.then(Comparison<Date>.range((t0 + 600)..<(t0 + 1200)))
                #expect(try Reading.select(in: ctx, window).map(\.value) == (10..<20).map { Double(2000 + $0) })
                #expect(try Reading.select(in: ctx, window, order: .descending).map(\.value) == (10..<20).reversed().map { Double(2000 + $0) })
                #expect(try Reading.select(in: ctx, window, limit: 3, order: .descending).map(\.value) == [2019, 2018, 2017])
                #expect(try Reading.select(in: ctx, two, limit: 2).map(\.value) == [2000, 2001])
                #expect(try Reading.select(in: ctx, two, limit: 0) == [])
                #expect(try Reading.select(in: ctx, .all, limit: 1, order: .descending).map(\.value) == [3049])
                #expect(try Reading.count(in: ctx, window) == 10)
                #expect(try Reading.select(in: ctx, two.then(Comparison<Date>.oneOf([t0 + 120, t0 + 60, t0 + 7])), order: .descending).map(\.value) == [2002, 2001])
            }
        }
    }

    @Test("delete by query", arguments: TestEngines.all)
    func deleteByQuery(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.withTransaction { ctx in for p in people { try ctx.insert(p) } }
            let removed = try store.withTransaction { (ctx: TransactionContext) throws in
                try Person.delete(in: ctx, RecordQuery.all.equal("Dallas").then(Comparison<String>.greaterThan("B")))
            }
            #expect(removed == 3)
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(Self.firstNames(try Person.select(in: ctx, RecordQuery.all.equal("Dallas"))) == ["Anna"])
                #expect(try Person.count(in: ctx) == people.count - 3)
            }
        }
    }

    @Test("fields of every built-in kind, and Codable, round-trip", arguments: TestEngines.all)
    func fieldKinds(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let reading = Reading(sensor: -7, time: Date(timeIntervalSince1970: -1.000_000_1), value: -.infinity, unit: .kelvin,
                                  tags: ["a", "", "\u{0}b"], flags: [3, -1], extra: ["x": 1, "y": -2], source: URL(string: "https://example.com/a?b=c"),
                                  calibration: .init(offset: 0.25, note: "ok"), payload: Data([0, 255, 0]))
            try store.withTransaction { ctx in try ctx.insert(reading) }
            let back = try store.withReadTransaction { ctx in try Reading.select(in: ctx) }
            #expect(back == [reading])
        }
    }

    @Test("lazy iteration of 100,000 records", arguments: TestEngines.all)
    func lazyIteration(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let t0 = Date(timeIntervalSinceReferenceDate: 0)
            // In batches of 10,000: one etcd transaction holds 19,998 writes on the test cluster.
            for batch in stride(from: 0, to: 100_000, by: 10_000) {
                try store.withTransaction { (ctx: TransactionContext) throws in
                    for i in batch..<batch + 10_000 {
                        try ctx.insert(Reading(sensor: i % 7, time: t0 + Double(i), value: Double(i), id: UUID(uuid: UUID_NULL)))
                    }
                }
            }
            var seen = 0
            var sum = 0.0
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                try Reading.forEach(in: ctx) { reading in
                    seen += 1
                    sum += reading.value
                    return true
                }
            }
            #expect(seen == 100_000)
            #expect(sum == Double(99_999 * 100_000 / 2))
        }
    }
}

private let UUID_NULL: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
