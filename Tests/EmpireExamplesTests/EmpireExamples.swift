import Foundation
import Strata
import Testing

// Empire's examples (mattmassicotte/Empire at b3bc068: README.md and Empire.docc), with
// `import Strata` for `import Empire` and a temporary store path; nothing else changed.

@IndexKeyRecord("name")
struct Person {
    let name: String
    let age: Int
}

// Empire's "Data Modeling" composite key (there also named Person).
@IndexKeyRecord("lastName", "firstName")
struct FullName {
    let lastName: String
    let firstName: String
    let age: Int
}

extension Person: Equatable {}
extension FullName: Equatable {}

/// Each engine's store at a fresh path; LMDB through `Store(path:)`, as in Empire's README.
enum Engine: String, CaseIterable, CustomStringConvertible {
    case lmdb, leveldb, sqlite, memory
    var description: String { rawValue }

    func open(_ path: String) throws -> Store {
        switch self {
        case .lmdb: return try Store(path: path)
        case .leveldb: return try Store(.leveldb(path: path))
        case .sqlite: return try Store(.sqlite(path: path))
        case .memory: return try Store(.memory)
        }
    }
}

func temporaryStorePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("strata-empire-\(UUID().uuidString)").path
}

@Suite("Empire's examples, on every engine")
struct EmpireExamples {
    @Test("README: insert two people, select with limit 1 and lessThan(\"Zorg\"): Leeloo, nearest first", arguments: Engine.allCases)
    func readme(engine: Engine) throws {
        let path = temporaryStorePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)

        try store.withTransaction { context in
            try context.insert(Person(name: "Korben", age: 45))
            try context.insert(Person(name: "Leeloo", age: 2000))
        }
        let records = try store.withTransaction { context in
            try Person.select(in: context, limit: 1, name: .lessThan("Zorg"))
        }
        print("\(engine):", records)
        #expect(records == [Person(name: "Leeloo", age: 2000)])
        try store.close()
    }

    @Test("README, async: the same two transactions awaited", arguments: Engine.allCases)
    func readmeAsync(engine: Engine) async throws {
        let path = temporaryStorePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)

        try await store.withTransaction { context in
            try context.insert(Person(name: "Korben", age: 45))
            try context.insert(Person(name: "Leeloo", age: 2000))
        }
        let records = try await store.withTransaction { context in
            try Person.select(in: context, limit: 1, name: .lessThan("Zorg"))
        }
        print("\(engine) (async):", records)
        #expect(records == [Person(name: "Leeloo", age: 2000)])
        try store.close()
    }

    @Test("Data Manipulation: insert and delete through the context, the record and the store", arguments: Engine.allCases)
    func dataManipulation(engine: Engine) throws {
        let path = temporaryStorePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)
        func count() throws -> Int { try store.withTransaction { context in try Person.count(in: context, name: "Korben") } }

        try store.withTransaction { context in
            try Person(name: "Korben", age: 45).insert(in: context)
        }
        #expect(try count() == 1)
        try store.withTransaction { context in
            try context.delete(Person(name: "Korben", age: 45))
        }
        #expect(try count() == 0)
        try Person(name: "Korben", age: 45).insert(in: store)
        #expect(try count() == 1)
        try store.withTransaction { context in
            try Person(name: "Korben", age: 45).delete(in: context)
        }
        #expect(try count() == 0)
        try Person(name: "Korben", age: 45).insert(in: store)
        try store.delete(Person(name: "Korben", age: 45))
        #expect(try count() == 0)
        print("\(engine): inserted and deleted Korben five ways")
        try store.close()
    }

    @Test("Data Modeling: a range on the first component, a range on the second after an equal first", arguments: Engine.allCases)
    func dataModeling(engine: Engine) throws {
        let path = temporaryStorePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)
        try store.withTransaction { context in
            for (last, first, age) in [("Cornelius", "Vito", 58), ("Dallas", "Korben", 45), ("Dallas", "Mother", 67),
                                       ("Rhod", "Ruby", 32), ("Zorg", "Jean-Baptiste Emanuel", 2000)] {
                try context.insert(FullName(lastName: last, firstName: first, age: age))
            }
        }
        let (after, dallas) = try store.withTransaction { context in
            // scan query on the first component
            (try FullName.select(in: context, lastName: .greaterThan("Dallas")),
             // constrain first component, scan query on the second
             try FullName.select(in: context, lastName: "Dallas", firstName: .lessThanOrEqual("Korben")))
        }
        print("\(engine):", after.map { "\($0.lastName), \($0.firstName)" }, dallas.map { "\($0.lastName), \($0.firstName)" })
        #expect(after.map(\.lastName) == ["Rhod", "Zorg"])
        #expect(dallas == [FullName(lastName: "Dallas", firstName: "Korben", age: 45)])
        try store.close()
    }
}
