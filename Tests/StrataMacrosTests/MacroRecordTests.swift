import Foundation
import Strata
import Testing

@IndexKeyRecord("lastName", "firstName")
struct Person {
    let lastName: String
    let firstName: String
    let age: Int
}

/// Key properties declared in another order than the key, among fields of several kinds.
@IndexKeyRecord("city", "day", "id")
struct Visit {
    var note: String?
    let id: Int
    var tags: [String] = []
    let day: Date
    static let unit = "visits"               // static: ignored
    var summary: String { "\(city) \(id)" }  // computed: ignored
    let schemaNote = "fixed"                 // a let with a value: not part of the record
    let city: String
    var visits: Int = 1 {
        didSet { precondition(visits >= 0) }   // observers: still stored
    }
}

/// Several properties in one declaration, the key among them.
@IndexKeyRecord("x", "y")
struct Point {
    let x, y: Int
    var label, note: String?
}

/// Key properties named like the generated methods' own parameters.
@IndexKeyRecord("limit", "order")
struct Tier {
    let limit: Int
    let order: String
    var ctx: String
}

enum Outer {
    /// A record nested in another type, with an explicit keyspace and version.
    @IndexKeyRecord("code", keyspace: "countries", version: 7)
    struct Country {
        let code: String
        var name: String
        var population: Int64?
    }
}

enum Engines: String, CaseIterable, CustomStringConvertible {
    case lmdb, leveldb, sqlite, memory
    var description: String { rawValue }
    func open(_ path: String) throws -> Store {
        switch self {
        case .lmdb: return try Store(.lmdb(path: path))
        case .leveldb: return try Store(.leveldb(path: path))
        case .sqlite: return try Store(.sqlite(path: path))
        case .memory: return try Store(.memory)
        }
    }
}

func temporaryPath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("strata-macro-\(UUID().uuidString)").path
}

@Suite("@IndexKeyRecord records")
struct MacroRecordTests {
    @Test("the README example compiles and runs", arguments: Engines.allCases)
    func readmeExample(engine: Engines) throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)
        try store.withTransaction { ctx in
            try ctx.insert(Person(lastName: "Dallas", firstName: "Korben", age: 45))
            try ctx.insert(Person(lastName: "Dallas", firstName: "Leeloo", age: 25))
            try ctx.insert(Person(lastName: "Zorg", firstName: "Jean-Baptiste", age: 50))
            let people = try Person.select(in: ctx, lastName: "Dallas", firstName: .lessThan("L"))
            #expect(people.map(\.firstName) == ["Korben"])
        }
        let (all, dallas, korben, older) = try store.withReadTransaction { ctx in
            (try Person.select(in: ctx, lastName: .greaterThanOrEqual("A")).count,
             try Person.count(in: ctx, lastName: "Dallas"),
             try Person.select(in: ctx, lastName: "Dallas", firstName: "Korben").first?.age,
             try Person.select(in: ctx, limit: 1, order: .descending, lastName: "Dallas", firstName: .range("A"..<"Z")).map(\.firstName))
        }
        #expect(all == 3 && dallas == 2 && korben == 45 && older == ["Leeloo"])
        let removed = try store.withTransaction { ctx in try Person.delete(in: ctx, lastName: "Dallas") }
        #expect(removed == 2)
        try store.close()
    }

    @Test("key order differs from declaration order: values never swap", arguments: Engines.allCases)
    func declarationOrder(engine: Engines) throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)
        let day = Date(timeIntervalSince1970: 1_700_000_000.25)
        let visit = Visit(note: "hi\u{0}there", id: 42, tags: ["a", "b"], day: day, city: "Paris", visits: 3)
        try store.withTransaction { ctx in
            try ctx.insert(visit)
            try ctx.insert(Visit(note: nil, id: 7, day: day + 60, city: "Paris"))
            try ctx.insert(Visit(note: nil, id: 1, day: day, city: "Oslo"))
        }
        try store.withReadTransaction { ctx in
            let found = try Visit.select(in: ctx, city: "Paris", day: day, id: 42)
            #expect(found.count == 1)
            let v = try #require(found.first)
            #expect(v.city == "Paris" && v.id == 42 && v.day == day && v.note == "hi\u{0}there" && v.tags == ["a", "b"] && v.visits == 3)
            #expect(try Visit.select(in: ctx, city: "Paris", day: .greaterThan(day)).map(\.id) == [7])
            #expect(try Visit.count(in: ctx, city: "Paris") == 2)
            #expect(Visit.recordType.key.map(\.name) == ["city", "day", "id"])
        }
        try store.close()
    }

    @Test("a nested struct with an explicit keyspace and version")
    func nested() throws {
        let store = try Store(.memory)
        try store.withTransaction { ctx in try ctx.insert(Outer.Country(code: "FR", name: "France", population: nil)) }
        let france = try store.withReadTransaction { ctx in try Outer.Country.select(in: ctx, code: "FR").first }
        #expect(france?.name == "France" && france?.population == nil)
        #expect(Outer.Country.recordType.keyspace == "countries" && Outer.Country.recordType.version == 7)
        #expect(Person.recordType.keyspace == "Person")
        try store.close()
    }

    @Test("properties declared together share their type")
    func sharedDeclarations() throws {
        let store = try Store(.memory)
        try store.withTransaction { ctx in try ctx.insert(Point(x: 1, y: 2, label: "a", note: nil)) }
        let points = try store.withReadTransaction { ctx in try Point.select(in: ctx, x: 1, y: .greaterThan(0)) }
        #expect(points.count == 1 && points[0].y == 2 && points[0].label == "a" && points[0].note == nil)
        try store.close()
    }

    @Test("key properties named limit and order (paging goes last for such a type), a field named ctx")
    func collidingNames() throws {
        let store = try Store(.memory)
        try store.withTransaction { ctx in
            try ctx.insert(Tier(limit: 1, order: "a", ctx: "x"))
            try ctx.insert(Tier(limit: 2, order: "b", ctx: "y"))
        }
        let tiers = try store.withReadTransaction { ctx in try Tier.select(in: ctx, limit: .greaterThan(0), limit: 1, order: .descending) }
        #expect(tiers.map(\.ctx) == ["y"])
        let one = try store.withReadTransaction { ctx in try Tier.select(in: ctx, limit: 1, order: "a") }
        #expect(one.map(\.ctx) == ["x"])
        try store.close()
    }

    @Test("the default version is deterministic and tracks field names and types")
    func versions() {
        // The same declaration in another test file, formatted differently, has the same version
        // (see VersionTwins.swift); a changed field name or type gives another.
        #expect(Person.recordType.version == PersonReformatted.recordType.version)
        #expect(Person.recordType.version == PersonRespelled.recordType.version)
        #expect(Person.recordType.version != PersonRenamedField.recordType.version)
        #expect(Person.recordType.version != PersonRetypedField.recordType.version)
    }
}
