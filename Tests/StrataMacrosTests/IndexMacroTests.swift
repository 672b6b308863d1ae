import Foundation
import Strata
import Testing

@IndexKeyRecord("id", keyspace: "macro-member")
@Index("byEmail", "email", unique: true)
@Index("byCityAge", "city", "age")
@Index("byTag", "tags")
@Index("byAge", "age", covering: true)
struct IndexedMember: Equatable {
    let id: Int
    var email: String
    var city: String
    var age: Int
    var tags: Set<String>
}

@Suite("@Index: indexes declared on the type, queried through typed members")
struct IndexMacroTests {
    static let members = [
        IndexedMember(id: 1, email: "korben@taxi.nyc", city: "New York", age: 45, tags: ["pilot", "taxi"]),
        IndexedMember(id: 2, email: "leeloo@fhloston.space", city: "New York", age: 25, tags: ["supreme"]),
        IndexedMember(id: 3, email: "ruby@rhod.fm", city: "Fhloston", age: 30, tags: []),
        IndexedMember(id: 4, email: "vito@temple.org", city: "Paris", age: 65, tags: ["priest", "taxi"]),
    ]

    @Test("the generated indexes are maintained and queried with the key's shapes", arguments: Engines.allCases)
    func typedIndexQueries(engine: Engines) throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)
        defer { try? store.close() }
        #expect(IndexedMember.indexes.map(\.name) == ["byEmail", "byCityAge", "byTag", "byAge"])
        #expect(IndexedMember.byTag.index.components.map(\.isMultiValued) == [true])
        try store.withTransaction { ctx in for m in Self.members { try ctx.insert(m) } }
        try store.withTransaction { (ctx: TransactionContext) throws in
            #expect(try IndexedMember.byEmail.fetch(in: ctx, email: "ruby@rhod.fm")?.id == 3)
            #expect(try IndexedMember.byCityAge.select(in: ctx, city: "New York").map(\.id) == [2, 1])
            #expect(try IndexedMember.byCityAge.select(in: ctx, city: "New York", age: .lessThan(40)).map(\.id) == [2])
            #expect(try IndexedMember.byCityAge.select(in: ctx, limit: 1, city: .greaterThan("G")).map(\.id) == [2])
            #expect(try IndexedMember.byCityAge.count(in: ctx, city: "Paris", age: 65) == 1)
            let page = try IndexedMember.byCityAge.query(city: "New York").page(in: ctx, limit: 1)
            #expect(page.records.map(\.id) == [2])
            #expect(try IndexedMember.byCityAge.query(city: "New York").page(in: ctx, limit: 1, after: page.next).records.map(\.id) == [1])
            #expect(try IndexedMember.byTag.select(in: ctx, tags: "taxi").map(\.id) == [1, 4])
            // A typed query as a value visits records, views and keys as select returns them: on an index and on the key.
            for query in [IndexedMember.byCityAge.query(city: "New York"), IndexedMember.query(id: .lessThan(3))] {
                let ids = try query.select(in: ctx).map(\.id)
                #expect(ids.count == 2)
                var visited: [Int] = [], viewed: [Int] = []
                try query.forEach(in: ctx) { visited.append($0.id); return true }
                try query.forEachView(in: ctx) { viewed.append(try $0.record().id); return true }
                #expect(visited == ids && viewed == ids)
                #expect(try query.primaryKeys(in: ctx) == ids.map { EncodedIndexKey(bytes: KeyCodec.encode($0)) })
                let first = try query.select(in: ctx, limit: 1, order: .ascending).map(\.id), last = try query.select(in: ctx, limit: 1, order: .descending).map(\.id)
                #expect(first != last)
                #expect(try query.primaryKeys(in: ctx, limit: 1, order: .ascending) == first.map { EncodedIndexKey(bytes: KeyCodec.encode($0)) })
                visited = []
                try query.forEach(in: ctx, order: .descending) { visited.append($0.id); return false }
                #expect(visited == last)
            }
            #expect(try IndexedMember.byAge.select(in: ctx, age: .range(26..<50)) == [Self.members[2], Self.members[0]])
            #expect(throws: RecordError.uniqueViolation(type: "IndexedMember", index: "byEmail", value: "\"ruby@rhod.fm\"")) {
                try ctx.insert(IndexedMember(id: 9, email: "ruby@rhod.fm", city: "X", age: 1, tags: []))
            }
            var korben = Self.members[0]
            korben.tags = ["hero"]
            try korben.insert(in: ctx)
            #expect(try IndexedMember.byTag.select(in: ctx, tags: "taxi").map(\.id) == [4])
            #expect(try ctx.verifyIndexes(IndexedMember.self).allSatisfy { $0.isExact })
        }
    }

    @Test("predicate queries on a macro record read its key and its indexes by key path", arguments: Engines.allCases)
    func predicateQueries(engine: Engines) throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try engine.open(path)
        defer { try? store.close() }
        try store.withTransaction { ctx in for m in Self.members { try ctx.insert(m) } }
        let youngNewYorkers = IndexedMember.query(where: #Predicate { $0.city == "New York" && $0.age < 40 })
        let taxis = IndexedMember.query(where: #Predicate { $0.tags.contains("taxi") }, sortedBy: [.descending(\.id)])
        let above = IndexedMember.query(where: #Predicate { $0.id > 2 && $0.email != "x" })
        let byEmail = IndexedMember.query(where: #Predicate { $0.email == "ruby@rhod.fm" })
        #expect(youngNewYorkers.explain() == #"index scan macro-member.byCityAge (city = "New York", age < 40), a point read per entry"#)
        #expect(taxis.explain() == #"index scan macro-member.byTag (tags = "taxi"), a point read per entry; sorted by id descending in memory"#)
        #expect(above.explain() == #"key scan macro-member (id > 2); filter email != "x""#)
        #expect(byEmail.explain() == #"index scan macro-member.byEmail (email = "ruby@rhod.fm"), a point read per entry"#)
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try youngNewYorkers.select(in: ctx).map(\.id) == [2])
            #expect(try taxis.select(in: ctx).map(\.id) == [4, 1])
            #expect(try above.select(in: ctx).map(\.id) == [3, 4])
            #expect(try byEmail.select(in: ctx).map(\.id) == [3])
            #expect(try IndexedMember.count(in: ctx, where: #Predicate { $0.age >= 30 }) == 3)
        }
    }
}

@IndexKeyRecord("id", keyspace: "macro-order")
@Index("perCustomer", "customer", aggregate: .sum("amount"))
@Index("perTag", "tags", aggregate: .count)
@Index("orders", aggregate: .count)
struct MacroOrder {
    let id: Int
    var customer: Int
    var amount: Int
    var tags: [String]
}

@Suite("@Index(aggregate:): indexes of totals declared by the macro")
struct AggregateMacroTests {
    @Test("counts and sums per group, read by the group's values, by query and all at once")
    func totals() throws {
        let store = try Store(.memory)
        try store.withTransaction { ctx in
            try ctx.insert(MacroOrder(id: 1, customer: 7, amount: 30, tags: ["gift"]))
            try ctx.insert(MacroOrder(id: 2, customer: 7, amount: 12, tags: ["gift", "late"]))
            try ctx.insert(MacroOrder(id: 3, customer: 9, amount: 5, tags: []))
            try ctx.insert(MacroOrder(id: 1, customer: 9, amount: 30, tags: []))   // moves to customer 9
        }
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            #expect(try MacroOrder.perCustomer.total(in: ctx, customer: 7) == AggregateTotal(count: 1, sum: 12))
            #expect(try MacroOrder.perCustomer.total(in: ctx, customer: 9) == AggregateTotal(count: 2, sum: 35))
            #expect(try MacroOrder.perCustomer.total(in: ctx, .all.then(Comparison.greaterThan(7))) == AggregateTotal(count: 2, sum: 35))
            #expect(try MacroOrder.perCustomer.totals(in: ctx).map(\.total.count) == [1, 2])
            #expect(try MacroOrder.perTag.total(in: ctx, tags: "gift").count == 1)
            #expect(try MacroOrder.orders.total(in: ctx) == AggregateTotal(count: 3, sum: 0))
            #expect(MacroOrder.indexes.map(\.storage) == [.totals, .totals, .totals])
            #expect(try ctx.verifyIndexes(MacroOrder.self).count == 3)
        }
    }
}
