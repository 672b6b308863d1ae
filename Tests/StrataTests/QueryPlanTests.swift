import StrataEngine
import StrataKeyCodec
@testable import StrataRecords
import Testing

@Suite("Query plans")
struct QueryPlanTests {
    @Test("each plan kind says in one line what it reads")
    func descriptions() {
        #expect(Query<Person>().explain() == "key scan Person (every record)")
        #expect(Query<Person>(.all.equal("Dallas").then(Comparison.lessThan("L"))).explain()
                == #"key scan Person (lastName = "Dallas", firstName < "L")"#)
        #expect(Query<Person>(.all.equal("Dallas").equal("Korben")).explain() == #"key scan Person (lastName = "Dallas", firstName = "Korben")"#)
        #expect(Query<Person>(.all.then(Comparison.oneOf(["Zorg", "Rhod"]))).explain() == #"key scan Person (lastName in ["Rhod", "Zorg"])"#)
        #expect(Query<Person>(.all.then(Comparison<String>.oneOf([]))).explain() == "key scan Person (lastName in [])")
        #expect(Query<Person>(.all.then(Comparison.range("A"..<"M"))).explain() == #"key scan Person (lastName >= "A" and lastName < "M")"#)
        #expect(Member.byCityAge.query(.all.equal("Paris").then(Comparison.greaterThan(30))).explain()
                == #"index scan Member.byCityAge (city = "Paris", age > 30), a point read per entry"#)
        #expect(Member.byCityAge.query(.all.equal("Paris").then(Comparison.closedRange(50...65))).explain()
                == #"index scan Member.byCityAge (city = "Paris", age >= 50 and age <= 65), a point read per entry"#)
        #expect(Member.byAgeCovering.query(.all.then(Comparison.greaterThanOrEqual(45))).explain()
                == "covering index scan Member.byAgeCovering (age >= 45), records from the entries")
        #expect(Member.byTag.query().explain() == "index scan Member.byTag (every record), a point read per entry")
        #expect(Member.byNickname.query(.all.equal(String?.none)).explain() == "index scan Member.byNickname (nickname = null), a point read per entry")
    }

    @Test("a query reads through its plan: the key plan for key queries, the index plan for index queries", arguments: TestEngines.all)
    func readsThroughPlan(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.withTransaction { ctx in
                for (i, city) in ["Paris", "Lyon", "Paris", "Nice"].enumerated() {
                    try ctx.insert(Member(id: i, email: "m\(i)@x", city: city, age: 20 + i, tags: ["t"]))
                }
            }
            try store.withReadTransaction { ctx in
                let byKey = Query<Member>(.all.then(Comparison.greaterThan(1)))
                #expect(byKey.plan is KeyScanPlan<Member> && byKey.index == nil)
                #expect(try byKey.select(in: ctx).map(\.id) == [2, 3])
                let byIndex = Member.byCityAge.query(.all.equal("Paris"))
                #expect(byIndex.plan is IndexScanPlan<Member> && byIndex.index?.name == "byCityAge")
                #expect(try byIndex.select(in: ctx, order: .descending).map(\.id) == [2, 0])
                #expect(try byIndex.count(in: ctx) == 2)
                #expect(try byIndex.primaryKeys(in: ctx).map(\.bytes) == [KeyCodec.encode(0), KeyCodec.encode(2)])
                let page = try byIndex.page(in: ctx, limit: 1)
                #expect(page.records.map(\.id) == [0])
                #expect(try byIndex.page(in: ctx, limit: 1, after: page.next).records.map(\.id) == [2])
            }
        }
    }
}
