import Foundation
import Strata
import Testing

@IndexKeyRecord("a", keyspace: "k1")
struct K1: Equatable { let a: Int; var note: String }

@IndexKeyRecord("a", "b", keyspace: "k2")
struct K2: Equatable { let a: String; let b: Int; var note: String }

@IndexKeyRecord("a", "b", "c", keyspace: "k3")
struct K3: Equatable { let a: String; let b: Int; let c: UUID; var note: String }

@IndexKeyRecord("a", "b", "c", "d", keyspace: "k4")
struct K4: Equatable { let a: String; let b: Int; let c: Bool; let d: Date; var note: String }

@Suite("Typed keys: IndexKey, fetch, exists and delete(in:key:) on keys of 1 to 4 components")
struct TypedKeyTests {
    static let uuid = UUID(uuidString: "00000000-0000-4000-8000-000000000001")!
    static let date = Date(timeIntervalSinceReferenceDate: 1_000)

    /// The checks shared by every arity, through the record's `IndexKey`.
    func checkKeys<R: Record & Equatable>(_ store: Store, _ records: [R], missing: R.IndexKey) throws where R.IndexKey: Hashable {
        try store.withTransaction { ctx in for r in records { try r.insert(in: ctx) } }
        try store.withTransaction { (ctx: TransactionContext) throws in
            #expect(Set(records.map(\.indexKey)).count == records.count, "distinct records, distinct keys")
            for r in records {
                #expect(try R.fetch(in: ctx, key: r.indexKey) == r)
                #expect(try R.exists(in: ctx, key: r.indexKey))
            }
            #expect(try R.fetch(in: ctx, key: missing) == nil)
            #expect(try !R.exists(in: ctx, key: missing))
            #expect(try R.delete(in: ctx, key: records[0].indexKey))
            #expect(try !R.delete(in: ctx, key: records[0].indexKey), "already gone")
            #expect(try !R.delete(in: ctx, key: missing))
            #expect(try R.fetch(in: ctx, key: records[0].indexKey) == nil && !R.exists(in: ctx, key: records[0].indexKey))
            #expect(try ctx.count(R.self) == records.count - 1)
        }
    }

    @Test("one component", arguments: Engines.allCases)
    func one(engine: Engines) throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)
        let records = [K1(a: 1, note: "x"), K1(a: -5, note: "y"), K1(a: 7, note: "z")]
        try store.withTransaction { ctx in for r in records { try ctx.insert(r) } }
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try K1.fetch(in: ctx, a: -5) == records[1] && K1.fetch(in: ctx, a: 2) == nil)
            #expect(try K1.exists(in: ctx, a: 7) && !K1.exists(in: ctx, a: 8))
        }
        try checkKeys(store, records, missing: K1.IndexKey(a: 99))
        try store.close()
    }

    @Test("two components", arguments: Engines.allCases)
    func two(engine: Engines) throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)
        let records = [K2(a: "x", b: 1, note: "1"), K2(a: "x", b: 2, note: "2"), K2(a: "y", b: 1, note: "3")]
        try store.withTransaction { ctx in for r in records { try ctx.insert(r) } }
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try K2.fetch(in: ctx, a: "x", b: 2) == records[1] && K2.fetch(in: ctx, a: "y", b: 2) == nil)
            #expect(try K2.exists(in: ctx, a: "y", b: 1) && !K2.exists(in: ctx, a: "x", b: 3))
        }
        // The generated query(…): a Query value to page through.
        let page = try store.withReadTransaction { ctx in try K2.query(a: "x", b: .greaterThan(0)).page(in: ctx, limit: 1) }
        #expect(page.records == [records[0]] && page.next != nil)
        let rest = try store.withReadTransaction { ctx in try K2.query(a: "x", b: .greaterThan(0)).page(in: ctx, limit: 5, after: page.next) }
        #expect(rest.records == [records[1]] && rest.next == nil)
        try checkKeys(store, records, missing: K2.IndexKey(a: "x", b: 3))
        try store.close()
    }

    @Test("three components", arguments: Engines.allCases)
    func three(engine: Engines) throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)
        let other = UUID(uuidString: "00000000-0000-4000-8000-000000000002")!
        let records = [K3(a: "x", b: 1, c: Self.uuid, note: "1"), K3(a: "x", b: 1, c: other, note: "2"), K3(a: "x", b: 2, c: Self.uuid, note: "3")]
        try store.withTransaction { ctx in for r in records { try ctx.insert(r) } }
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try K3.fetch(in: ctx, a: "x", b: 1, c: other) == records[1] && K3.fetch(in: ctx, a: "x", b: 2, c: other) == nil)
            #expect(try K3.exists(in: ctx, a: "x", b: 2, c: Self.uuid) && !K3.exists(in: ctx, a: "y", b: 1, c: Self.uuid))
        }
        try checkKeys(store, records, missing: K3.IndexKey(a: "x", b: 2, c: other))
        try store.close()
    }

    @Test("four components", arguments: Engines.allCases)
    func four(engine: Engines) throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)
        let later = Self.date.addingTimeInterval(1)
        let records = [K4(a: "x", b: 1, c: true, d: Self.date, note: "1"), K4(a: "x", b: 1, c: true, d: later, note: "2"),
                       K4(a: "x", b: 1, c: false, d: Self.date, note: "3")]
        try store.withTransaction { ctx in for r in records { try ctx.insert(r) } }
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try K4.fetch(in: ctx, a: "x", b: 1, c: true, d: later) == records[1])
            #expect(try K4.fetch(in: ctx, a: "x", b: 1, c: false, d: later) == nil)
            #expect(try K4.exists(in: ctx, a: "x", b: 1, c: false, d: Self.date) && !K4.exists(in: ctx, a: "x", b: 2, c: false, d: Self.date))
            #expect(try K4.count(in: ctx, a: "x", b: 1, c: true, d: .greaterThan(Self.date)) == 1)
            #expect(try K4.select(in: ctx, a: "x", b: 1, c: true, d: .lessThanOrEqual(later)).map(\.note) == ["2", "1"], "nearest first")
        }
        try checkKeys(store, records, missing: K4.IndexKey(a: "x", b: 1, c: false, d: later))
        try store.close()
    }
}

@IndexKeyRecord("id", keyspace: "macroTickets")
@Index("bySeat", "seat", unique: true)
struct MacroTicket: Equatable { let id: Int; var seat: String }

@Suite("The macro's records: generated keys, and writes that return the old record")
struct MacroGeneratedKeyTests {
    @Test("insertNew issues 1, 2, … to a macro record; replace and remove return what they replaced, with and without indexes")
    func generatedAndReplaced() throws {
        let store = try Store(.memory)
        let tickets = try store.withTransaction { ctx in try (0..<3).map { n in try ctx.insertNew { MacroTicket(id: $0, seat: "s\(n)") } } }
        #expect(tickets.map(\.id) == [1, 2, 3])
        try store.withTransaction { (ctx: TransactionContext) throws in
            #expect(try MacroTicket(id: 2, seat: "s9").replace(in: ctx) == tickets[1])
            #expect(try MacroTicket.remove(in: ctx, key: .init(id: 3)) == tickets[2])
            #expect(try MacroTicket.remove(in: ctx, key: .init(id: 3)) == nil)
            #expect(try MacroTicket.bySeat.fetch(in: ctx, seat: "s9")?.id == 2)
            #expect(try K1(a: 5, note: "new").replace(in: ctx) == nil)
            #expect(try K1(a: 5, note: "newer").replace(in: ctx) == K1(a: 5, note: "new"))
            #expect(try K1.remove(in: ctx, key: .init(a: 5)) == K1(a: 5, note: "newer"))
        }
        #expect(try store.withTransaction { ctx in try ctx.nextID(MacroTicket.self) } == 4, "3 was deleted, not issued again")
    }
}
