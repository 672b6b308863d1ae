import Foundation
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
import StrataRecords
import Testing

/// A hand-written record with fields of the kinds predicates compare, and value indexes the
/// planner can choose: a composite, a multi-valued one, a covering one and one on an optional.
struct Citizen: Record, Equatable, Sendable {
    var country: String
    var id: Int
    var name: String
    var age: Int
    var nick: String?
    var tags: [String]
    var score: Double
    var active: Bool

    static let recordType = RecordType(
        keyspace: "Citizen", key: [("country", String.self), ("id", Int.self)],
        fields: [("name", String.fieldFormat), ("age", Int.fieldFormat), ("nick", String?.fieldFormat), ("tags", [String].fieldFormat),
                 ("score", Double.fieldFormat), ("active", Bool.fieldFormat)])
    static let byNameAge = RecordIndex<Citizen>("byNameAge", .field("name", \.name), .field("age", \.age))
    static let byTag = RecordIndex<Citizen>("byTag", .each("tags", \.tags))
    static let byAge = RecordIndex<Citizen>("byAge", .field("age", \.age), covering: true)
    static let byNick = RecordIndex<Citizen>("byNick", .field("nick", \.nick))
    static let indexes = [byNameAge, byTag, byAge, byNick]
    static var storedKeyPaths: [String: PartialKeyPath<Citizen>] {
        ["country": \.country, "id": \.id, "name": \.name, "age": \.age, "nick": \.nick, "tags": \.tags, "score": \.score, "active": \.active]
    }

    func writeKey(to key: inout KeyWriter) {
        key.append(country)
        key.append(id)
    }
    func writeFields(to fields: inout FieldWriter) {
        fields.write(name)
        fields.write(age)
        fields.write(nick)
        fields.write(tags)
        fields.write(score)
        fields.write(active)
    }
    init(country: String, id: Int, name: String, age: Int, nick: String?, tags: [String], score: Double, active: Bool) {
        (self.country, self.id, self.name, self.age, self.nick, self.tags, self.score, self.active) = (country, id, name, age, nick, tags, score, active)
    }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        country = try key.read()
        id = try key.read()
        name = try fields.read()
        age = try fields.read()
        nick = try fields.read()
        tags = try fields.read()
        score = try fields.read()
        active = try fields.read()
    }

    static func == (a: Citizen, b: Citizen) -> Bool {
        a.country == b.country && a.id == b.id && a.name == b.name && a.age == b.age && a.nick == b.nick && a.tags == b.tags
            && (a.score == b.score || (a.score.isNaN && b.score.isNaN)) && a.active == b.active
    }

    var primaryKey: String { "\(country)/\(id)" }
}

/// A record with an index whose multi-valued component comes after a plain one: a record with no
/// tag has no entry in it.
struct Labelled: Record, Equatable, Sendable {
    var id: Int
    var name: String
    var tags: [String]
    static let recordType = RecordType(keyspace: "Labelled", key: [("id", Int.self)],
                                       fields: [("name", String.fieldFormat), ("tags", [String].fieldFormat)])
    static let byNameTag = RecordIndex<Labelled>("byNameTag", .field("name", \.name), .each("tags", \.tags))
    static let indexes = [byNameTag]
    static var storedKeyPaths: [String: PartialKeyPath<Labelled>] { ["id": \.id, "name": \.name, "tags": \.tags] }
    init(id: Int, name: String, tags: [String]) { (self.id, self.name, self.tags) = (id, name, tags) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) {
        fields.write(name)
        fields.write(tags)
    }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        name = try fields.read()
        tags = try fields.read()
    }
}

/// `Citizen`'s keyspace written by a type that declares no index: its first write disables them.
struct PlainCitizen: Record {
    var citizen: Citizen
    static let recordType = Citizen.recordType
    func writeKey(to key: inout KeyWriter) { citizen.writeKey(to: &key) }
    func writeFields(to fields: inout FieldWriter) { citizen.writeFields(to: &fields) }
    init(_ citizen: Citizen) { self.citizen = citizen }
    init(key: inout KeyReader, fields: inout FieldReader) throws { citizen = try Citizen(key: &key, fields: &fields) }
}

@Suite("Predicate queries: the planner, on every engine")
struct PredicateQueryTests {
    typealias Variable = PredicateExpressions.Variable<Citizen>
    typealias Expression = any StandardPredicateExpression<Bool>

    static let names = ["", "a", "a\u{0}", "ab", "Jane", "Joan", "Zoë", "Łódź", "日本", "b"]
    static let countries = ["", "fr", "fr\u{0}", "de", "ça"]
    static let ages = [-5, 0, 1, 17, 30, 31, 45, 90, Int.min, Int.max]
    static let scores = [-1.5, -0.0, 0.0, 2.5, .nan, .infinity]

    static func randomCitizen(_ rng: inout some RandomNumberGenerator, id: Int) -> Citizen {
        Citizen(country: countries.randomElement(using: &rng)!, id: id, name: names.randomElement(using: &rng)!,
                age: ages.randomElement(using: &rng)!, nick: Bool.random(using: &rng) ? nil : names.randomElement(using: &rng)!,
                tags: (0..<Int.random(in: 0...3, using: &rng)).map { _ in names.randomElement(using: &rng)! },
                score: scores.randomElement(using: &rng)!, active: Bool.random(using: &rng))
    }

    /// A random predicate over Citizen, as `#Predicate` would build it.
    static func randomExpression(_ v: Variable, _ rng: inout some RandomNumberGenerator, depth: Int) -> Expression {
        func path<T>(_ keyPath: KeyPath<Citizen, T> & Sendable) -> PredicateExpressions.KeyPath<Variable, T> {
            PredicateExpressions.KeyPath(root: v, keyPath: keyPath)
        }
        func compare<T: Comparable & Codable & Sendable>(_ keyPath: KeyPath<Citizen, T> & Sendable, _ value: T) -> Expression {
            let (lhs, rhs) = (path(keyPath), PredicateExpressions.Value(value))
            let flip = Bool.random(using: &rng)
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: return flip ? PredicateExpressions.Equal(lhs: rhs, rhs: lhs) : PredicateExpressions.Equal(lhs: lhs, rhs: rhs)
            case 1: return PredicateExpressions.NotEqual(lhs: lhs, rhs: rhs)
            case 2: return flip ? PredicateExpressions.Comparison(lhs: rhs, rhs: lhs, op: .lessThan) : PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .lessThan)
            case 3: return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .lessThanOrEqual)
            case 4: return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .greaterThan)
            default: return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .greaterThanOrEqual)
            }
        }
        func and<L: StandardPredicateExpression<Bool>, R: StandardPredicateExpression<Bool>>(_ l: L, _ r: R) -> Expression {
            PredicateExpressions.Conjunction(lhs: l, rhs: r)
        }
        func or<L: StandardPredicateExpression<Bool>, R: StandardPredicateExpression<Bool>>(_ l: L, _ r: R) -> Expression {
            PredicateExpressions.Disjunction(lhs: l, rhs: r)
        }
        func not<E: StandardPredicateExpression<Bool>>(_ e: E) -> Expression { PredicateExpressions.Negation(e) }
        if depth > 0 && Int.random(in: 0..<3, using: &rng) > 0 {
            let l = randomExpression(v, &rng, depth: depth - 1)
            let r = randomExpression(v, &rng, depth: depth - 1)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0, 1, 2: return and(l, r)
            case 3: return or(l, r)
            default: return not(l)
            }
        }
        let name = names.randomElement(using: &rng)!
        switch Int.random(in: 0..<12, using: &rng) {
        case 0, 1: return compare(\.age, ages.randomElement(using: &rng)!)
        case 2, 3: return compare(\.name, name)
        case 4: return compare(\.country, countries.randomElement(using: &rng)!)
        case 5: return compare(\.id, Int.random(in: -2...45, using: &rng))
        case 6:
            let value: String? = Bool.random(using: &rng) ? nil : name
            return Bool.random(using: &rng) ? PredicateExpressions.Equal(lhs: path(\.nick), rhs: PredicateExpressions.Value(value))
                : PredicateExpressions.NotEqual(lhs: path(\.nick), rhs: PredicateExpressions.Value(value))
        case 7: return PredicateExpressions.SequenceContains(sequence: path(\.tags), element: PredicateExpressions.Value(name))
        case 8:
            let list = (0..<Int.random(in: 0...3, using: &rng)).map { _ in names.randomElement(using: &rng)! }
            return PredicateExpressions.SequenceContains(sequence: PredicateExpressions.Value(list), element: path(\.name))
        case 9:
            let list = (0..<Int.random(in: 0...3, using: &rng)).map { _ in ages.randomElement(using: &rng)! }
            return PredicateExpressions.SequenceContains(sequence: PredicateExpressions.Value(list), element: path(\.age))
        case 10: return compare(\.score, scores.randomElement(using: &rng)!)
        default: return Bool.random(using: &rng) ? path(\.active) : not(path(\.active))
        }
    }

    /// The order a sort asks for, by Swift's own comparisons (`nil` first), ties by primary key
    /// in the first field's direction: what the planner must give, however it reads.
    static func inOrder(_ a: Citizen, _ b: Citizen, _ sort: [(field: Int, descending: Bool)]) -> Bool {
        func compare<T: Comparable>(_ x: T, _ y: T) -> Int { x < y ? -1 : x > y ? 1 : 0 }
        for (field, descending) in sort {
            var c: Int
            switch field {
            case 0: c = compare(a.age, b.age)
            case 1: c = compare(a.name, b.name)
            case 2: c = compare(a.country, b.country)
            default: c = a.nick == b.nick ? 0 : a.nick == nil ? -1 : b.nick == nil ? 1 : compare(a.nick!, b.nick!)
            }
            if descending { c = -c }
            if c != 0 { return c < 0 }
        }
        let c = a.country == b.country ? compare(a.id, b.id) : compare(a.country, b.country)
        return sort.first?.descending == true ? c > 0 : c < 0
    }

    static func sortFields(_ sort: [(field: Int, descending: Bool)]) -> [SortField<Citizen>] {
        sort.map { field, descending in
            switch field {
            case 0: descending ? .descending(\.age) : .ascending(\.age)
            case 1: descending ? .descending(\.name) : .ascending(\.name)
            case 2: descending ? .descending(\.country) : .ascending(\.country)
            default: descending ? .descending(\.nick) : .ascending(\.nick)
            }
        }
    }

    /// 10,000 on the embedded engines; 500 on etcd (every read a request, every page's writes a
    /// replicated commit) but with STRATA_TEST_LONG; 1,000 under a sanitizer, which checks memory,
    /// not the planner's reach. The same seed, so etcd runs the first rounds the others run.
    static func predicateCount(_ kind: EngineKind) -> Int {
        let environment = ProcessInfo.processInfo.environment
        if environment["STRATA_SANITIZER"] != nil { return 1_000 }
        return environment["STRATA_TEST_LONG"] != nil || kind.name != "etcd" ? 10_000 : 500
    }

    @Test("10,000 random predicates, sorts, limits and pages against Foundation's evaluate over every record", arguments: TestEngines.all)
    func differential(kind: EngineKind) throws {
        var rng = SeededGenerator(seed: 20_261_125)
        var model: [String: Citizen] = [:]
        try withStore(kind) { store, _ in
            try store.withTransaction { (ctx: TransactionContext) throws in
                for id in 0..<160 {
                    let c = Self.randomCitizen(&rng, id: id % 40)
                    try ctx.insert(c)
                    model[c.primaryKey] = c
                }
            }
            var plans = Set<String>()
            let rounds = Self.predicateCount(kind)
            for round in 0..<rounds {
                let depth = Int.random(in: 0...3, using: &rng)
                var seedRNG = SeededGenerator(seed: rng.next())
                let predicate = Predicate<Citizen> { v in Self.randomExpression(v, &seedRNG, depth: depth) }
                let sort = (0..<Int.random(in: 0...2, using: &rng)).map { _ in (field: Int.random(in: 0...3, using: &rng), descending: Bool.random(using: &rng)) }
                let limit: Int? = Bool.random(using: &rng) ? nil : Int.random(in: 1...20, using: &rng)
                let descending = Int.random(in: 0..<4, using: &rng) == 0
                let query = Citizen.query(where: predicate, sortedBy: Self.sortFields(sort))
                plans.insert(query.explain().components(separatedBy: " (").first ?? "")
                let expected = try model.values.filter { try predicate.evaluate($0) }
                let context = "round \(round): \(query.explain()), sort \(sort), limit \(String(describing: limit)), descending \(descending)"
                try store.withReadTransaction { (ctx: TransactionContext) throws in
                    let got = try query.select(in: ctx, limit: limit, order: descending ? .descending : .ascending)
                    #expect(Set(got.map(\.primaryKey)).count == got.count, "duplicates: \(context)")
                    if sort.isEmpty {
                        let wanted = Set(expected.map(\.primaryKey))
                        #expect(got.allSatisfy { wanted.contains($0.primaryKey) && model[$0.primaryKey] == $0 }, "\(context)")
                        #expect(got.count == min(limit ?? .max, expected.count), "\(context): \(got.count) of \(expected.count)")
                    } else {
                        var ordered = expected.sorted { Self.inOrder($0, $1, sort) }
                        if descending { ordered.reverse() }
                        let wanted = Array(ordered.prefix(limit ?? .max)).map(\.primaryKey)
                        #expect(got.map(\.primaryKey) == wanted, "\(context)")
                    }
                    if round % 20 == 0 {
                        #expect(try query.count(in: ctx) == expected.count, "count: \(context)")
                        let keys = try query.primaryKeys(in: ctx, limit: limit).count
                        #expect(keys == min(limit ?? .max, expected.count), "primaryKeys: \(context)")
                        var views = 0
                        try query.forEachView(in: ctx, limit: limit) { view in
                            views += try predicate.evaluate(view.record()) ? 1 : 0
                            return true
                        }
                        #expect(views == min(limit ?? .max, expected.count), "views: \(context)")
                    }
                }
                if round % (rounds > 1_000 ? 100 : 25) == 0 {
                    try pageWithWrites(store, query, predicate, sort: sort, model: &model, rng: &rng, context: context)
                }
            }
            // The generator reached every kind of plan.
            for kind in ["key scan Citizen", "index scan Citizen.byNameAge", "index scan Citizen.byTag", "covering index scan Citizen.byAge",
                         "index scan Citizen.byNick", "union of", "intersection of"] {
                #expect(plans.contains(kind), "no plan \(kind) among \(plans)")
            }
        }
    }

    /// Pages of 7 with inserts, overwrites and deletes of other records (ids 40 and up) between pages: a record
    /// there and unchanged throughout, and matching, comes exactly once; pages come in the sort's
    /// order.
    func pageWithWrites(_ store: Store, _ query: Query<Citizen>, _ predicate: Predicate<Citizen>, sort: [(field: Int, descending: Bool)],
                        model: inout [String: Citizen], rng: inout SeededGenerator, context: String) throws {
        let before = model
        var touched = Set<String>()
        var got: [Citizen] = []
        var token: PageToken?
        repeat {
            let page = try store.withReadTransaction { ctx in try query.page(in: ctx, limit: 7, after: token) }
            got += page.records
            token = page.next
            try store.withTransaction { (ctx: TransactionContext) throws in
                for _ in 0..<3 {
                    let c = Self.randomCitizen(&rng, id: Int.random(in: 40...60, using: &rng))
                    if Bool.random(using: &rng) {
                        try ctx.insert(c)
                        model[c.primaryKey] = c
                    } else if let victim = model.values.filter({ $0.id >= 40 }).sorted(by: { $0.primaryKey < $1.primaryKey }).randomElement(using: &rng) {
                        _ = try ctx.delete(victim)
                        model[victim.primaryKey] = nil
                        touched.insert(victim.primaryKey)
                    }
                    touched.insert(c.primaryKey)
                }
            }
            // Any JSON round trip of the token still continues the query.
            token = try token.map { try JSONDecoder().decode(PageToken.self, from: JSONEncoder().encode($0)) }
        } while token != nil
        // A record changed between pages may move past the position and come again; no other may.
        let keys = got.map(\.primaryKey).filter { !touched.contains($0) }
        #expect(Set(keys).count == keys.count, "paging repeated a record: \(context)")
        let steady = try before.values.filter { try $0.id < 40 && !touched.contains($0.primaryKey) && predicate.evaluate($0) }
        let gotKeys = Set(keys)
        #expect(steady.allSatisfy { gotKeys.contains($0.primaryKey) }, "paging missed a record: \(context)")
        if !sort.isEmpty {
            #expect(zip(got, got.dropFirst()).allSatisfy { !Self.inOrder($1, $0, sort) }, "pages out of order: \(context)")
        }
    }

    @Test("explain names the range, the filter and the sort")
    func explain() {
        func plan(_ predicate: Predicate<Citizen>, _ sort: [SortField<Citizen>] = []) -> String {
            Citizen.query(where: predicate, sortedBy: sort).explain()
        }
        #expect(plan(#Predicate { $0.country == "fr" && $0.id > 3 }) == #"key scan Citizen (country = "fr", id > 3)"#)
        #expect(plan(#Predicate { $0.name == "Jane" }, [.ascending(\.age)])
            == #"index scan Citizen.byNameAge (name = "Jane"), a point read per entry; sorted in index order"#)
        #expect(plan(#Predicate { $0.name == "Jane" && $0.age >= 30 && $0.age < 40 && $0.active })
            == #"index scan Citizen.byNameAge (name = "Jane", age >= 30 and age < 40), a point read per entry; filter active == true"#)
        #expect(plan(#Predicate { $0.age > 30 }, [.descending(\.age)])
            == "covering index scan Citizen.byAge (age > 30), records from the entries; sorted in index order")
        #expect(plan(#Predicate { $0.tags.contains("x") && $0.score > 2 })
            == #"index scan Citizen.byTag (tags = "x"), a point read per entry; filter {Comparison<KeyPath<Variable<Citizen>, Double>, Value<Double>>}"#)
        #expect(plan(#Predicate { ["Jane", "Joan"].contains($0.name) })
            == #"index scan Citizen.byNameAge (name in ["Jane", "Joan"]), a point read per entry"#)
        #expect(plan(#Predicate { $0.nick == nil }) == "index scan Citizen.byNick (nick = null), a point read per entry")
        // Equalities on two indexes: the keys both ranges hold, the second range's terms kept in the filter.
        #expect(plan(#Predicate { $0.name == "Jane" && $0.tags.contains("x") && $0.score > 1 })
            == #"intersection of (index scan Citizen.byNameAge (name = "Jane"), a point read per entry | index scan Citizen.byTag (tags = "x"), a point read per entry), a point read per key; filter tags contains "x" && {Comparison<KeyPath<Variable<Citizen>, Double>, Value<Double>>}"#)
        // Not when the best range gives the sort a limit can stop, nor with a covering best.
        #expect(plan(#Predicate { $0.name == "Jane" && $0.tags.contains("x") }, [.ascending(\.age)]).hasPrefix("index scan Citizen.byNameAge"))
        #expect(plan(#Predicate { $0.age == 3 && $0.tags.contains("x") }).hasPrefix("covering index scan Citizen.byAge"))
        // A negative literal is a value; a negation that overflows is left to Foundation (no trap here).
        #expect(plan(#Predicate { $0.age > -10 }) == "covering index scan Citizen.byAge (age > -10), records from the entries")
        let lowest = Int.min
        #expect(plan(#Predicate { $0.age > -lowest }).contains("filter {Comparison"))
        #expect(plan(#Predicate { $0.name != "Jane" || $0.age == 3 }, [.ascending(\.name), .descending(\.age)])
            == #"key scan Citizen (every record); filter name != "Jane" || age == 3; sorted by name, age descending in memory"#)
        #expect(plan(#Predicate { _ in true }, [.ascending(\.country)]) == "key scan Citizen (every record); sorted in key order")
        #expect(plan(#Predicate { $0.name == "Jane" || $0.tags.contains("x") || $0.country == "fr" })
            == #"union of (index scan Citizen.byNameAge (name = "Jane"), a point read per entry | index scan Citizen.byTag (tags = "x"), a point read per entry | key scan Citizen (country = "fr")), a point read per key"#)
        // A side that leaves a filter, or another conjunct, keeps the whole predicate as the filter.
        #expect(plan(#Predicate { ($0.name == "Jane" && $0.score > 1) || $0.age == 3 }, [.ascending(\.id)])
            == #"union of (index scan Citizen.byNameAge (name = "Jane"), a point read per entry | covering index scan Citizen.byAge (age = 3), records from the entries), a point read per key; filter (name == "Jane" && {Comparison<KeyPath<Variable<Citizen>, Double>, Value<Double>>}) || age == 3; sorted by id in memory"#)
        // A side that fixes nothing: no union.
        #expect(plan(#Predicate { $0.name == "Jane" || $0.score > 1 }).hasPrefix("key scan Citizen (every record); filter"))
    }

    @Test("while an index is being built, predicate queries read by the key with the same answers; paging begun then ends by the key",
          arguments: TestEngines.all)
    func duringBuild(kind: EngineKind) throws {
        var rng = SeededGenerator(seed: 0xB11D)
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try kind.configuration(path: dir.path).open(EngineOptions())
        defer { try? engine.close() }
        let store = try Store(engine: engine)
        var model: [String: Citizen] = [:]
        try store.withTransaction { ctx in
            for id in 0..<120 {
                let c = Self.randomCitizen(&rng, id: id)
                try ctx.insert(c)
                model[c.primaryKey] = c
            }
        }
        // A store whose type declares no index disables them; the next write declares them again,
        // to be built: every value index is write-only.
        let plain = PlainCitizen(Self.randomCitizen(&rng, id: 500)), written = Self.randomCitizen(&rng, id: 501)
        try Store(engine: engine).withTransaction { ctx in try ctx.insert(plain) }
        try store.withTransaction { ctx in try ctx.insert(written) }
        model = try store.withReadTransaction { ctx in try Citizen.select(in: ctx) }.reduce(into: [:]) { $0[$1.primaryKey] = $1 }
        #expect(throws: RecordError.indexNotReady(type: "Citizen", index: "byNameAge", state: .writeOnly)) {
            try store.withReadTransaction { ctx in try Citizen.byNameAge.count(in: ctx) }
        }
        let name = model.values.first!.name, tag = model.values.first { !$0.tags.isEmpty }!.tags[0]
        let predicates: [Predicate<Citizen>] = [
            #Predicate { $0.name == name }, #Predicate { $0.tags.contains(tag) }, #Predicate { $0.age > 17 },
            #Predicate { $0.nick == nil }, #Predicate { $0.name == name || $0.tags.contains(tag) || $0.country == "fr" },
        ]
        for predicate in predicates {
            let query = Citizen.query(where: predicate, sortedBy: [.ascending(\.age)])
            let expected = try model.values.filter { try predicate.evaluate($0) }.sorted { Self.inOrder($0, $1, [(0, false)]) }
            #expect(!query.explain().hasPrefix("key scan"), "\(query.explain())")
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                let now = try query.explain(in: ctx)
                #expect(now.hasPrefix("key scan Citizen (every record); filter"), "\(now)")
                #expect(try query.select(in: ctx).map(\.primaryKey) == expected.map(\.primaryKey), "\(query.explain())")
                #expect(try query.count(in: ctx) == expected.count)
                #expect(try query.primaryKeys(in: ctx).count == expected.count)
                var views = 0
                try query.forEachView(in: ctx) { _ in views += 1; return true }
                #expect(views == expected.count)
            }
            // A page read during the build, the build, then the rest: every record once, in order.
            var token: PageToken?
            var got: [String] = []
            var built = false
            repeat {
                let page = try store.withReadTransaction { ctx in try query.page(in: ctx, limit: 5, after: token) }
                got += page.records.map(\.primaryKey)
                token = page.next
                if !built {
                    try store.prepare(Citizen.self).wait()
                    built = true
                }
            } while token != nil
            #expect(got == expected.map(\.primaryKey), "\(query.explain())")
            // Built: the query reads its index again, with the same answer.
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                let now = try query.explain(in: ctx)
                #expect(now.hasPrefix(query.explain() + "; "), "\(now)")
                #expect(try query.select(in: ctx).map(\.primaryKey) == expected.map(\.primaryKey), "\(query.explain())")
            }
            // Undo the build for the next predicate.
            try Store(engine: engine).withTransaction { ctx in try ctx.insert(plain) }
            try store.withTransaction { ctx in try ctx.insert(written) }
        }
    }

    @Test("min and max are the first and last entries a query selects: per group, optional (nil first) and multi-valued, on every engine",
          arguments: TestEngines.all)
    func minAndMax(kind: EngineKind) throws {
        var rng = SeededGenerator(seed: 0x313)
        let citizens = (0..<150).map { Self.randomCitizen(&rng, id: $0) }
        // Primary-key order: country's bytes, then id.
        func keyBefore(_ a: Citizen, _ b: Citizen) -> Bool {
            a.country == b.country ? a.id < b.id : Array(a.country.utf8).lexicographicallyPrecedes(b.country.utf8)
        }
        func nickBefore(_ a: String?, _ b: String?) -> Bool {
            guard let b else { return false }
            guard let a else { return true }
            return Array(a.utf8).lexicographicallyPrecedes(b.utf8)
        }
        try withStore(kind) { store, _ in
            try store.withTransaction { ctx in for c in citizens { try ctx.insert(c) } }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                for name in Self.names {
                    let group = citizens.filter { $0.name == name }
                    let least = group.min { $0.age < $1.age || ($0.age == $1.age && keyBefore($0, $1)) }
                    let most = group.max { $0.age < $1.age || ($0.age == $1.age && keyBefore($0, $1)) }
                    #expect(try Citizen.byNameAge.min(in: ctx, .all.equal(name))?.primaryKey == least?.primaryKey, "min age of \(name)")
                    #expect(try Citizen.byNameAge.max(in: ctx, .all.equal(name))?.primaryKey == most?.primaryKey, "max age of \(name)")
                }
                let nicks = citizens.sorted { nickBefore($0.nick, $1.nick) || ($0.nick == $1.nick && keyBefore($0, $1)) }
                #expect(try Citizen.byNick.min(in: ctx)?.primaryKey == nicks.first?.primaryKey)
                #expect(try Citizen.byNick.min(in: ctx)?.nick == nil)
                #expect(try Citizen.byNick.max(in: ctx)?.primaryKey == nicks.last?.primaryKey)
                let tags = citizens.flatMap { c in c.tags.map { ($0, c) } }
                    .sorted { Array($0.0.utf8).lexicographicallyPrecedes($1.0.utf8) || ($0.0 == $1.0 && keyBefore($0.1, $1.1)) }
                #expect(try Citizen.byTag.min(in: ctx)?.primaryKey == tags.first?.1.primaryKey)
                #expect(try Citizen.byTag.max(in: ctx)?.primaryKey == tags.last?.1.primaryKey)
                #expect(try Citizen.byNameAge.min(in: ctx, .all.equal("nobody")) == nil)
            }
        }
    }

    @Test("an intersection reads a record only for the keys both ranges hold; a range too large is not read whole", arguments: TestEngines.all)
    func intersectionReads(kind: EngineKind) throws {
        try withCountingStore(kind) { engine, store in try intersectionReads(engine, store) }
    }

    func intersectionReads(_ engine: CountingEngine, _ store: Store) throws {
        // 300 named "Jane", 40 of them tagged "x"; 2,000 others tagged "y", 20 of them also "x".
        try store.withTransaction { ctx in
            for id in 0..<2_300 {
                let jane = id < 300
                let tags = jane ? (id < 40 ? ["x"] : []) : (id < 320 ? ["x", "y"] : ["y"])
                try ctx.insert(Citizen(country: "fr", id: id, name: jane ? "Jane" : "Ann", age: id % 90, nick: nil, tags: tags, score: 0, active: true))
            }
        }
        let both = Citizen.query(where: #Predicate { $0.name == "Jane" && $0.tags.contains("x") })
        #expect(both.explain().hasPrefix("intersection of"))
        engine.counts.reset()
        #expect(try store.withReadTransaction { ctx in try both.select(in: ctx).map(\.id) } == Array(0..<40))
        // The two ranges' keys (300 + 60), then a record read (a one-row scan) per key both hold,
        // plus the catalog's: not a record per Jane (300).
        #expect(engine.counts.rows + engine.counts.gets <= 300 + 60 + 40 + 8, "\(engine.counts.rows) rows, \(engine.counts.gets) point reads")
        // "Jane" and "y": the tag's range (2,000 keys) is over 4 x 300 + 64: not read whole, the
        // filter decides; the same answer.
        let janeY = Citizen.query(where: #Predicate { $0.name == "Jane" && $0.tags.contains("y") })
        engine.counts.reset()
        #expect(try store.withReadTransaction { ctx in try janeY.select(in: ctx) }.isEmpty)
        #expect(engine.counts.rows + engine.counts.gets <= 300 + 1_265 + 300 + 8, "\(engine.counts.rows) rows, \(engine.counts.gets) point reads")
    }

    @Test("an index whose multi-valued component a predicate leaves open is not read: a record with no element would be missed",
          arguments: TestEngines.all)
    func openMultiValuedComponent(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.withTransaction { ctx in
                try ctx.insert(Labelled(id: 1, name: "a", tags: []))
                try ctx.insert(Labelled(id: 2, name: "a", tags: ["x", "y"]))
                try ctx.insert(Labelled(id: 3, name: "b", tags: ["x"]))
            }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                let byName = Labelled.query(where: #Predicate { $0.name == "a" })
                #expect(byName.explain().hasPrefix("key scan"), "\(byName.explain())")
                #expect(try byName.select(in: ctx).map(\.id) == [1, 2])
                #expect(try byName.count(in: ctx) == 2)
                let tagged = Labelled.query(where: #Predicate { $0.name == "a" && $0.tags.contains("y") })
                #expect(tagged.explain().hasPrefix("index scan Labelled.byNameTag"), "\(tagged.explain())")
                #expect(try tagged.select(in: ctx).map(\.id) == [2])
            }
        }
    }

    @Test("explain(in:) counts the range's rows up to 1,000", arguments: [TestEngines.all[0]])
    func explainCountsRows(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.withTransaction { ctx in
                for id in 0..<1_005 {
                    try ctx.insert(Citizen(country: id < 3 ? "de" : "fr", id: id, name: "n\(id % 7)", age: id, nick: nil, tags: [], score: 0, active: true))
                }
            }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                #expect(try Citizen.query(where: #Predicate { $0.country == "de" }).explain(in: ctx) == #"key scan Citizen (country = "de"); 3 rows in the range"#)
                #expect(try Citizen.query(where: #Predicate { $0.country == "fr" }).explain(in: ctx) == #"key scan Citizen (country = "fr"); over 1000 rows in the range"#)
                #expect(try Citizen.query(where: #Predicate { $0.age >= 1_000 && $0.active }).explain(in: ctx)
                    == "covering index scan Citizen.byAge (age >= 1000), records from the entries; filter active == true; 5 rows in the range")
                #expect(try Query<Citizen>(index: Citizen.byNameAge, .all.equal("n3")).explain(in: ctx)
                    == #"index scan Citizen.byNameAge (name = "n3"), a point read per entry; 144 rows in the range"#)
            }
        }
    }

    @Test("strings compare as the key orders them: NFC and NFD spellings are different values", arguments: TestEngines.all)
    func unicodeSemantics(kind: EngineKind) throws {
        let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
        #expect(nfc == nfd)  // Swift's String ==: canonical equivalence
        try withStore(kind) { store, _ in
            try store.withTransaction { (ctx: TransactionContext) throws in
                for (id, name) in [nfc, nfd, "cafe", "cafz"].enumerated() {
                    try ctx.insert(Citizen(country: "fr", id: id, name: name, age: 1, nick: nil, tags: [name], score: 0, active: true))
                }
            }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                // The same answer through the index, the tags index and a full scan.
                let byName = #Predicate<Citizen> { $0.name == "caf\u{E9}" }
                let byTag = #Predicate<Citizen> { $0.tags.contains("caf\u{E9}") }
                let byKeyAndName = #Predicate<Citizen> { $0.country == "fr" && $0.name == "cafe\u{301}" }
                let above = #Predicate<Citizen> { $0.name > "cafe" }
                #expect(try Citizen.select(in: ctx, where: byName).map(\.id) == [0])
                #expect(try Citizen.select(in: ctx, where: byTag).map(\.id) == [0])
                #expect(try Citizen.select(in: ctx, where: byKeyAndName).map(\.id) == [1])
                #expect(Citizen.query(where: byKeyAndName).explain().hasPrefix("key scan"))
                #expect(try Citizen.select(in: ctx, where: above, sortedBy: [.ascending(\.name)]).map(\.id) == [1, 3, 0])
            }
        }
    }
}


extension PredicateQueryTests {
    /// A predicate whose top-level `&&` fixes the leading components of the key or an index:
    /// an equality, then perhaps a range on the next component.
    static func leadingPredicate(_ v: Variable, _ choice: Int, _ rng: inout some RandomNumberGenerator) -> Expression {
        func path<T>(_ keyPath: KeyPath<Citizen, T> & Sendable) -> PredicateExpressions.KeyPath<Variable, T> {
            PredicateExpressions.KeyPath(root: v, keyPath: keyPath)
        }
        func and<L: StandardPredicateExpression<Bool>, R: StandardPredicateExpression<Bool>>(_ l: L, _ r: R) -> Expression {
            PredicateExpressions.Conjunction(lhs: l, rhs: r)
        }
        let name = names.randomElement(using: &rng)!
        let ops: [PredicateExpressions.ComparisonOperator] = [.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual]
        switch choice {
        case 0:
            let equal = PredicateExpressions.Equal(lhs: path(\.country), rhs: PredicateExpressions.Value(countries.randomElement(using: &rng)!))
            let range = PredicateExpressions.Comparison(lhs: path(\.id), rhs: PredicateExpressions.Value(Int.random(in: 0...60, using: &rng)),
                                                        op: ops.randomElement(using: &rng)!)
            return Bool.random(using: &rng) ? and(equal, range) : equal
        case 1:
            let equal = PredicateExpressions.Equal(lhs: path(\.name), rhs: PredicateExpressions.Value(name))
            let range = PredicateExpressions.Comparison(lhs: path(\.age), rhs: PredicateExpressions.Value(ages.randomElement(using: &rng)!),
                                                        op: ops.randomElement(using: &rng)!)
            return Bool.random(using: &rng) ? and(range, equal) : equal
        case 2: return PredicateExpressions.SequenceContains(sequence: path(\.tags), element: PredicateExpressions.Value(name))
        case 3: return PredicateExpressions.Equal(lhs: path(\.nick), rhs: PredicateExpressions.Value(Bool.random(using: &rng) ? nil : name))
        default:
            return PredicateExpressions.Comparison(lhs: path(\.age), rhs: PredicateExpressions.Value(ages.randomElement(using: &rng)!),
                                                   op: ops.randomElement(using: &rng)!)
        }
    }

    @Test("a predicate that fixes an index's or the key's leading fields reads no row it does not return", arguments: TestEngines.all)
    func readsOnlyWhatItReturns(kind: EngineKind) throws {
        try withCountingStore(kind) { engine, store in try readsOnlyWhatItReturns(engine, store) }
    }

    func readsOnlyWhatItReturns(_ engine: CountingEngine, _ store: Store) throws {
        var rng = SeededGenerator(seed: 7)
        try store.withTransaction { ctx in
            for id in 0..<400 { try ctx.insert(Self.randomCitizen(&rng, id: id)) }
        }
        // What a read transaction reads before any row of a query: its first use of the type
        // reads the catalog. Measured with a query that returns nothing.
        engine.counts.reset()
        let nobody = #Predicate<Citizen> { $0.age == 12_345 }
        #expect(try store.withReadTransaction { ctx in try Citizen.count(in: ctx, where: nobody) } == 0)
        let (catalogRows, catalogPoints) = (engine.counts.rows, engine.counts.gets)
        #expect(catalogRows + catalogPoints <= 8)
        var kinds = Set<String>()
        for round in 0..<150 {
            let choice = round % 5
            var seedRNG = SeededGenerator(seed: rng.next())
            let predicate = Predicate<Citizen> { v in Self.leadingPredicate(v, choice, &seedRNG) }
            let sort: [SortField<Citizen>] = choice == 1 && Bool.random(using: &rng) ? [.descending(\.age)] : []
            let query = Citizen.query(where: predicate, sortedBy: sort)
            #expect(!query.explain().contains("filter") && !query.explain().contains("in memory"), "\(query.explain())")
            kinds.insert(query.explain().components(separatedBy: " (").first ?? "")
            engine.counts.reset()
            let returned = try store.withReadTransaction { ctx in try query.select(in: ctx).count }
            let read = (scanned: engine.counts.rows, points: engine.counts.gets)
            // A range's end is found by reading one row past it (an engine may, at each end).
            #expect(read.scanned <= catalogRows + returned + 2, "\(query.explain()): \(read.scanned) rows scanned for \(returned)")
            let pointReads = query.explain().contains("a point read per entry") ? returned : 0
            #expect(read.points <= catalogPoints + pointReads, "\(query.explain()): \(read.points) point reads for \(returned)")
        }
        #expect(kinds == ["key scan Citizen", "index scan Citizen.byNameAge", "index scan Citizen.byTag", "index scan Citizen.byNick",
                          "covering index scan Citizen.byAge"])
    }
}

/// A store on `kind` whose engine counts the rows and point reads it serves.
func withCountingStore(_ kind: EngineKind, _ body: (CountingEngine, Store) throws -> Void) throws {
    let dir = TemporaryDirectory()
    defer { dir.cleanup() }
    let engine = CountingEngine(try kind.open(dir.path))
    let store = try Store(engine: engine)
    defer { try? store.close() }
    try body(engine, store)
}
