import ArgumentParser
import Foundation
import GRDB
import Strata

/// The record every peer stores: a UInt64 key and a 100-byte String (peers.md).
@IndexKeyRecord("id")
struct Item {
    let id: UInt64
    let text: String
}

/// The same record through GRDB's record API.
struct Player: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "player"
    var id: Int64
    var text: String
}

/// The five workloads of peers.md.
enum PeerWorkload: String, CaseIterable {
    case w1 = "W1 insert /s", w2 = "W2 point fetch /s", w3 = "W3 full scan /s", w4 = "W4 range of 100, q/s", w5 = "W5 equality, q/s"
}

/// One implementation: a store to fill, then the read workloads. Each returns operations done.
protocol Peer: AnyObject {
    var name: String { get }
    func insertAll(_ n: Int, text: String) throws
    func pointFetches(_ keys: [UInt64]) throws -> Int
    func fullScan() throws -> Int
    func ranges(_ starts: [UInt64]) throws -> Int
    func equalities(_ keys: [UInt64]) throws -> Int
    func close() throws
}

final class StrataPeer: Peer {
    let name: String
    let store: Store

    init(engine: String, path: String) throws {
        name = "Strata \(engine)"
        let configuration: EngineConfiguration = switch engine {
        case "lmdb": .lmdb(path: path)
        case "leveldb": .leveldb(path: path)
        default: .sqlite(path: path)
        }
        store = try Store(configuration)
    }

    func insertAll(_ n: Int, text: String) throws {
        try store.withTransaction { ctx in
            for i in 0..<UInt64(n) { try ctx.insert(Item(id: i, text: text)) }
        }
    }

    func pointFetches(_ keys: [UInt64]) throws -> Int {
        var found = 0
        for start in stride(from: 0, to: keys.count, by: 1_000) {
            try store.withReadTransaction { ctx in
                for key in keys[start..<min(start + 1_000, keys.count)] where try Item.fetch(in: ctx, id: key) != nil { found += 1 }
            }
        }
        return found
    }

    func fullScan() throws -> Int {
        var rows = 0
        try store.withReadTransaction { ctx in
            try Item.forEach(in: ctx) { item in
                rows += item.text.utf8.count > 0 ? 1 : 0
                return true
            }
        }
        return rows
    }

    func ranges(_ starts: [UInt64]) throws -> Int {
        var rows = 0
        try store.withReadTransaction { ctx in
            for start in starts { rows += try Item.select(in: ctx, id: .range(start..<start + 100)).count }
        }
        return rows
    }

    func equalities(_ keys: [UInt64]) throws -> Int {
        var rows = 0
        try store.withReadTransaction { ctx in
            for key in keys { rows += try Item.select(in: ctx, id: key).count }
        }
        return rows
    }

    func close() throws { try store.close() }
}

final class GRDBPeer: Peer {
    let name = "GRDB 7.10 record API"
    let queue: DatabaseQueue

    init(path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        queue = try DatabaseQueue(path: path + "/db.sqlite")
        try queue.write { db in
            try db.create(table: "player") { t in
                t.primaryKey("id", .integer)
                t.column("text", .text).notNull()
            }
        }
    }

    func insertAll(_ n: Int, text: String) throws {
        try queue.write { db in
            for i in 0..<Int64(n) { try Player(id: i, text: text).insert(db) }
        }
    }

    func pointFetches(_ keys: [UInt64]) throws -> Int {
        var found = 0
        for start in stride(from: 0, to: keys.count, by: 1_000) {
            try queue.read { db in
                for key in keys[start..<min(start + 1_000, keys.count)] where try Player.fetchOne(db, key: Int64(key)) != nil { found += 1 }
            }
        }
        return found
    }

    func fullScan() throws -> Int {
        try queue.read { db in
            var rows = 0
            let cursor = try Player.order(Column("id")).fetchCursor(db)
            while let player = try cursor.next() { rows += player.text.utf8.count > 0 ? 1 : 0 }
            return rows
        }
    }

    func ranges(_ starts: [UInt64]) throws -> Int {
        try queue.read { db in
            var rows = 0
            for start in starts {
                rows += try Player.filter(Column("id") >= Int64(start) && Column("id") < Int64(start + 100)).order(Column("id")).fetchAll(db).count
            }
            return rows
        }
    }

    func equalities(_ keys: [UInt64]) throws -> Int {
        try queue.read { db in
            var rows = 0
            for key in keys { rows += try Player.filter(Column("id") == Int64(key)).fetchAll(db).count }
            return rows
        }
    }

    func close() throws { try queue.close() }
}

@main
struct Peers: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-peers",
        abstract: "Strata's record layer on every engine beside GRDB's record API (the users workload, then W1-W5 of peers.md; build with -c release).")

    @Option(help: "Records (W1 inserts them all in one transaction).") var records = 1_000_000
    @Option(help: "Queries for W4 and W5.") var queries = 20_000
    @Option(help: "Interleaved rounds; figures are medians.") var rounds = 3
    @Option(help: "Users for the users workload (0 skips it).") var users = 1_000_000
    @Option(help: "Interleaved rounds of the users workload; figures are medians.") var userRounds = 5
    @Flag(help: "Only the users workload.") var usersOnly = false
    @Option(help: "The users workload's peers: lmdb, leveldb, sqlite, grdb.") var userPeers = "lmdb,leveldb,sqlite,grdb"

    func run() throws {
        let root = NSTemporaryDirectory() + "strata-peers-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: root) }
        if users > 0 { try runUsers(records: users, rounds: userRounds, root: root, peers: userPeers.split(separator: ",").map(String.init)) }
        if usersOnly { return }
        let text = String(repeating: "0123456789", count: 10)
        var random = SystemRandomNumberGenerator()
        let shuffled = (0..<UInt64(records)).shuffled(using: &random)
        let starts = (0..<queries).map { _ in UInt64.random(in: 0..<UInt64(max(1, records - 100)), using: &random) }
        let equal = (0..<queries).map { _ in UInt64.random(in: 0..<UInt64(records), using: &random) }
        let names = ["Strata lmdb", "Strata leveldb", "Strata sqlite", "GRDB 7.10 record API"]
        var figures: [String: [PeerWorkload: [Double]]] = [:]
        print("Peers: \(records) records (UInt64 key, 100-byte String), \(queries) queries for W4 and W5, \(rounds) interleaved rounds")
        for round in 1...rounds {
            for (index, name) in names.enumerated() {
                let path = "\(root)/\(round)-\(index)"
                let peer: Peer = index == 3 ? try GRDBPeer(path: path) : try StrataPeer(engine: ["lmdb", "leveldb", "sqlite"][index], path: path)
                func time(_ workload: PeerWorkload, operations: Int, _ body: () throws -> Int) throws {
                    let start = DispatchTime.now().uptimeNanoseconds
                    let done = try body()
                    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                    guard done == operations else { throw ValidationError("\(name) \(workload.rawValue): \(done) of \(operations)") }
                    figures[name, default: [:]][workload, default: []].append(Double(workload == .w4 ? queries : operations) / seconds)
                }
                try time(.w1, operations: records) { try peer.insertAll(records, text: text); return records }
                try time(.w2, operations: records) { try peer.pointFetches(shuffled) }
                try time(.w3, operations: records) { try peer.fullScan() }
                try time(.w4, operations: queries * 100) { try peer.ranges(starts) }
                try time(.w5, operations: queries) { try peer.equalities(equal) }
                try peer.close()
                try? FileManager.default.removeItem(atPath: path)
                print("  round \(round): \(name) done")
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        func rate(_ v: Double) -> String { v >= 1e6 ? String(format: "%.2fM", v / 1e6) : v >= 1e3 ? String(format: "%.1fK", v / 1e3) : String(format: "%.0f", v) }
        print("\n| N = \(records) | " + names.joined(separator: " | ") + " | Strata sqlite / GRDB |")
        print("|---|" + String(repeating: "---|", count: names.count + 1))
        for workload in PeerWorkload.allCases {
            let values = names.map { median(figures[$0]![workload]!) }
            print("| \(workload.rawValue) | " + values.map(rate).joined(separator: " | ") + String(format: " | %.2fx |", values[2] / values[3]))
        }
    }
}
