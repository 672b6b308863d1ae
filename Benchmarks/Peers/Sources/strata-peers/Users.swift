import ArgumentParser
import Foundation
import GRDB
import Strata

/// The users workload of the query issue: a million users with an index on (firstName, age), and
/// an index of totals counting them per first name (kept by every write, read per group).
@IndexKeyRecord("id")
@Index("byFirstNameAge", "firstName", "age")
@Index("perFirstName", "firstName", aggregate: .count)
struct User {
    let id: Int
    var firstName: String
    var surname: String
    var age: Int
}

/// The same user through GRDB's record API, with the same index in SQL.
struct GRDBUser: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "user"
    var id: Int64
    var firstName: String
    var surname: String
    var age: Int
}

/// The workload's phases, in order. Each returns what it did, checked against the same figure
/// for every peer.
enum UsersPhase: String, CaseIterable {
    case create = "create 1 tx", fetch = "fetch Janes by age", rename = "rename Janes to Wendy", count = "count per first name", delete = "delete all"
}

protocol UsersPeer: AnyObject {
    var name: String { get }
    func create(_ users: [(firstName: String, surname: String, age: Int)]) throws -> Int
    /// The Janes, youngest first: how many.
    func fetchJanes() throws -> Int
    func renameJanes() throws -> Int
    /// Users per first name: how many names.
    func countPerFirstName() throws -> Int
    func deleteAll() throws -> Int
    func close() throws
}

final class StrataUsers: UsersPeer {
    let name: String
    let store: Store
    static let janes = User.query(where: #Predicate { $0.firstName == "Jane" }, sortedBy: [.ascending(\.age)])

    init(engine: String, path: String) throws {
        name = "Strata \(engine)"
        store = try Store(engine == "lmdb" ? .lmdb(path: path) : engine == "leveldb" ? .leveldb(path: path) : .sqlite(path: path))
    }

    func create(_ users: [(firstName: String, surname: String, age: Int)]) throws -> Int {
        try store.withTransaction { ctx in
            for (id, user) in users.enumerated() { try ctx.insert(User(id: id, firstName: user.firstName, surname: user.surname, age: user.age)) }
        }
        return users.count
    }

    func fetchJanes() throws -> Int {
        try store.withReadTransaction { ctx in try Self.janes.select(in: ctx).count }
    }

    func renameJanes() throws -> Int {
        try store.withTransaction { ctx in
            let janes = try Self.janes.select(in: ctx)
            for var jane in janes {
                jane.firstName = "Wendy"
                try ctx.insert(jane)
            }
            return janes.count
        }
    }

    /// The index of totals: one entry per first name, read in order (no record is read).
    func countPerFirstName() throws -> Int {
        try store.withReadTransaction { ctx in try User.perFirstName.totals(in: ctx).count }
    }

    func deleteAll() throws -> Int {
        try store.withTransaction { ctx in try User.delete(in: ctx, .all) }
    }

    func close() throws { try store.close() }
}

final class GRDBUsers: UsersPeer {
    let name = "GRDB 7.10 record API"
    let queue: DatabaseQueue

    init(path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        queue = try DatabaseQueue(path: path + "/db.sqlite")
        try queue.write { db in
            try db.create(table: "user") { t in
                t.primaryKey("id", .integer)
                t.column("firstName", .text).notNull()
                t.column("surname", .text).notNull()
                t.column("age", .integer).notNull()
            }
            try db.create(index: "user_firstName_age", on: "user", columns: ["firstName", "age"])
        }
    }

    func create(_ users: [(firstName: String, surname: String, age: Int)]) throws -> Int {
        try queue.write { db in
            for (id, user) in users.enumerated() {
                try GRDBUser(id: Int64(id), firstName: user.firstName, surname: user.surname, age: user.age).insert(db)
            }
        }
        return users.count
    }

    func fetchJanes() throws -> Int {
        try queue.read { db in try GRDBUser.filter(Column("firstName") == "Jane").order(Column("age")).fetchAll(db).count }
    }

    func renameJanes() throws -> Int {
        try queue.write { db in try GRDBUser.filter(Column("firstName") == "Jane").updateAll(db, Column("firstName").set(to: "Wendy")) }
    }

    func countPerFirstName() throws -> Int {
        try queue.read { db in
            try Row.fetchAll(db, GRDBUser.select(Column("firstName"), count(Column("id"))).group(Column("firstName"))).count
        }
    }

    func deleteAll() throws -> Int {
        try queue.write { db in try GRDBUser.deleteAll(db) }
    }

    func close() throws { try queue.close() }
}

/// Runs the users workload on every peer, `rounds` interleaved rounds, and prints the medians.
func runUsers(records: Int, rounds: Int, root: String, peers: [String]) throws {
    var random = SystemRandomNumberGenerator()
    // 1,000 first names (Jane among them, so about records / 1,000 Janes), 1,000 surnames, ages 0-99.
    let firstNames = ["Jane"] + (1..<1_000).map { "First\($0)" }
    let surnames = (0..<1_000).map { "Surname\($0)" }
    let users = (0..<records).map { _ in
        (firstName: firstNames.randomElement(using: &random)!, surname: surnames.randomElement(using: &random)!, age: Int.random(in: 0..<100, using: &random))
    }
    let janes = users.filter { $0.firstName == "Jane" }.count
    let expected: [UsersPhase: Int] = [.create: records, .fetch: janes, .rename: janes, .count: Set(users.map(\.firstName)).count, .delete: records]
    let names = ["Strata lmdb", "Strata leveldb", "Strata sqlite", "GRDB 7.10 record API"].filter { name in peers.contains { name.lowercased().contains($0) } }
    var seconds: [String: [UsersPhase: [Double]]] = [:]
    print("\nUsers: \(records) users {id, firstName, surname, age}, an index on (firstName, age), \(janes) Janes, \(rounds) interleaved rounds")
    for round in 1...rounds {
        for (index, name) in names.enumerated() {
            let path = "\(root)/users-\(round)-\(index)"
            let peer: UsersPeer = name.hasPrefix("GRDB") ? try GRDBUsers(path: path) : try StrataUsers(engine: String(name.dropFirst("Strata ".count)), path: path)
            for phase in UsersPhase.allCases {
                let start = DispatchTime.now().uptimeNanoseconds
                let done: Int = switch phase {
                case .create: try peer.create(users)
                case .fetch: try peer.fetchJanes()
                case .rename: try peer.renameJanes()
                case .count: try peer.countPerFirstName()
                case .delete: try peer.deleteAll()
                }
                seconds[name, default: [:]][phase, default: []].append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                // After the rename the Janes are Wendys: the count of names is unchanged (Wendy is new, Jane gone).
                guard done == expected[phase]! else { throw ValidationError("\(name) \(phase.rawValue): \(done), expected \(expected[phase]!)") }
            }
            try peer.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        print("  round \(round) done")
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    func time(_ s: Double) -> String { s >= 1 ? String(format: "%.2f s", s) : String(format: "%.2f ms", s * 1e3) }
    let ratios = names.filter { $0.hasPrefix("Strata") && names.last!.hasPrefix("GRDB") }
    print("\n| N = \(records), median time | " + names.joined(separator: " | ") + ratios.map { " | GRDB / \($0)" }.joined() + " |")
    print("|---|" + String(repeating: "---|", count: names.count + ratios.count))
    for phase in UsersPhase.allCases {
        let values = names.map { median(seconds[$0]![phase]!) }
        print("| \(phase.rawValue) | " + values.map(time).joined(separator: " | ")
            + ratios.map { String(format: " | %.2fx", values.last! / values[names.firstIndex(of: $0)!]) }.joined() + " |")
    }
}
