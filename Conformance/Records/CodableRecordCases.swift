import Foundation
import StrataConformance
import StrataKeyCodec
import StrataRecords

/// A plain `Codable` model with a property of every shape `Codable` has: optionals, nested
/// structs, enums with associated values (nested containers), sets, dictionaries, nested arrays
/// of optionals, Data, Date, every integer width.
struct CodableBook: CodableRecord, Equatable, Sendable {
    enum Binding: Codable, Equatable, Sendable {
        case paperback
        case hardcover(pages: Int)
        case signed(String, year: Int16)
    }
    struct Dimensions: Codable, Equatable, Sendable {
        var width: Double
        var height: Float
    }
    var id: Int
    var title: String
    var authors: [String]
    var isbn: String?
    var published: Date
    var rating: Double
    var copies: UInt8
    var balance: Int64
    var tags: Set<String>
    var cover: Data
    var binding: Binding
    var dimensions: Dimensions?
    var shelves: [String: Int]
    var grid: [[Int32?]]
    var available: Bool

    /// A book whose every property follows from `id` and `seed`.
    static func make(_ id: Int, seed: Int = 0) -> CodableBook {
        let n = id &* 7919 &+ seed
        let bindings: [Binding] = [.paperback, .hardcover(pages: 100 + n % 900), .signed("author \(n % 13)", year: Int16(1900 + n % 120))]
        return CodableBook(
            id: id, title: "Title \(n) \u{e9}\u{1F4D6}", authors: (0..<(n % 4)).map { "Author \($0 + n)" },
            isbn: n % 3 == 0 ? nil : "978-\(n)", published: Date(timeIntervalSince1970: Double(n) * 86_400.5),
            rating: Double(n % 50) / 10 - 2.5, copies: UInt8(truncatingIfNeeded: n), balance: n % 2 == 0 ? Int64.min + Int64(n) : Int64(n) << 40,
            tags: Set((0..<(n % 3)).map { "tag\($0)" }), cover: Data((0..<(n % 40)).map { UInt8(truncatingIfNeeded: $0 &* n) }),
            binding: bindings[n % 3], dimensions: n % 5 == 0 ? nil : Dimensions(width: Double(n) / 3, height: Float(n % 100) / 7),
            shelves: Dictionary(uniqueKeysWithValues: (0..<(n % 3)).map { ("shelf \($0)", $0 * n) }),
            grid: (0..<(n % 3)).map { row in (0..<3).map { column in (row + column + n) % 4 == 0 ? nil : Int32(row * column - n % 100) } },
            available: n % 2 == 1)
    }
}

/// A Codable record keyed by a string, stored as JSON.
struct CodableNote: CodableRecord, Equatable, Sendable {
    var id: String
    var text: String
    static var valueFormat: CodableValueFormat { .json }
}

/// A Codable record keyed by a UUID, stored as a property list.
struct CodableTicket: CodableRecord, Equatable, Sendable {
    var id: UUID
    var seats: [Int]
    static var valueFormat: CodableValueFormat { .propertyList }
}

/// A Codable record with typed key-path indexes of each kind, for the differential case.
struct CodableMember: CodableRecord, Equatable, Sendable {
    var id: Int
    var email: String
    var city: String
    var tags: [String]
    var score: Double?

    static let city = FieldIndex("city", \CodableMember.city)
    static let email = UniqueIndex("email", \CodableMember.email, covering: true)
    static let tag = EachIndex("tag", \CodableMember.tags)
    static let indexes = [city.index, email.index, tag.index]
}

/// Plain `Codable` records (``CodableRecord``): every shape of value round-trips in every value
/// format, and the typed queries by `id` find what the key order says.
enum CodableRecordCases {
    static let all: [ConformanceCase] = differential + [
        ConformanceCase("codable", "a Codable record of every shape round-trips; fetch, exists, select, count, query, replace, remove and delete by a typed id") { ctx in
            let store = try ctx.recordStore()
            let books = (0..<120).map { CodableBook.make($0) }
            var shuffled = books
            var generator = SeededRandom(seed: 7)
            shuffled.shuffle(using: &generator)
            try store.withTransaction { tx in for book in shuffled { try tx.insert(book) } }
            try store.withReadTransaction { tx in
                try expectSameList(try CodableBook.select(in: tx), books, "every book, in id order")
                try expectEqual(try CodableBook.fetch(in: tx, id: 42), books[42], "fetch(id: 42)")
                try expectEqual(try CodableBook.fetch(in: tx, id: 500), nil, "fetch(id: 500), never stored")
                try expectTrue(try CodableBook.exists(in: tx, id: 0), "exists(id: 0)")
                try expectTrue(try !CodableBook.exists(in: tx, id: -1), "exists(id: -1)")
                try expectSameList(try CodableBook.select(in: tx, id: .range(10..<20)), Array(books[10..<20]), "select(id: 10..<20)")
                try expectSameList(try CodableBook.select(in: tx, id: .lessThan(5)), books[0..<5].reversed(), "select(id: < 5), nearest first")
                try expectSameList(try CodableBook.select(in: tx, limit: 3, order: .descending, id: .greaterThan(100)),
                                   [books[119], books[118], books[117]], "select(limit: 3, descending, id: > 100)")
                try expectSameList(try CodableBook.select(in: tx, id: .oneOf([7, 3, 7, 999])), [books[3], books[7]], "select(id: oneOf)")
                try expectEqual(try CodableBook.count(in: tx, id: .greaterThanOrEqual(90)), 30, "count(id: >= 90)")
                let page = try CodableBook.query(id: .greaterThanOrEqual(100)).page(in: tx, limit: 15)
                try expectSameList(page.records, Array(books[100..<115]), "a page of query(id: >= 100)")
            }
            let replaced = CodableBook.make(5, seed: 1)
            try store.withTransaction { tx in
                try expectEqual(try tx.replace(replaced), books[5], "replace returns the record it replaced")
                try expectEqual(try tx.replace(CodableBook.make(500)), nil, "replace on a free key returns nil")
                try expectEqual(try CodableBook.remove(in: tx, id: 500), CodableBook.make(500), "remove returns the record")
                try expectEqual(try CodableBook.remove(in: tx, id: 500), nil, "remove of an absent id returns nil")
                try expectTrue(try CodableBook.delete(in: tx, id: 3), "delete(id: 3)")
                try expectTrue(try !CodableBook.delete(in: tx, id: 3), "delete(id: 3) again")
            }
            try store.withReadTransaction { tx in
                try expectEqual(try CodableBook.fetch(in: tx, id: 5), replaced, "book 5 replaced")
                try expectEqual(try CodableBook.fetch(in: tx, id: 3), nil, "book 3 deleted")
                try expectEqual(try CodableBook.count(in: tx), 119, "books left")
            }
        },

        ConformanceCase("codable", "JSON and property-list values round-trip; String and UUID ids sort in key order") { ctx in
            let store = try ctx.recordStore()
            let notes = ["b", "a", "", "ab", "\u{0}x", "zz"].map { CodableNote(id: $0, text: "note \($0)") }
            var generator = SeededRandom(seed: 3)
            let tickets = (0..<20).map { i in
                CodableTicket(id: UUID(uuid: (UInt8(i * 37 % 256), UInt8(generator.next() % 256), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, UInt8(i))),
                              seats: (0..<(i % 5)).map { $0 * i })
            }
            try store.withTransaction { tx in
                for note in notes { try tx.insert(note) }
                for ticket in tickets { try tx.insert(ticket) }
            }
            try store.withReadTransaction { tx in
                try expectSameList(try CodableNote.select(in: tx), notes.sorted { Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8)) },
                                   "notes in key order (UTF-8 bytes)")
                try expectSameList(try CodableNote.select(in: tx, id: .range("a"..<"b")), [notes[1], notes[3]], "notes a..<b")
                try expectEqual(try CodableNote.fetch(in: tx, id: "\u{0}x"), notes[4], "a note whose id starts with NUL")
                let byKey = tickets.sorted { KeyCodec.encode($0.id).lexicographicallyPrecedes(KeyCodec.encode($1.id)) }
                try expectSameList(try CodableTicket.select(in: tx), byKey, "tickets in key order")
                try expectEqual(try CodableTicket.fetch(in: tx, id: tickets[9].id), tickets[9], "a ticket by its UUID")
            }
        },
    ]

    static let differential: [ConformanceCase] = [
        ConformanceCase("codable", "random logs of replace, remove, insert, delete and aborted transactions keep key-path indexes equal to a model; replace and remove return the model's record") { ctx in
            let store = try ctx.recordStore()
            var model: [Int: CodableMember] = [:]
            // Values the key encoding escapes (00, 01) and empty ones, as the index cases use.
            let cities = ["A", "A\0", "A\0B", "", "\0"], tags = ["x", "x\0", "", "\u{1}"]
            try randomLog(store, seed: 0xC0DA_B1E5, steps: 40, model: &model) { tx, working, random, step in
                let id = Int.random(in: 0..<30, using: &random)
                let operation = Int.random(in: 0..<10, using: &random)
                switch operation {
                case 0..<6:
                    let m = CodableMember(id: id, email: "e\(Int.random(in: 0..<40, using: &random))", city: cities.randomElement(using: &random)!,
                                          tags: (0..<Int.random(in: 0..<3, using: &random)).map { _ in tags.randomElement(using: &random)! },
                                          score: Bool.random(using: &random) ? nil : Double(Int.random(in: -5...5, using: &random)) / 2)
                    let clash = working.values.contains { $0.id != id && $0.email == m.email }
                    do {
                        if operation < 3 {
                            try expectEqual(try tx.replace(m), working[id], "step \(step): replace \(id) returns the old record")
                        } else {
                            try tx.insert(m)
                        }
                        try expectTrue(!clash, "step \(step): a clashing write of \(id) was accepted")
                        working[id] = m
                    } catch RecordError.uniqueViolation {
                        try expectTrue(clash, "step \(step): a unique violation for \(id) with no clash")
                    }
                case 6..<8:
                    try expectEqual(try CodableMember.remove(in: tx, id: id), working[id], "step \(step): remove \(id)")
                    working[id] = nil
                default:
                    try expectEqual(try CodableMember.delete(in: tx, id: id), working[id] != nil, "step \(step): delete \(id)")
                    working[id] = nil
                }
            } check: { model, step in
                let results = try store.withReadTransaction { tx in try tx.verifyIndexes(CodableMember.self) }
                for result in results {
                    try expectTrue(result.isExact, "step \(step): index \(result.index): \(result.missingCount) missing, \(result.staleCount) stale")
                }
                try store.withReadTransaction { tx in
                    let members = model.values.sorted { $0.id < $1.id }
                    try expectSameList(try CodableMember.select(in: tx), members, "step \(step): every record")
                    for city in cities {
                        try expectSameList(try CodableMember.city.select(in: tx, city), members.filter { $0.city == city }, "step \(step): city \(city.debugDescription)")
                        try expectEqual(try CodableMember.city.count(in: tx, city), members.filter { $0.city == city }.count, "step \(step): count city")
                    }
                    for tag in tags {
                        try expectSameList(try CodableMember.tag.select(in: tx, tag), members.filter { $0.tags.contains(tag) },
                                           "step \(step): tag \(tag.debugDescription)")
                    }
                    for member in members {
                        try expectEqual(try CodableMember.email.fetch(in: tx, member.email), member, "step \(step): fetch \(member.email)")
                    }
                    let emails = members.map(\.email).sorted()
                    try expectSameList(try CodableMember.email.select(in: tx, .range("e1"..<"e3")).map(\.email), emails.filter { $0 >= "e1" && $0 < "e3" },
                                       "step \(step): emails e1..<e3")
                }
            }
        },
    ]
}
