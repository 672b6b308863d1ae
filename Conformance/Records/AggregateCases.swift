import Foundation
import StrataConformance
@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec
import StrataRecords

/// A ticket sold at a venue, with a price: a sum of prices per venue, a count per tag, a count of
/// every ticket.
struct TallyTicket: Record, Equatable {
    var id: Int
    var venue: String
    var tags: [String]
    var price: Int

    static let recordType = RecordType(keyspace: "TallyTicket", key: [("id", Int.self)],
                                       fields: [("venue", String.fieldFormat), ("tags", [String].fieldFormat), ("price", Int.fieldFormat)])
    static let perVenue = RecordIndex<TallyTicket>("perVenue", AggregateIndex.sum("price", \.price, by: .field("venue", \.venue)))
    static let perTag = RecordIndex<TallyTicket>("perTag", AggregateIndex.count(by: .each("tags", \.tags)))
    static let tickets = RecordIndex<TallyTicket>("tickets", AggregateIndex.count())
    static let indexes = [perVenue, perTag, tickets]

    init(id: Int, venue: String, tags: [String] = [], price: Int) { (self.id, self.venue, self.tags, self.price) = (id, venue, tags, price) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) {
        fields.write(venue)
        fields.write(tags)
        fields.write(price)
    }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        venue = try fields.read()
        tags = try fields.read()
        price = try fields.read()
    }

    static func random(id: Int, _ random: inout SeededRandom) -> TallyTicket {
        let tags = (0..<Int.random(in: 0...3, using: &random)).map { _ in ["vip", "late", "student"].randomElement(using: &random)! }
        return TallyTicket(id: id, venue: ["Arena", "Club", "Hall", "Zénith"].randomElement(using: &random)!, tags: tags,
                           price: Int.random(in: -50...500, using: &random))
    }
}

/// `TallyTicket` before its indexes were declared.
struct UntalliedTicket: Record {
    var ticket: TallyTicket
    static var recordType: RecordType { TallyTicket.recordType }
    init(_ ticket: TallyTicket) { self.ticket = ticket }
    func writeKey(to key: inout KeyWriter) { ticket.writeKey(to: &key) }
    func writeFields(to fields: inout FieldWriter) { ticket.writeFields(to: &fields) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { ticket = try TallyTicket(key: &key, fields: &fields) }
}

/// Indexes of totals (``AggregateIndex``) on the engine: counts and sums per group kept by every
/// kind of write and rollback, read by group and by range, built online with writes between the
/// build's batches, refused where a record query is meant. Checked against values written out by
/// hand, against a model, and against a recomputation (``TransactionContext/verifyIndexes(_:)``).
enum AggregateCases {
    typealias T = TallyTicket

    static let all: [ConformanceCase] = [
        ConformanceCase("totals", "counts and sums per group follow inserts, replacements, deletes and deletes by range; a rolled-back transaction changes none") { ctx in
            let store = try ctx.recordStore()
            try store.withTransaction { tx in
                try tx.insert(T(id: 1, venue: "Arena", tags: ["vip"], price: 100))
                try tx.insert(T(id: 2, venue: "Arena", tags: ["vip", "late", "vip"], price: 40))
                try tx.insert(T(id: 3, venue: "Club", price: 25))
                try tx.insert(T(id: 4, venue: "Hall", tags: ["late"], price: -5))
            }
            try expectTotals(store, arena: AggregateTotal(count: 2, sum: 140), vip: 2, late: 2, tickets: 4, "after four inserts")
            try store.withTransaction { tx in
                try tx.insert(T(id: 2, venue: "Club", tags: ["student"], price: 60))   // moves from Arena to Club
                try tx.delete(T(id: 4, venue: "", price: 0))
            }
            try expectTotals(store, arena: AggregateTotal(count: 1, sum: 100), vip: 1, late: 0, tickets: 3, "after a replacement and a delete")
            struct Rollback: Error {}
            do {
                try store.withTransaction { tx in
                    try tx.insert(T(id: 9, venue: "Arena", tags: ["late"], price: 1_000))
                    throw Rollback()
                }
            } catch is Rollback {}
            try expectTotals(store, arena: AggregateTotal(count: 1, sum: 100), vip: 1, late: 0, tickets: 3, "after a rolled-back insert")
            try store.withReadTransaction { tx in
                try expectEqual(try T.perVenue.total(in: tx, .all.equal("Club")), AggregateTotal(count: 2, sum: 85), "Club")
                try expectEqual(try T.perVenue.total(in: tx, .all.then(Comparison.lessThan("Hall"))), AggregateTotal(count: 3, sum: 185), "venues before Hall")
                try expectEqual(try T.perVenue.totals(in: tx).map(\.group), [KeyCodec.encode("Arena"), KeyCodec.encode("Club")].map(EncodedIndexKey.init(bytes:)),
                                "groups in key order; Hall, emptied, is gone")
                try expectEqual(try T.perVenue.totals(in: tx, limit: 1, order: .descending).map(\.total), [AggregateTotal(count: 2, sum: 85)], "last group")
            }
            let removed = try store.withTransaction { tx in try tx.delete(T.self, .all.then(Comparison.greaterThanOrEqual(2))) }
            try expectEqual(removed, 2, "deleted by range")
            try expectTotals(store, arena: AggregateTotal(count: 1, sum: 100), vip: 1, late: 0, tickets: 1, "after a delete by range")
            try expectTotalsExact(store, "at the end")
        },
        ConformanceCase("totals", "a random log of writes, deletes and rollbacks keeps every total equal to a model") { ctx in
            let store = try ctx.recordStore()
            var model: [Int: T] = [:]
            try randomLog(store, seed: 0x7A11, steps: 120, model: &model, operation: { tx, working, random, _ in
                let id = Int.random(in: 0..<30, using: &random)
                if Int.random(in: 0..<4, using: &random) == 0 {
                    try tx.delete(T(id: id, venue: "", price: 0))
                    working[id] = nil
                } else {
                    let ticket = T.random(id: id, &random)
                    try tx.insert(ticket)
                    working[id] = ticket
                }
            }, check: { model, step in
                try store.withReadTransaction { tx in
                    try expectEqual(try T.perVenue.totals(in: tx).map(\.total), modelTotals(model).map(\.value), "per venue at step \(step)")
                    try expectEqual(try T.tickets.total(in: tx).count, Int64(model.count), "tickets at step \(step)")
                }
            })
            try expectTotalsExact(store, "after the log")
        },
        ConformanceCase("totals", "built online over stored records, with writes behind and ahead of the build between its batches: exact at the end") { ctx in
            let engine = try ctx.open()
            var random = SeededRandom(seed: 0xB0)
            var tickets: [Int: T] = [:]
            for id in stride(from: 0, to: 150, by: 2) { tickets[id] = T.random(id: id, &random) }
            try CaseStores.store(on: engine).withTransaction { tx in for ticket in tickets.values { try tx.insert(UntalliedTicket(ticket)) } }
            let store = try CaseStores.store(on: engine)
            try expectRecordError(.indexNotReady(type: "TallyTicket", index: "perVenue", state: .writeOnly), "a total before the build") {
                try store.withReadTransaction { tx in try T.perVenue.total(in: tx) }
            }
            final class Writes: Sendable {
                let state: Locked<(model: [Int: T], random: SeededRandom, failure: String?)>
                init(_ model: [Int: T], _ random: SeededRandom) { state = Locked((model, random, nil)) }
            }
            let writes = Writes(tickets, random)
            let report = try store.prepare(T.self, batchSize: 10) { _ in
                writes.state.withLock { state in
                    for _ in 0..<3 {
                        let id = Int.random(in: 0..<160, using: &state.random)
                        do {
                            if Bool.random(using: &state.random) {
                                let ticket = T.random(id: id, &state.random)
                                try store.insert(ticket)
                                state.model[id] = ticket
                            } else {
                                try store.delete(T(id: id, venue: "", price: 0))
                                state.model[id] = nil
                            }
                        } catch {
                            state.failure = "\(error)"
                        }
                    }
                }
            }.wait()
            let (model, failure) = writes.state.withLock { ($0.model, $0.failure) }
            try expectEqual(failure, nil, "writes between batches")
            try expectEqual(Set(report.built), Set(T.indexes.map(\.name)), "indexes built")
            try expectTrue(report.batches >= 8, "batches of 10: \(report.batches)")
            try store.withReadTransaction { tx in
                try expectEqual(try T.perVenue.totals(in: tx).map(\.total), modelTotals(model).map(\.value), "per venue after the build")
                try expectEqual(try T.tickets.total(in: tx).count, Int64(model.count), "tickets after the build")
            }
            try expectTotalsExact(store, "after the build")
        },
        ConformanceCase("totals", "record queries refuse an index of totals; a sum that would leave Int64 refuses its write, which has no effect") { ctx in
            let store = try ctx.recordStore()
            try store.insert(T(id: 1, venue: "Arena", price: .max))
            try store.withReadTransaction { tx in
                try expectRecordError(.invalidIndex(type: "TallyTicket", index: "perVenue",
                                                    detail: "it keeps totals (sum:price), not records: read it with total(in:) or totals(in:)"),
                                      "select on an index of totals") { try T.perVenue.select(in: tx) }
            }
            try expectRecordError(.invalidIndex(type: "TallyTicket", index: "perVenue", detail: "a group's total would leave Int64: the write is refused"),
                                  "an overflowing sum") { try store.insert(T(id: 2, venue: "Arena", price: 1)) }
            try store.withReadTransaction { tx in
                try expectEqual(try tx.fetch(T.self, .all.equal(2)), nil, "the refused record")
                try expectEqual(try T.tickets.total(in: tx).count, 1, "tickets after the refused write")
            }
            try expectTotalsExact(store, "after the refused write")
        },
    ]

    /// Totals per venue a model calls for, in the venues' key order.
    static func modelTotals(_ model: [Int: T]) -> [(key: String, value: AggregateTotal)] {
        var totals: [String: AggregateTotal] = [:]
        for ticket in model.values {
            let total = totals[ticket.venue, default: .zero]
            totals[ticket.venue] = AggregateTotal(count: total.count + 1, sum: total.sum + Int64(ticket.price))
        }
        return totals.sorted { KeyCodec.encode($0.key).lexicographicallyPrecedes(KeyCodec.encode($1.key)) }
    }

    static func expectTotals(_ store: Store, arena: AggregateTotal, vip: Int64, late: Int64, tickets: Int64, _ when: String) throws {
        try store.withReadTransaction { tx in
            try expectEqual(try T.perVenue.total(in: tx, .all.equal("Arena")), arena, "Arena \(when)")
            try expectEqual(try T.perTag.total(in: tx, .all.equal("vip")).count, vip, "vip \(when)")
            try expectEqual(try T.perTag.total(in: tx, .all.equal("late")).count, late, "late \(when)")
            try expectEqual(try T.tickets.total(in: tx), AggregateTotal(count: tickets, sum: 0), "tickets \(when)")
        }
    }

    /// Every total equals a recomputation from the records.
    static func expectTotalsExact(_ store: Store, _ when: String) throws {
        let results = try store.withReadTransaction { tx in try tx.verifyIndexes(T.self) }
        try expectEqual(results.count, T.indexes.count, "indexes verified \(when)")
        for result in results {
            try expectTrue(result.isExact, "index \(result.index) \(when): \(result.missingCount) totals missing, \(result.staleCount) wrong")
        }
    }
}
