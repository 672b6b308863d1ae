import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataRecords

/// Secondary indexes on the engine: queries of every shape and kind, maintenance by every kind
/// of write, unique violations, key limits, online builds and paging. Each case checks results
/// against values written out by hand or a model, and every index against a recomputation from
/// the records (``TransactionContext/verifyIndexes(_:)``).
enum IndexCases {
    typealias M = IndexedMember

    static let all: [ConformanceCase] = queries + writes + jobs

    static let queries: [ConformanceCase] = [
        ConformanceCase("index", "equality on a field finds every record with the value, in primary-key order") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                try expectEqual(try M.byCityAge.select(in: tx, .all.equal("New York")).map(\.id), [2, 1], "byCityAge = New York (age order)")
                try expectEqual(try M.byTag.select(in: tx, .all.equal("taxi")).map(\.id), [1, 5], "byTag = taxi")
                try expectEqual(try M.byCityAge.select(in: tx, .all.equal("Nowhere")).map(\.id), [], "byCityAge = Nowhere")
            }
        },
        ConformanceCase("index", "a unique index gives a point lookup; a missing value is nil") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                try expectEqual(try M.byEmail.fetch(in: tx, .all.equal("ruby@rhod.fm")), M.cast[2], "fetch ruby@rhod.fm")
                try expectEqual(try M.byEmail.fetch(in: tx, .all.equal("nobody@nowhere")), nil, "fetch nobody@nowhere")
                try expectRecordError(.invalidIndex(type: "IndexedMember", index: "byTag", detail: "fetch needs a unique index; use select"),
                                      "fetch on a non-unique index") { try M.byTag.fetch(in: tx, .all.equal("taxi")) }
            }
        },
        ConformanceCase("index", "a comparison on the last component; lessThan walks down from the bound") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                try expectEqual(try M.byCityAge.select(in: tx, .all.equal("Paris").then(Comparison.greaterThan(50))).map(\.id), [5],
                                "Paris, age > 50")
                try expectEqual(try M.byCityAge.select(in: tx, .all.equal("New York").then(Comparison.lessThan(50))).map(\.id), [1, 2],
                                "New York, age < 50 (nearest first)")
                try expectEqual(try M.byCityAge.select(in: tx, .all.equal("New York").then(Comparison.lessThan(50)), order: .ascending).map(\.id),
                                [2, 1], "New York, age < 50, ascending")
                try expectEqual(try M.byCityAge.select(in: tx, .all.equal("Paris").then(Comparison.closedRange(50...65))).map(\.id), [4, 5],
                                "Paris, 50...65")
            }
        },
        ConformanceCase("index", "ranges and oneOf on the first component") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                try expectEqual(try M.byCityAge.select(in: tx, .all.then(Comparison.oneOf(["Paris", "Fhloston"]))).map(\.id), [3, 4, 5],
                                "city oneOf Paris, Fhloston")
                try expectEqual(try M.byCityAge.select(in: tx, .all.then(Comparison.range("G"..<"P"))).map(\.id), [2, 1], "city in G..<P")
                try expectEqual(try M.byAgeCovering.select(in: tx, .all.then(Comparison.greaterThanOrEqual(45))).map(\.id), [1, 4, 5], "age >= 45")
            }
        },
        ConformanceCase("index", "limit and order") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                try expectEqual(try M.byCityAge.select(in: tx, limit: 2, order: .descending).map(\.id), [5, 4], "last two by city, age")
                try expectEqual(try M.byCityAge.select(in: tx, limit: 2).map(\.id), [3, 2], "first two by city, age")
                try expectEqual(try M.byTag.select(in: tx, .all.equal("taxi"), limit: 1, order: .descending).map(\.id), [5], "last taxi")
                try expectEqual(try M.byAgeCovering.select(in: tx, limit: 0).map(\.id), [], "limit 0")
            }
        },
        ConformanceCase("index", "count and primary keys read entries only") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                try expectEqual(try M.byCityAge.count(in: tx, .all.then(Comparison.greaterThanOrEqual("O"))), 2, "count city >= O")
                try expectEqual(try M.byEmail.count(in: tx), 5, "count byEmail")
                try expectEqual(try M.byCityAge.primaryKeys(in: tx, .all.equal("Paris")), [M.key(4), M.key(5)], "primary keys in Paris")
            }
        },
        ConformanceCase("index", "multi-valued: one entry per distinct element, none for an empty collection") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                try expectEqual(try M.byTag.count(in: tx, .all.equal("supreme")), 1, "entries for supreme (listed twice)")
                try expectEqual(try M.byTag.count(in: tx), 7, "entries in byTag")
                try expectEqual(try M.byTag.select(in: tx, .all.then(Comparison.range("p"..<"s"))).map(\.id), [1, 5, 3],
                                "tags in p..<s (pilot, priest, radio)")
            }
        },
        ConformanceCase("index", "a covering index returns the same records from its entries") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                try expectEqual(try M.byAgeCovering.select(in: tx, .all.then(Comparison.range(30..<60))), [M.cast[2], M.cast[0], M.cast[3]],
                                "age in 30..<60")
            }
            try store.withTransaction { tx in
                var ruby = M.cast[2]
                ruby.city = "Paris"
                try tx.insert(ruby)
                try expectEqual(try M.byAgeCovering.select(in: tx, .all.equal(30)), [ruby], "age 30 after an overwrite with the same age")
            }
            try expectExact(store, "after overwriting a covered record")
        },
        ConformanceCase("index", "nil sorts first; several records may be nil in a unique index") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                try expectEqual(try M.byNickname.select(in: tx, .all.equal(String?.none)).map(\.id), [2, 4, 5], "nickname nil")
                try expectEqual(try M.byNickname.select(in: tx, limit: 4).map(\.id), [2, 4, 5, 1], "first four by nickname")
                try expectEqual(try M.byNickname.fetch(in: tx, .all.equal(String?("Ruby")))?.id, 3, "fetch nickname Ruby")
            }
        },
        ConformanceCase("index", "views over an index read the records select returns, checksums verified") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                for (index, query) in [(M.byCityAge, RecordQuery.all.equal("New York")), (M.byAgeCovering, .all.then(Comparison.lessThan(60)))] {
                    var viewed: [M] = []
                    try index.forEachView(in: tx, query) { view in
                        viewed.append(try view.record())
                        return true
                    }
                    try expectEqual(viewed, try index.select(in: tx, query), "views of \(index.name)")
                    var first: [M] = []
                    try index.query(query).forEachView(in: tx, limit: 1) { view in
                        first.append(try view.record())
                        return true
                    }
                    try expectEqual(first, Array(try index.select(in: tx, query).prefix(1)), "Query.forEachView of \(index.name), limit 1")
                }
            }
        },
        ConformanceCase("index", "equalities given as encoded values (the macro's path) return what the same query does, in reads, writes and nested lookups") { ctx in
            let store = try ctx.storeWithCast()
            // Every equality shape of every index, both orders, with and without a limit, as
            // records, counts and (unique) point lookups, against the same RecordQuery.
            func agree(_ tx: TransactionContext, _ when: String) throws {
                let cities = ["New York", "Paris", "Fhloston", "Nowhere"], tags = ["taxi", "supreme", "pilot", "none"]
                for city in cities {
                    for order in [Order.ascending, .descending] {
                        try expectEqual(try M.byCityAge.select(in: tx, order: order) { $0.append(city) }, try M.byCityAge.select(in: tx, .all.equal(city), order: order),
                                        "\(when): byCityAge = \(city), \(order)")
                        try expectEqual(try M.byCityAge.select(in: tx, limit: 1, order: order) { $0.append(city) },
                                        try M.byCityAge.select(in: tx, .all.equal(city), limit: 1, order: order), "\(when): byCityAge = \(city), limit 1, \(order)")
                    }
                    for age in [30, 42, 62] {
                        try expectEqual(try M.byCityAge.select(in: tx) { $0.append(city); $0.append(age) }, try M.byCityAge.select(in: tx, .all.equal(city).equal(age)),
                                        "\(when): byCityAge = \(city), \(age)")
                    }
                    try expectEqual(try M.byCityAge.count(in: tx) { $0.append(city) }, try M.byCityAge.count(in: tx, .all.equal(city)), "\(when): count \(city)")
                }
                for tag in tags {
                    try expectEqual(try M.byTag.select(in: tx) { $0.append(tag) }, try M.byTag.select(in: tx, .all.equal(tag)), "\(when): byTag = \(tag)")
                }
                for age in [25, 30, 42, 65, 99] {
                    try expectEqual(try M.byAgeCovering.select(in: tx, order: .descending) { $0.append(age) },
                                    try M.byAgeCovering.select(in: tx, .all.equal(age), order: .descending), "\(when): covering age \(age)")
                }
                for email in M.cast.map(\.email) + ["nobody@nowhere", "korben@fhloston.com", "nine@x"] {
                    try expectEqual(try M.byEmail.fetch(in: tx) { $0.append(email) }, try M.byEmail.fetch(in: tx, .all.equal(email)), "\(when): fetch \(email)")
                }
                try expectEqual(try M.byNickname.select(in: tx) { $0.append(String?.none) }, try M.byNickname.select(in: tx, .all.equal(String?.none)),
                                "\(when): nickname nil")
                // A lookup inside another's visitor uses buffers of its own.
                var nested: [[Int]] = []
                try M.byCityAge.forEach(in: tx, .all.equal("New York")) { member in
                    nested.append(try M.byCityAge.select(in: tx) { $0.append(member.city); $0.append(member.age) }.map(\.id))
                    return true
                }
                try expectEqual(nested, try M.byCityAge.select(in: tx, .all.equal("New York")).map { [$0.id] }, "\(when): lookups inside a visitor")
                try expectRecordError(.invalidQuery(type: "IndexedMember", detail: "2 components given, index byEmail has 1"), "\(when): two values on byEmail") {
                    try M.byEmail.select(in: tx) { $0.append("a"); $0.append("b") }
                }
                try expectRecordError(.invalidQuery(type: "IndexedMember", detail: "fetch on index byEmail needs every component, by equality"), "\(when): fetch without a value") {
                    try M.byEmail.fetch(in: tx) { _ in }
                }
            }
            try store.withReadTransaction { tx in try agree(tx, "read") }
            try store.withTransaction { tx in
                var korben = M.cast[0]
                (korben.email, korben.city) = ("korben@fhloston.com", "Fhloston")
                try tx.insert(korben)  // pending writes the lookups must see
                try tx.insert(M(id: 9, email: "nine@x", nickname: nil, city: "Paris", age: 42, tags: ["taxi", "pilot"]))
                try agree(tx, "write")
            }
            try store.withReadTransaction { tx in try agree(tx, "after the commit") }
        },
        ConformanceCase("index", "a query of the wrong shape is a typed error") { ctx in
            let store = try ctx.storeWithCast()
            try store.withReadTransaction { tx in
                try expectRecordError(.invalidQuery(type: "IndexedMember", detail: "component 0 of index byCityAge (city) is String"),
                                      "an Int for city") { try M.byCityAge.select(in: tx, .all.equal(3)) }
                try expectRecordError(.invalidQuery(type: "IndexedMember", detail: "2 components given, index byEmail has 1"),
                                      "two components on byEmail") { try M.byEmail.select(in: tx, .all.equal("a").equal("b")) }
            }
        },
    ]

    static let writes: [ConformanceCase] = [
        ConformanceCase("index", "an overwrite removes the old entries and adds the new ones") { ctx in
            let store = try ctx.storeWithCast()
            try store.withTransaction { tx in
                var korben = M.cast[0]
                korben.email = "korben@new.york"
                korben.city = "Fhloston"
                korben.tags = ["taxi", "hero"]
                try tx.insert(korben)
                try expectEqual(try M.byEmail.fetch(in: tx, .all.equal("korben@taxi.nyc")), nil, "old email, same transaction")
                try expectEqual(try M.byEmail.fetch(in: tx, .all.equal("korben@new.york"))?.id, 1, "new email, same transaction")
                try expectEqual(try M.byTag.select(in: tx, .all.equal("pilot")).map(\.id), [], "dropped tag")
                try expectEqual(try M.byTag.select(in: tx, .all.equal("taxi")).map(\.id), [1, 5], "kept tag")
                try expectEqual(try M.byCityAge.select(in: tx, .all.equal("Fhloston")).map(\.id), [3, 1], "new city")
            }
            try expectExact(store, "after an overwrite")
            try store.withReadTransaction { tx in
                try expectEqual(try M.byCityAge.select(in: tx, .all.equal("New York")).map(\.id), [2], "old city, after commit")
            }
        },
        ConformanceCase("index", "deletes by key, by record and by query remove the entries") { ctx in
            let store = try ctx.storeWithCast()
            try store.withTransaction { tx in
                try expectTrue(try tx.delete(M.self, key: M.key(3)), "delete by key 3")
                try expectTrue(try tx.delete(M.cast[3]), "delete record 4")
                try expectTrue(try !tx.delete(M.cast[3]), "delete record 4 again")
            }
            try expectExact(store, "after deletes by key")
            try store.withTransaction { tx in
                for id in 10..<40 { try tx.insert(M(id: id, email: "m\(id)@x", city: "C\(id % 3)", age: id, tags: ["t\(id % 4)"])) }
                try expectEqual(try tx.delete(M.self, .all.then(Comparison.range(10..<25))), 15, "deleted by query")
                try expectEqual(try M.byCityAge.select(in: tx, .all.equal("C0")).map(\.id), [27, 30, 33, 36, 39], "C0 after the delete")
            }
            try expectExact(store, "after a delete by query")
            try store.withTransaction { tx in try expectEqual(try tx.delete(M.self, .all), 18, "deleted all") }
            try store.withReadTransaction { tx in
                for index in M.indexes { try expectEqual(try index.count(in: tx), 0, "entries of \(index.name) after deleting all") }
            }
        },
        ConformanceCase("index", "a rolled-back transaction leaves no entry and removes none") { ctx in
            let store = try ctx.storeWithCast()
            struct Abort: Error {}
            do {
                try store.withTransaction { tx in
                    try tx.insert(M(id: 99, email: "gone@x", city: "Nowhere", age: 1, tags: ["ghost"]))
                    try tx.delete(M.self, .all)
                    throw Abort()
                }
            } catch is Abort {}
            try expectExact(store, "after a rollback")
            try store.withReadTransaction { tx in
                try expectEqual(try M.byTag.select(in: tx, .all.equal("ghost")).map(\.id), [], "ghost tag")
                try expectEqual(try M.byEmail.count(in: tx), 5, "byEmail entries")
            }
        },
        ConformanceCase("index", "a unique violation names the value and has no effect; the transaction goes on") { ctx in
            let store = try ctx.storeWithCast()
            try store.withTransaction { tx in
                let thief = M(id: 7, email: "ruby@rhod.fm", city: "Paris", age: 20, tags: ["thief"])
                try expectRecordError(.uniqueViolation(type: "IndexedMember", index: "byEmail", value: "\"ruby@rhod.fm\""), "a second ruby@rhod.fm") {
                    try tx.insert(thief)
                }
                try expectEqual(try tx.fetch(M.self, key: M.key(7)), nil, "the refused record")
                try expectEqual(try M.byTag.select(in: tx, .all.equal("thief")).map(\.id), [], "the refused record's tag")
                var korben = M.cast[0]
                korben.nickname = "Ruby"
                try expectRecordError(.uniqueViolation(type: "IndexedMember", index: "byNickname", value: "\"Ruby\""), "Korben as Ruby") {
                    try tx.insert(korben)
                }
                try expectEqual(try tx.fetch(M.self, key: M.key(1)), M.cast[0], "Korben after the refused overwrite")
                try tx.insert(M(id: 8, email: "new@x", city: "Paris", age: 20))
                try tx.insert(M(id: 3, email: "ruby@rhod.fm", nickname: "Ruby", city: "Paris", age: 31))  // its own values
            }
            try expectExact(store, "after refused writes")
            try store.withReadTransaction { tx in
                try expectEqual(try M.byEmail.fetch(in: tx, .all.equal("new@x"))?.id, 8, "the write after the violations")
                try expectEqual(try M.byEmail.fetch(in: tx, .all.equal("ruby@rhod.fm"))?.age, 31, "Ruby's overwrite")
            }
        },
        ConformanceCase("index", "an entry over the key limit is refused with its length; nothing is written") { ctx in
            let store = try ctx.recordStore()
            let long = M(id: 1, email: String(repeating: "e", count: 495), city: "C", age: 1)
            // RecordFormat.md, "Indexes": 00 enc("ix", keyspace, name, generation) ‖ values ‖ primary key.
            let length = 1 + KeyCodec.encode("ix", "IndexedMember", "byEmail", 1).count + KeyCodec.encode(long.email).count + KeyCodec.encode(1).count
            try expectRecordError(.indexKeyTooLarge(type: "IndexedMember", index: "byEmail", length: length, limit: 511), "a 495-byte email") {
                try store.withTransaction { tx in try tx.insert(long) }
            }
            try store.withTransaction { tx in
                try tx.insert(M.cast[0])
                var longer = M.cast[0]
                longer.tags = ["short", String(repeating: "t", count: 500)]
                do {
                    try tx.insert(longer)
                    throw ConformanceFailure("a 500-byte tag: expected indexKeyTooLarge, got success")
                } catch RecordError.indexKeyTooLarge(_, let index, _, _) {
                    try expectEqual(index, "byTag", "the index named")
                }
                try expectEqual(try tx.fetch(M.self, key: M.key(1)), M.cast[0], "the record after the refused overwrite")
            }
            try expectExact(store, "after refused entries")
            try store.withReadTransaction { tx in try expectEqual(try M.count(in: tx), 1, "records") }
        },
        ConformanceCase("index", "random logs of writes and aborted transactions keep every index equal to a model") { ctx in
            let store = try ctx.recordStore()
            var model: [Int: M] = [:]
            // Values that end in or hold the bytes the key encoding escapes (00, 01), and empty
            // ones: an equality must not return the values that extend the one it asks for.
            let cities = ["A", "A\0", "A\0B", "", "\0", "A\u{1}"], tags = ["x", "x\0", "", "\0", "x\u{1}"]
            try randomLog(store, seed: 0x1D_E5, steps: 40, model: &model) { tx, working, random, step in
                let id = Int.random(in: 0..<40, using: &random)
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<6:
                    let m = M(id: id, email: "e\(Int.random(in: 0..<60, using: &random))" + ["", "\0", "\0\0"].randomElement(using: &random)!,
                              nickname: Bool.random(using: &random) ? nil : "n\(Int.random(in: 0..<60, using: &random))",
                              city: cities.randomElement(using: &random)!, age: Int.random(in: 0..<5, using: &random),
                              tags: (0..<Int.random(in: 0..<3, using: &random)).map { _ in tags.randomElement(using: &random)! })
                    let clash = working.values.contains { $0.id != id && ($0.email == m.email || (m.nickname != nil && $0.nickname == m.nickname)) }
                    do {
                        try tx.insert(m)
                        try expectTrue(!clash, "step \(step): a clashing insert of \(id) was accepted")
                        working[id] = m
                    } catch RecordError.uniqueViolation {
                        try expectTrue(clash, "step \(step): a unique violation for \(id) with no clash")
                    }
                case 6..<8:
                    try expectEqual(try tx.delete(M.self, key: M.key(id)), working[id] != nil, "step \(step): delete \(id)")
                    working[id] = nil
                default:
                    let removed = try tx.delete(M.self, .all.then(Comparison.range(id..<(id + 6))))
                    try expectEqual(removed, working.keys.filter { (id..<(id + 6)).contains($0) }.count, "step \(step): range delete")
                    for gone in id..<(id + 6) { working[gone] = nil }
                }
            } check: { model, step in
                try expectExact(store, "after step \(step)")
                try store.withReadTransaction { tx in
                    let members = model.values.sorted { $0.id < $1.id }
                    for tag in tags {
                        let expected = members.filter { $0.tags.contains(tag) }.map(\.id)
                        try expectEqual(try M.byTag.select(in: tx, .all.equal(tag)).map(\.id), expected, "step \(step): byTag = \(tag.debugDescription)")
                        try expectEqual(try M.byTag.select(in: tx) { $0.append(tag) }.map(\.id), expected, "step \(step): byTag = \(tag.debugDescription), encoded")
                    }
                    for city in cities {
                        let expected = members.filter { $0.city == city }.sorted { ($0.age, $0.id) < ($1.age, $1.id) }
                        try expectEqual(try M.byCityAge.select(in: tx, .all.equal(city), order: .ascending), expected, "step \(step): city \(city.debugDescription)")
                        try expectEqual(try M.byCityAge.count(in: tx) { $0.append(city) }, expected.count, "step \(step): count city \(city.debugDescription)")
                    }
                    for member in members {
                        try expectEqual(try M.byEmail.fetch(in: tx, .all.equal(member.email))?.id, member.id, "step \(step): fetch \(member.email.debugDescription)")
                    }
                }
            }
        },
    ]

    static let jobs: [ConformanceCase] = [
        ConformanceCase("index", "an index added to records already stored is write-only until Store.prepare builds it") { ctx in
            let engine = try ctx.open()
            try CaseStores.store(on: engine).withTransaction { tx in
                for id in 0..<120 { try tx.insert(UnindexedMember(M(id: id, email: "m\(id)@x", city: "C\(id % 7)", age: id % 9, tags: ["t\(id % 5)"]))) }
            }
            let store = try CaseStores.store(on: engine)
            try expectRecordError(.indexNotReady(type: "IndexedMember", index: "byEmail", state: .writeOnly), "a query before the build") {
                try store.withReadTransaction { tx in try M.byEmail.select(in: tx) }
            }
            try store.withTransaction { tx in
                try tx.insert(M(id: 1_000, email: "late@x", city: "C1", age: 3, tags: ["late"]))
                try tx.insert(M(id: 5, email: "m5-moved@x", city: "C5", age: 5))
            }
            let report = try store.prepare(M.self, batchSize: 25).wait()
            try expectEqual(Set(report.built), Set(M.indexes.map(\.name)), "indexes built")
            try expectTrue(report.batches >= 5, "batches of 25: \(report.batches)")
            try expectExact(store, "after the build")
            try store.withReadTransaction { tx in
                try expectEqual(try M.byEmail.fetch(in: tx, .all.equal("m5-moved@x"))?.id, 5, "a record overwritten during write-only")
                try expectEqual(try M.byTag.count(in: tx, .all.equal("t0")), 23, "t0 (5 lost its tag)")
                try expectEqual(try M.byCityAge.count(in: tx, .all.equal("C1")), 18, "C1")
            }
            try expectEqual(try store.prepare(M.self).wait().batches, 0, "batches of a second prepare")
        },
        ConformanceCase("index", "pages on an index continue after the last entry while records change between pages") { ctx in
            let store = try ctx.recordStore()
            try store.withTransaction { tx in
                for id in 0..<30 { try tx.insert(M(id: id, email: "m\(id)@x", city: "C", age: id % 6)) }
            }
            let query = M.byCityAge.query(.all.equal("C"))
            var seen: [Int] = []
            var token: PageToken?
            var pages = 0
            repeat {
                let page = try store.withReadTransaction { tx in try query.page(in: tx, limit: 7, order: .ascending, after: token) }
                seen += page.records.map(\.id)
                token = page.next
                pages += 1
                try expectTrue(pages < 20, "paging does not end")
                if pages == 2 {  // behind the cursor (age 0) and ahead of it (age 5); one deleted ahead
                    try store.withTransaction { tx in
                        try tx.insert(M(id: 100, email: "behind@x", city: "C", age: 0))
                        try tx.insert(M(id: 101, email: "ahead@x", city: "C", age: 5))
                        try tx.delete(M.self, key: M.key(29))
                    }
                }
            } while token != nil
            // Every record there throughout, once, in (age, id) order; 101 (ahead) too; not 100 (behind) nor 29 (deleted ahead).
            let expected = ((0..<29).map { (age: $0 % 6, id: $0) } + [(age: 5, id: 101)]).sorted { ($0.age, $0.id) < ($1.age, $1.id) }.map(\.id)
            try expectEqual(seen, expected, "ids seen across pages")
        },
        ConformanceCase("index", "entries and states survive a close and reopen", requires: .persistent) { ctx in
            let store = try ctx.storeWithCast()
            try store.close()
            let reopened = try ctx.recordStore()
            try reopened.withReadTransaction { tx in
                try expectEqual(try M.byEmail.fetch(in: tx, .all.equal("zorg@zorg.corp"))?.id, 4, "fetch after reopen")
                try expectEqual(try M.byTag.count(in: tx), 7, "byTag entries after reopen")
            }
            try expectExact(reopened, "after reopen")
        },
    ]
}

extension CaseContext {
    /// A record store on the case's engine (closed with the case).
    func recordStore() throws -> Store { try CaseStores.store(on: open()) }

    /// A record store holding ``IndexedMember/cast``, its indexes exact.
    func storeWithCast() throws -> Store {
        let store = try recordStore()
        try store.withTransaction { tx in for member in IndexedMember.cast { try tx.insert(member) } }
        try expectExact(store, "after inserting the cast")
        return store
    }
}

/// Every index of ``IndexedMember`` equals a recomputation from the records.
func expectExact(_ store: Store, _ when: String) throws {
    let results = try store.withReadTransaction { tx in try tx.verifyIndexes(IndexedMember.self) }
    try expectEqual(results.count, IndexedMember.indexes.count, "indexes verified \(when)")
    for result in results {
        try expectTrue(result.isExact, "index \(result.index) \(when): \(result.missingCount) entries missing, \(result.staleCount) stale")
    }
}

/// A random log of transactions against a model: `steps` transactions of 1 to 6 operations
/// (`operation` applies one to the transaction and to `working`, the model's copy), one in six
/// rolled back at its end; the model takes the working copy only when the transaction committed,
/// and `check` compares the store with it after every step.
func randomLog<Model>(_ store: Store, seed: UInt64, steps: Int, model: inout Model,
                      operation: (_ tx: TransactionContext, _ working: inout Model, _ random: inout SeededRandom, _ step: Int) throws -> Void,
                      check: (_ model: Model, _ step: Int) throws -> Void) throws {
    var random = SeededRandom(seed: seed)
    for step in 0..<steps {
        let abort = Int.random(in: 0..<6, using: &random) == 0
        var working = model
        do {
            try store.withTransaction { tx in
                for _ in 0..<Int.random(in: 1...6, using: &random) { try operation(tx, &working, &random, step) }
                if abort { throw RandomLogAbort() }
            }
            model = working
        } catch is RandomLogAbort {}
        try check(model, step)
    }
}

/// Rolls back a transaction of ``randomLog(_:seed:steps:model:operation:check:)``.
struct RandomLogAbort: Error {}

/// Checks that `body` throws the record error `expected`.
func expectRecordError<R>(_ expected: RecordError, _ what: @autoclosure () -> String, _ body: () throws -> R) throws {
    do {
        let result = try body()
        throw ConformanceFailure("\(what()): expected error \(expected), got success \(result)")
    } catch let error as RecordError {
        guard error == expected else { throw ConformanceFailure("\(what()): expected error \(expected), got error \(error)") }
    }
}
