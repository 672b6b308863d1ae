import Foundation
import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataRecords

/// A resident of a city: a composite key, and value indexes of every kind the planner chooses
/// among (composite, multi-valued, covering, on an optional).
struct Resident: Record, Equatable {
    var city: String
    var id: Int
    var name: String
    var age: Int
    var nick: String?
    var tags: [String]
    var score: Double

    static let recordType = RecordType(
        keyspace: "Resident", key: [("city", String.self), ("id", Int.self)],
        fields: [("name", String.fieldFormat), ("age", Int.fieldFormat), ("nick", String?.fieldFormat), ("tags", [String].fieldFormat),
                 ("score", Double.fieldFormat)])
    static let byNameAge = RecordIndex<Resident>("byNameAge", .field("name", \.name), .field("age", \.age))
    static let byTag = RecordIndex<Resident>("byTag", .each("tags", \.tags))
    static let byAge = RecordIndex<Resident>("byAge", .field("age", \.age), covering: true)
    static let byNick = RecordIndex<Resident>("byNick", .field("nick", \.nick))
    static let indexes = [byNameAge, byTag, byAge, byNick]
    static var storedKeyPaths: [String: PartialKeyPath<Resident>] {
        ["city": \.city, "id": \.id, "name": \.name, "age": \.age, "nick": \.nick, "tags": \.tags, "score": \.score]
    }

    init(city: String, id: Int, name: String, age: Int, nick: String?, tags: [String], score: Double) {
        (self.city, self.id, self.name, self.age, self.nick, self.tags, self.score) = (city, id, name, age, nick, tags, score)
    }
    func writeKey(to key: inout KeyWriter) {
        key.append(city)
        key.append(id)
    }
    func writeFields(to fields: inout FieldWriter) {
        fields.write(name)
        fields.write(age)
        fields.write(nick)
        fields.write(tags)
        fields.write(score)
    }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        city = try key.read()
        id = try key.read()
        name = try fields.read()
        age = try fields.read()
        nick = try fields.read()
        tags = try fields.read()
        score = try fields.read()
    }

    /// The primary key, for messages and models.
    var label: String { "\(city)/\(id)" }

    static let names = ["", "a", "a\u{0}", "ab", "Jane", "Joan", "Zoë", "Łódź", "b"]
    static let cities = ["", "Paris", "Paris\u{0}", "Lyon", "Évry"]
    static let ages = [-7, 0, 1, 17, 30, 31, 45, 90, Int.min, Int.max]

    static func random(id: Int, _ random: inout SeededRandom) -> Resident {
        Resident(city: cities.randomElement(using: &random)!, id: id, name: names.randomElement(using: &random)!,
                 age: ages.randomElement(using: &random)!, nick: Bool.random(using: &random) ? nil : names.randomElement(using: &random)!,
                 tags: (0..<Int.random(in: 0...3, using: &random)).map { _ in names.randomElement(using: &random)! },
                 score: [-1.5, 0, 2.5, .infinity].randomElement(using: &random)!)
    }
}

/// `Resident`'s keyspace written by a type that declares no index: its first write disables them.
struct UnindexedResident: Record {
    var resident: Resident
    static var recordType: RecordType { Resident.recordType }
    init(_ resident: Resident) { self.resident = resident }
    func writeKey(to key: inout KeyWriter) { resident.writeKey(to: &key) }
    func writeFields(to fields: inout FieldWriter) { resident.writeFields(to: &fields) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { resident = try Resident(key: &key, fields: &fields) }
}

/// Predicate queries (``Query/init(where:sortedBy:)``) on the engine: every path the planner takes
/// (a key range, an index's equalities and range, a covering index, a multi-valued `contains`, an
/// `in` list, a union, an intersection, a full scan with a filter, a sort from index order or in memory, a query
/// whose index is being built) gives exactly the records Foundation's `evaluate` accepts, in the
/// order asked, through select, count, keys, views and pages.
enum PlannerCases {
    typealias R = Resident

    /// A sort by age or name, in a direction: the model's view of a ``SortField``.
    struct Sorting {
        var byAge: Bool
        var descending: Bool
        static func age(_ descending: Bool = false) -> Sorting { Sorting(byAge: true, descending: descending) }
        static func name(_ descending: Bool = false) -> Sorting { Sorting(byAge: false, descending: descending) }
        var field: SortField<R> {
            byAge ? (descending ? .descending(\.age) : .ascending(\.age)) : (descending ? .descending(\.name) : .ascending(\.name))
        }
    }

    static let all: [ConformanceCase] = [
        ConformanceCase("planner", "every plan kind answers as Foundation's evaluate over every record, in both orders, through every read") { ctx in
            let store = try ctx.recordStore()
            var random = SeededRandom(seed: 0x91A7)
            let residents = (0..<80).map { R.random(id: $0 % 40, &random) }
            try store.withTransaction { tx in for r in residents { try tx.insert(r) } }
            let model = try store.withReadTransaction { tx in try R.select(in: tx) }
            try expectEqual(model.count, Set(residents.map(\.label)).count, "records stored")
            let paths: [(String, Predicate<R>, [Sorting])] = [
                ("key scan Resident (city = \"Paris\", id > 10)", #Predicate { $0.city == "Paris" && $0.id > 10 }, []),
                ("index scan Resident.byNameAge (name = \"Jane\")", #Predicate { $0.name == "Jane" }, []),
                ("index scan Resident.byNameAge (name = \"a\", age >= 0 and age < 90)", #Predicate { $0.name == "a" && $0.age >= 0 && $0.age < 90 }, []),
                ("covering index scan Resident.byAge (age > 17)", #Predicate { $0.age > 17 && $0.score < 2 }, [.age(true)]),
                ("index scan Resident.byTag (tags = \"Zoë\")", #Predicate { $0.tags.contains("Zoë") }, []),
                ("index scan Resident.byNameAge (name in", #Predicate { ["Joan", "b", "a\u{0}"].contains($0.name) }, [.name()]),
                ("index scan Resident.byNick (nick = null)", #Predicate { $0.nick == nil && $0.age != 0 }, []),
                ("union of", #Predicate { $0.name == "Jane" || $0.tags.contains("ab") || $0.city == "Lyon" }, []),
                ("intersection of (index scan Resident.byNameAge (name = \"a\")", #Predicate { $0.name == "a" && $0.tags.contains("b") && $0.nick != nil }, []),
                ("key scan Resident (every record); filter", #Predicate { $0.score > 0 || $0.nick != "b" }, [.name(), .age(true)]),
                ("key scan Resident (every record); filter", #Predicate { $0.name.count > 1 && $0.score != 1 }, []),
                ("covering index scan Resident.byAge (age > -10)", #Predicate { !($0.name < "J") && $0.age > -10 }, []),
            ]
            for (plan, predicate, sort) in paths {
                let query = R.query(where: predicate, sortedBy: sort.map(\.field))
                try expectTrue(query.explain().hasPrefix(plan), "the plan of \(plan)…: \(query.explain())")
                try checkQuery(store, query, predicate, sort, model: model, pages: true)
            }
        },
        ConformanceCase("planner", "80 random predicates, sorts and limits after a random log: the answers Foundation's evaluate gives") { ctx in
            let store = try ctx.recordStore()
            var random = SeededRandom(seed: 0x3AD0)
            try store.withTransaction { tx in
                for step in 0..<120 {
                    let id = Int.random(in: 0..<50, using: &random)
                    if step % 5 == 4 { try tx.delete(R.random(id: id, &random)) } else { try tx.insert(R.random(id: id, &random)) }
                }
            }
            let model = try store.withReadTransaction { tx in try R.select(in: tx) }
            var kinds = Set<String>()
            var queries: [(Query<R>, Predicate<R>, [Sorting])] = []
            for round in 0..<80 {
                var seed = SeededRandom(seed: random.next())
                let depth = Int.random(in: 0...2, using: &random)
                let predicate = Predicate<R> { v in randomExpression(v, &seed, depth: depth) }
                let sort: [Sorting] = [[], [.age()], [.name(true)], [.name(), .age()]][round % 4]
                let query = R.query(where: predicate, sortedBy: sort.map(\.field))
                kinds.insert(query.explain().components(separatedBy: " (").first ?? "")
                queries.append((query, predicate, sort))
            }
            // Every query's select in one transaction (on etcd a transaction's first read costs requests of its own) ...
            try store.withReadTransaction { tx in
                for (query, predicate, sort) in queries {
                    let got = try query.select(in: tx).map(\.label)
                    let wanted = try expectedLabels(query: predicate, sort, model, descending: false)
                    if sort.isEmpty {
                        try expectEqual(Set(got), Set(wanted), "select of \(query.explain())")
                        try expectEqual(got.count, wanted.count, "select of \(query.explain()): how many")
                    } else {
                        try expectSameList(got, wanted, "select of \(query.explain())")
                    }
                }
            }
            // ... and every tenth through every read.
            for (query, predicate, sort) in queries.enumerated().filter({ $0.offset % 10 == 0 }).map(\.element) {
                try checkQuery(store, query, predicate, sort, model: model, pages: true)
            }
            for kind in ["key scan Resident", "index scan Resident.byNameAge", "index scan Resident.byTag", "covering index scan Resident.byAge",
                         "index scan Resident.byNick", "union of", "intersection of"] {
                try expectTrue(kinds.contains(kind), "the generator reached \(kind) (reached \(kinds.sorted()))")
            }
        },
        ConformanceCase("planner", "while an index is being built, predicate queries read by the key, with the same answers; paging begun then ends as it began") { ctx in
            let engine = try ctx.open()
            let store = try CaseStores.store(on: engine)
            var random = SeededRandom(seed: 0xB17D)
            try store.withTransaction { tx in for id in 0..<60 { try tx.insert(R.random(id: id, &random)) } }
            // A store whose type declares no index disables them; the next write declares them again, to be built.
            let other = R.random(id: 100, &random)
            try CaseStores.store(on: engine).withTransaction { tx in try tx.insert(UnindexedResident(other)) }
            try store.withTransaction { tx in try tx.insert(other) }
            let model = try store.withReadTransaction { tx in try R.select(in: tx) }
            let query = R.query(where: #Predicate { $0.age >= 0 && $0.name != "b" }, sortedBy: [Sorting.age().field])
            try expectTrue(query.explain().hasPrefix("covering index scan Resident.byAge"), "the plan once built: \(query.explain())")
            try store.withReadTransaction { tx in
                let now = try query.explain(in: tx)
                try expectTrue(now.hasPrefix("key scan Resident (every record); filter"), "the plan while building: \(now)")
            }
            try checkQuery(store, query, #Predicate { $0.age >= 0 && $0.name != "b" }, [.age()], model: model, pages: false)
            let expected = try expectedLabels(query: #Predicate { $0.age >= 0 && $0.name != "b" }, [.age()], model, descending: false)
            var (token, paged, built): (PageToken?, [String], Bool) = (nil, [], false)
            repeat {
                let page = try store.withReadTransaction { tx in try query.page(in: tx, limit: 6, after: token) }
                paged += page.records.map(\.label)
                token = page.next
                if !built {
                    try store.prepare(R.self).wait()
                    built = true
                }
            } while token != nil
            try expectSameList(paged, expected, "pages begun while the index was being built")
            try store.withReadTransaction { tx in
                let now = try query.explain(in: tx)
                try expectTrue(now.hasPrefix(query.explain()), "the plan once built: \(now)")
            }
            try checkQuery(store, query, #Predicate { $0.age >= 0 && $0.name != "b" }, [.age()], model: model, pages: true)
        },
    ]

    /// The labels `predicate` accepts in `model`, sorted as the query sorts (ties by primary key in
    /// the first sort field's direction), reversed for a descending read.
    static func expectedLabels(query predicate: Predicate<R>, _ sort: [Sorting], _ model: [R], descending: Bool) throws -> [String] {
        let sorted = try model.filter { try predicate.evaluate($0) }.sorted { inOrder($0, $1, sort) }
        return (descending ? sorted.reversed() : sorted).map(\.label)
    }

    /// Whether `a` comes before `b`: by `sort` (strings by their UTF-8 bytes, as keys order them),
    /// then by primary key in the first sort field's direction.
    static func inOrder(_ a: R, _ b: R, _ sort: [Sorting]) -> Bool {
        func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
        func compare<T: Comparable>(_ x: T, _ y: T) -> Int { x < y ? -1 : x > y ? 1 : 0 }
        func compare(_ x: [UInt8], _ y: [UInt8]) -> Int { x.lexicographicallyPrecedes(y) ? -1 : x == y ? 0 : 1 }
        for field in sort {
            var c = field.byAge ? compare(a.age, b.age) : compare(bytes(a.name), bytes(b.name))
            if field.descending { c = -c }
            if c != 0 { return c < 0 }
        }
        let c = a.city == b.city ? compare(a.id, b.id) : compare(bytes(a.city), bytes(b.city))
        return sort.first?.descending == true ? c > 0 : c < 0
    }

    /// The query's answers against the model: select (both orders, a limit), count, primary keys,
    /// views, and with `pages`, pages of 4 continued by tokens.
    static func checkQuery(_ store: Store, _ query: Query<R>, _ predicate: Predicate<R>, _ sort: [Sorting], model: [R], pages: Bool) throws {
        let plan = query.explain()
        let ascending = try expectedLabels(query: predicate, sort, model, descending: false)
        let descending = try expectedLabels(query: predicate, sort, model, descending: true)
        // Without a sort the order is the range's: compare sets, then check the two orders mirror.
        func same(_ got: [String], _ wanted: [String], _ what: String) throws {
            if sort.isEmpty {
                try expectEqual(got.count, wanted.count, "\(what) of \(plan): how many")
                try expectEqual(Set(got), Set(wanted), "\(what) of \(plan)")
            } else {
                try expectSameList(got, wanted, "\(what) of \(plan)")
            }
        }
        try store.withReadTransaction { tx in
            let up = try query.select(in: tx, order: .ascending).map(\.label)
            try same(up, ascending, "select")
            let down = try query.select(in: tx, order: .descending).map(\.label)
            try same(down, descending, "select descending")
            try expectSameList(down, up.reversed(), "the descending read of \(plan) is the ascending one reversed")
            let limited = try query.select(in: tx, limit: 3).map(\.label)
            try expectSameList(limited, Array(up.prefix(3)), "select with limit 3 of \(plan)")
            try expectEqual(try query.count(in: tx), ascending.count, "count of \(plan)")
            try expectEqual(try query.primaryKeys(in: tx).count, ascending.count, "primary keys of \(plan)")
            var viewed: [String] = []
            try query.forEachView(in: tx) { view in
                viewed.append(try view.record().label)
                return true
            }
            try same(viewed, ascending, "views")
        }
        guard pages else { return }
        var (token, paged): (PageToken?, [String]) = (nil, [])
        repeat {
            let page = try store.withReadTransaction { tx in try query.page(in: tx, limit: 4, after: token) }
            paged += page.records.map(\.label)
            token = page.next
        } while token != nil
        try same(paged, ascending, "pages")
    }

    typealias Variable = PredicateExpressions.Variable<R>
    typealias Expression = any StandardPredicateExpression<Bool>

    /// A random predicate over `Resident`, as `#Predicate` builds them: comparisons of every
    /// field with values, `in` lists, `contains`, `nil`, `&&`, `||`, `!`.
    static func randomExpression(_ v: Variable, _ random: inout SeededRandom, depth: Int) -> Expression {
        func path<T>(_ keyPath: KeyPath<R, T> & Sendable) -> PredicateExpressions.KeyPath<Variable, T> {
            PredicateExpressions.KeyPath(root: v, keyPath: keyPath)
        }
        func compare<T: Comparable & Codable & Sendable>(_ keyPath: KeyPath<R, T> & Sendable, _ value: T) -> Expression {
            let (lhs, rhs) = (path(keyPath), PredicateExpressions.Value(value))
            switch Int.random(in: 0..<6, using: &random) {
            case 0: return PredicateExpressions.Equal(lhs: lhs, rhs: rhs)
            case 1: return PredicateExpressions.NotEqual(lhs: lhs, rhs: rhs)
            case 2: return PredicateExpressions.Comparison(lhs: rhs, rhs: lhs, op: .lessThan)
            case 3: return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .lessThanOrEqual)
            case 4: return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .greaterThan)
            default: return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .greaterThanOrEqual)
            }
        }
        if depth > 0 && Int.random(in: 0..<3, using: &random) > 0 {
            let l = randomExpression(v, &random, depth: depth - 1)
            let r = randomExpression(v, &random, depth: depth - 1)
            // Generic helpers open the existentials.
            func and<L: StandardPredicateExpression<Bool>, M: StandardPredicateExpression<Bool>>(_ l: L, _ r: M) -> Expression {
                PredicateExpressions.Conjunction(lhs: l, rhs: r)
            }
            func or<L: StandardPredicateExpression<Bool>, M: StandardPredicateExpression<Bool>>(_ l: L, _ r: M) -> Expression {
                PredicateExpressions.Disjunction(lhs: l, rhs: r)
            }
            func not<E: StandardPredicateExpression<Bool>>(_ e: E) -> Expression { PredicateExpressions.Negation(e) }
            switch Int.random(in: 0..<5, using: &random) {
            case 0, 1, 2: return and(l, r)
            case 3: return or(l, r)
            default: return not(l)
            }
        }
        let name = R.names.randomElement(using: &random)!
        switch Int.random(in: 0..<10, using: &random) {
        case 0, 1: return compare(\.age, R.ages.randomElement(using: &random)!)
        case 2, 3: return compare(\.name, name)
        case 4: return compare(\.city, R.cities.randomElement(using: &random)!)
        case 5: return compare(\.id, Int.random(in: -2...55, using: &random))
        case 6:
            let value: String? = Bool.random(using: &random) ? nil : name
            return PredicateExpressions.Equal(lhs: path(\.nick), rhs: PredicateExpressions.Value(value))
        case 7: return PredicateExpressions.SequenceContains(sequence: path(\.tags), element: PredicateExpressions.Value(name))
        case 8:
            let list = (0..<Int.random(in: 0...3, using: &random)).map { _ in R.names.randomElement(using: &random)! }
            return PredicateExpressions.SequenceContains(sequence: PredicateExpressions.Value(list), element: path(\.name))
        default: return compare(\.score, [-1.5, 0, 2.5].randomElement(using: &random)!)
        }
    }
}
