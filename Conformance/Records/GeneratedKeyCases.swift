import Foundation
import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataRecords

/// A record keyed by an auto-increment `Int`.
struct Ticket: CodableRecord, Equatable, Sendable {
    var id: Int
    var seat: String
}

/// A record whose key is not one `Int`: it has no auto-increment key.
struct NamedTicket: CodableRecord, Sendable {
    var id: String
}

/// Auto-increment keys (``TransactionContext/nextID(_:)``): monotonic, never reused after a
/// delete, rolled back with their transaction, moved on by explicit keys above them.
enum GeneratedKeyCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("generated-keys", "auto-increment keys start at 1, grow past deletes and explicit keys, and roll back with their transaction") { ctx in
            let store = try ctx.recordStore()
            let first = try store.withTransaction { tx in try (1...3).map { _ in try tx.insertNew { Ticket(id: $0, seat: "s\($0)") } } }
            try expectEqual(first.map(\.id), [1, 2, 3], "the first keys")
            // The last record deleted: its key is not issued again.
            try store.withTransaction { tx in try expectTrue(try Ticket.delete(in: tx, id: 3), "delete 3") }
            try expectEqual(try store.withTransaction { tx in try tx.nextID(Ticket.self) }, 4, "after deleting 3")
            // A rolled-back transaction's keys were never committed: issued again.
            struct Rollback: Error {}
            do {
                try store.withTransaction { tx in
                    try expectEqual(try tx.insertNew { Ticket(id: $0, seat: "rolled back") }.id, 5, "inside the rolled-back transaction")
                    throw Rollback()
                }
            } catch is Rollback {}
            try expectEqual(try store.withTransaction { tx in try tx.insertNew { Ticket(id: $0, seat: "x") }.id }, 5, "after the rollback")
            // An explicit key above the sequence moves it on; one below does not.
            try store.withTransaction { tx in
                try tx.insert(Ticket(id: 100, seat: "explicit"))
                try tx.insert(Ticket(id: -7, seat: "negative"))
            }
            try expectEqual(try store.withTransaction { tx in try tx.nextID(Ticket.self) }, 101, "after an explicit 100")
            try store.withTransaction { tx in try Ticket.delete(in: tx, id: 100) }
            try expectEqual(try store.withTransaction { tx in try tx.nextID(Ticket.self) }, 102, "after deleting the explicit 100 and issuing 101")
            try expectSameList(try store.withReadTransaction { tx in try Ticket.select(in: tx).map(\.id) }, [-7, 1, 2, 5], "the records")
        },

        ConformanceCase("generated-keys", "a key that is not one Int, a built record with another key, a damaged sequence and Int.max are typed errors") { ctx in
            let engine = try ctx.open()
            let store = try CaseStores.store(on: engine)
            try expectRecordError(.keyGeneration(type: "NamedTicket", detail: "an auto-increment key must be one Int; the key is (id: String)"), "a String key") {
                try store.withTransaction { tx in try tx.nextID(NamedTicket.self) }
            }
            try expectRecordError(.keyGeneration(type: "Ticket", detail: "the record built for key 1 has another key"), "a record with another key") {
                try store.withTransaction { tx in try tx.insertNew { _ in Ticket(id: 7, seat: "wrong") } }
            }
            try expectEqual(try store.withReadTransaction { tx in try Ticket.count(in: tx) }, 0, "nothing written by the refused insert")
            // The sequence's system key, written around the record layer.
            let sequenceKey = [0x00] + KeyCodec.encode("sequence", "Ticket")
            try engine.write { tx in try tx.put([0xFF, 0x01], forKey: sequenceKey) }
            try expectRecordError(.keyGeneration(type: "Ticket", detail: "the stored sequence is not an Int (2 bytes): the store is damaged"), "a damaged sequence") {
                try store.withTransaction { tx in try tx.nextID(Ticket.self) }
            }
            try engine.write { tx in try tx.put(KeyCodec.encode(Int.max), forKey: sequenceKey) }
            try expectRecordError(.keyGeneration(type: "Ticket", detail: "the sequence reached Int.max"), "an exhausted sequence") {
                try store.withTransaction { tx in try tx.nextID(Ticket.self) }
            }
        },

        ConformanceCase("generated-keys", "random logs of generated inserts, explicit inserts, deletes and rollbacks: every generated key is one more than the largest key issued before or stored now") { ctx in
            let store = try ctx.recordStore()
            // The model: the records, and the largest key ever committed (issued or inserted).
            var model: (records: [Int: Ticket], high: Int) = ([:], 0)
            try randomLog(store, seed: 0x5E9, steps: 60, model: &model) { tx, working, random, step in
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<6:
                    let ticket = try tx.insertNew { Ticket(id: $0, seat: "step \(step)") }
                    try expectEqual(ticket.id, Swift.max(working.high, working.records.keys.max() ?? 0) + 1, "step \(step): the next key")
                    working.records[ticket.id] = ticket
                    working.high = ticket.id
                case 6..<8:
                    guard let id = working.records.keys.randomElement(using: &random) else { return }
                    try expectTrue(try Ticket.delete(in: tx, id: id), "step \(step): delete \(id)")
                    working.records[id] = nil
                default:
                    let id = Int.random(in: -5...(working.high + 8), using: &random)
                    let ticket = Ticket(id: id, seat: "explicit \(step)")
                    try tx.insert(ticket)
                    working.records[id] = ticket
                }
            } check: { model, step in
                let stored = try store.withReadTransaction { tx in try Ticket.select(in: tx) }
                try expectSameList(stored, model.records.values.sorted { $0.id < $1.id }, "step \(step): the records")
            }
        },
    ]
}
