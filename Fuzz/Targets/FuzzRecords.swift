import FuzzSupport
import Foundation
import StrataEngine
import StrataKeyCodec
import StrataMemory
@testable import StrataRecords

/// The record types the store-level targets read: one hand-written `Record` with a field of
/// every format (a JSON one too), a composite key and an index of every kind, and one plain
/// `Codable` record with key-path indexes.
struct Item: Record, Equatable, Sendable {
    var shelf: String
    var number: Int
    var title: String
    var price: Double
    var count: UInt16
    var small: Int8
    var tags: [String]
    var sizes: Set<Int>
    var extra: [String: Int]
    var note: FieldTarget.Note
    var added: Date
    var serial: UUID
    var link: URL?
    var blob: Data
    var nickname: String?

    static let recordType = RecordType(
        keyspace: "Item", key: [("shelf", String.self), ("number", Int.self)],
        fields: [("title", String.fieldFormat), ("price", Double.fieldFormat), ("count", UInt16.fieldFormat),
                 ("small", Int8.fieldFormat), ("tags", [String].fieldFormat), ("sizes", Set<Int>.fieldFormat),
                 ("extra", [String: Int].fieldFormat), ("note", .json), ("added", Date.fieldFormat), ("serial", UUID.fieldFormat),
                 ("link", URL?.fieldFormat), ("blob", Data.fieldFormat), ("nickname", String?.fieldFormat)])
    static let bySerial = RecordIndex<Item>("bySerial", .field("serial", \.serial), unique: true)
    static let byTitleCount = RecordIndex<Item>("byTitleCount", .field("title", \.title), .field("count", \.count))
    static let byTag = RecordIndex<Item>("byTag", .each("tags", \.tags))
    static let byNickname = RecordIndex<Item>("byNickname", .field("nickname", \.nickname), covering: true)
    static let indexes = [bySerial, byTitleCount, byTag, byNickname]

    init(_ n: Int) {
        shelf = n % 3 == 0 ? "" : "shelf \(n % 2)\u{0}é"
        number = n * 17 - 40
        title = ["Dune", "Emma", "", "Ulysses"][n % 4]
        price = [1.5, -0.0, .infinity, 1e-300][n % 4]
        count = UInt16(n * 1_000 % 65_536)
        small = Int8(truncatingIfNeeded: -n)
        tags = Array(["a", "b", "a", "é"].prefix(n % 5))
        sizes = Set((0..<(n % 3)).map { $0 - 1 })
        extra = n % 2 == 0 ? [:] : ["x": n, "y": -n]
        note = FieldTarget.Note(title: "note \(n)", weight: n % 2 == 0 ? nil : 0.5, tags: ["t"], parts: ["p": [n]])
        added = Date(timeIntervalSinceReferenceDate: Double(n) * 86_400.5)
        serial = UUID(uuid: (UInt8(n), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
        link = n % 2 == 0 ? nil : URL(string: "https://example.com/\(n)")
        blob = Data((0..<UInt8(n % 7)).map { $0 })
        nickname = n % 3 == 1 ? nil : "nick\(n % 4)"
    }

    func writeKey(to key: inout KeyWriter) {
        key.append(shelf)
        key.append(number)
    }

    func writeFields(to fields: inout FieldWriter) {
        fields.write(title)
        fields.write(price)
        fields.write(count)
        fields.write(small)
        fields.write(tags)
        fields.write(sizes)
        fields.write(extra)
        fields.writeJSON(note)
        fields.write(added)
        fields.write(serial)
        fields.write(link)
        fields.write(blob)
        fields.write(nickname)
    }

    init(key: inout KeyReader, fields: inout FieldReader) throws {
        shelf = try key.read()
        number = try key.read()
        title = try fields.read()
        price = try fields.read()
        count = try fields.read()
        small = try fields.read()
        tags = try fields.read()
        sizes = try fields.read()
        extra = try fields.read()
        note = try fields.readJSON()
        added = try fields.read()
        serial = try fields.read()
        link = try fields.read()
        blob = try fields.read()
        nickname = try fields.read()
    }

    /// Equal, with NaN prices equal by their bits.
    func same(as other: Item) -> Bool {
        var (a, b) = (self, other)
        guard a.price.bitPattern == b.price.bitPattern, a.note.weight?.bitPattern == b.note.weight?.bitPattern else { return false }
        (a.price, b.price, a.note.weight, b.note.weight) = (0, 0, nil, nil)
        return a == b
    }
}

/// A plain Codable record with key-path indexes.
struct Volume: CodableRecord, Equatable, Sendable {
    var id: Int
    var title: String
    var authors: [String]
    var isbn: String
    var condition: CodableTarget.Condition

    static let title = FieldIndex("title", \Volume.title)
    static let author = EachIndex("author", \Volume.authors)
    static let isbn = UniqueIndex("isbn", \Volume.isbn, covering: true)
    static let indexes = [title.index, author.index, isbn.index]

    init(_ n: Int) {
        id = n * 3 - 7
        title = ["Dune", "Emma", "É"][n % 3]
        authors = Array(["Ann", "Bo", "Ann"].prefix(n % 4))
        isbn = "isbn-\(n)"
        condition = [.new, .used(grade: n), .damaged("torn", pages: [n, -n])][n % 3]
    }
}

/// A memory store holding `count` items and volumes, written through the record layer. Its
/// identity (7) and its change feed's (42) are fixed, so that tokens in the committed corpus
/// belong to the store every fuzzing process makes.
func seededStore(items count: Int, changeFeed: Bool = false) throws -> (MemoryEngine, Store) {
    let engine = MemoryEngine()
    _ = try Store(engine: engine)  // makes the store; the instance below reads the fixed identity
    try engine.write { tx in try tx.put(StoreIdentity.encode(7), forKey: SystemKey.identity) }
    let store = try Store(engine: engine)
    if changeFeed {
        try store.enableChangeFeed()
        try engine.write { tx in try tx.put(ChangeLog.Settings(feed: 42, retention: .commits(100_000)).encoded(), forKey: SystemKey.changeFeed) }
    }
    for n in 0..<count {
        try store.withTransaction { ctx in
            try ctx.insert(Item(n))
            try ctx.insert(Volume(n))
        }
    }
    return (engine, store)
}

/// Every stored pair of an engine, in key order.
func pairs(of engine: any KeyValueEngine) throws -> [(key: [UInt8], value: [UInt8])] {
    try engine.read { tx in
        var all: [(key: [UInt8], value: [UInt8])] = []
        try tx.scan(.all, reverse: false, limit: nil) { key, value in
            all.append((Array(key), Array(value)))
            return true
        }
        return all
    }
}

/// Reads a store every way a user or a tool can; each read answers or throws (any typed
/// error): what the caller checks is that nothing crashes, hangs or reads out of bounds.
func readEverything(_ store: Store) {
    try? store.withReadTransaction { (ctx: TransactionContext) in
        _ = try? Item.query().select(in: ctx, limit: 50)
        _ = try? Volume.query().select(in: ctx, limit: 50)
        _ = try? ctx.forEachView(Item.self, limit: 50) { view in
            _ = try? view.record()
            return true
        }
        for index in Item.indexes { _ = try? index.query().select(in: ctx, limit: 20) }
        _ = try? Volume.isbn.select(in: ctx, "isbn-1")
        _ = try? Volume.author.select(in: ctx, "Ann")
        _ = try? Item.query(where: #Predicate<Item> { $0.title == "Dune" || $0.count > 3 }).select(in: ctx, limit: 10)
    }
    _ = try? store.verify(listing: 3)
    _ = try? store.statistics()
    _ = try? store.dump { _ in true }
    _ = try? store.changes(since: nil, limit: 20)
}
