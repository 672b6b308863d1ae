import Foundation
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
import StrataRecords
import Synchronization
import Testing

/// A record that counts how often it is decoded, with fields a filter reads in place (a string,
/// an integer, an optional, an array of strings) and one it cannot (a `Double`).
struct Tally: Record, Sendable {
    var id: Int
    var name: String
    var age: Int
    var nick: String?
    var tags: [String]
    var score: Double

    static let decodes = Atomic<Int>(0)
    static let recordType = RecordType(
        keyspace: "Tally", key: [("id", Int.self)],
        fields: [("name", String.fieldFormat), ("age", Int.fieldFormat), ("nick", String?.fieldFormat), ("tags", [String].fieldFormat),
                 ("score", Double.fieldFormat)])
    static var storedKeyPaths: [String: PartialKeyPath<Tally>] {
        ["id": \.id, "name": \.name, "age": \.age, "nick": \.nick, "tags": \.tags, "score": \.score]
    }

    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) {
        fields.write(name)
        fields.write(age)
        fields.write(nick)
        fields.write(tags)
        fields.write(score)
    }
    init(id: Int, name: String, age: Int, nick: String?, tags: [String], score: Double) {
        (self.id, self.name, self.age, self.nick, self.tags, self.score) = (id, name, age, nick, tags, score)
    }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        Self.decodes.add(1, ordering: .relaxed)
        id = try key.read()
        name = try fields.read()
        age = try fields.read()
        nick = try fields.read()
        tags = try fields.read()
        score = try fields.read()
    }
}

@Suite("Filters read views in place: a rejected row is never decoded", .serialized)
struct ViewFilterTests {
    static let records = (0..<300).map(record)

    static func record(_ i: Int) -> Tally {
        let names = ["n\(i % 10)", "Łódź\0\(i % 3)", ""]
        let tags = (0..<(i % 4)).map { "t\(($0 + i) % 6)" }
        return Tally(id: i, name: names[i % 3], age: i % 50 - 25, nick: i % 4 == 0 ? nil : "k\(i % 7)", tags: tags, score: Double(i % 5) / 2)
    }

    /// Decodes while `body` runs.
    func decodes(_ body: () throws -> Void) rethrows -> Int {
        let before = Tally.decodes.load(ordering: .relaxed)
        try body()
        return Tally.decodes.load(ordering: .relaxed) - before
    }

    @Test("count, select, views and pages decode only what the filter cannot read in place", arguments: TestEngines.all)
    func decodesOnlyWhatMatches(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.withTransaction { ctx in for t in Self.records { try ctx.insert(t) } }
            // Each predicate, and the rows whose evaluation must decode the record (the Double's).
            let cases: [(Predicate<Tally>, (Tally) -> Bool)] = [
                (#Predicate { $0.name == "n1" && $0.age > -10 }, { _ in false }),
                (#Predicate { $0.tags.contains("t3") || $0.nick == nil }, { _ in false }),
                (#Predicate { $0.id > 40 && $0.nick != "k2" && !($0.age <= 0) }, { _ in false }),
                (#Predicate { ["k1", "k5"].contains($0.nick) }, { _ in false }),
                (#Predicate { $0.name >= "n5" && $0.name < "Ł" }, { _ in false }),
                (#Predicate { $0.score > 1.5 }, { _ in true }),
                (#Predicate { $0.name == "n4" && $0.score > 0.5 }, { $0.name == "n4" }),
            ]
            for (predicate, decoding) in cases {
                let query = Tally.query(where: predicate)
                let expected = try Self.records.filter { try predicate.evaluate($0) }.map(\.id)
                let reached = Self.records.filter(decoding).count
                // select decodes what matches (once) and what the filter decodes to decide.
                let selected = Set(expected).union(Self.records.filter(decoding).map(\.id)).count
                try store.withReadTransaction { (ctx: TransactionContext) throws in
                    var got: [Int] = []
                    #expect(try decodes { got = try query.select(in: ctx).map(\.id) } == selected, "\(query.explain())")
                    #expect(got == expected, "\(query.explain())")
                    var count = 0
                    #expect(try decodes { count = try query.count(in: ctx) } == reached, "\(query.explain())")
                    #expect(count == expected.count)
                    var viewed: [Int] = []
                    #expect(try decodes {
                        try query.forEachView(in: ctx) { view in
                            var key = view.keyReader()
                            viewed.append(try key.read(Int.self))
                            return true
                        }
                    } == reached, "\(query.explain())")
                    #expect(viewed == expected)
                    var paged: [Int] = []
                    var token: PageToken?
                    repeat {
                        let page = try query.page(in: ctx, limit: 16, after: token)
                        paged += page.records.map(\.id)
                        token = page.next
                    } while token != nil
                    #expect(paged == expected)
                    let sorted = try Tally.select(in: ctx, where: predicate, sortedBy: [.descending(\.age)], limit: 5)
                    let wanted = try Self.records.filter { try predicate.evaluate($0) }.sorted { ($0.age, $0.id) > ($1.age, $1.id) }.prefix(5)
                    #expect(sorted.map(\.id) == wanted.map(\.id))
                }
            }
        }
    }
}
