import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataRecords

/// A record whose strings and byte arrays end in, or hold, the bytes the key encoding escapes or
/// ends on (`00`, `01`, `FF`), and the empty value. `("a")` encodes as `02 61 00`, a byte prefix
/// of `("a\0")` = `02 61 00 FF 00`: an equality that reads "starts with these bytes" as "equals
/// this value" returns the longer values too. Its key leads with the name, so key queries meet the
/// same values.
struct EdgeValued: Record, Equatable, Sendable {
    var name: String
    var id: Int
    var blob: [UInt8]
    var names: [String]
    var label: String?

    static let recordType = RecordType(
        keyspace: "EdgeValued", key: [("name", String.self), ("id", Int.self)],
        fields: [("blob", [UInt8].fieldFormat), ("names", [String].fieldFormat), ("label", String?.fieldFormat)])
    static let byName = RecordIndex<EdgeValued>("byName", .field("name", \.name))
    static let byBlob = RecordIndex<EdgeValued>("byBlob", .field("blob", \.blob), covering: true)
    static let byNames = RecordIndex<EdgeValued>("byNames", .each("names", \.names))
    static let byLabel = RecordIndex<EdgeValued>("byLabel", .field("label", \.label), unique: true)
    static let byBlobName = RecordIndex<EdgeValued>("byBlobName", .field("blob", \.blob), .field("name", \.name))
    static let indexes = [byName, byBlob, byNames, byLabel, byBlobName]

    func writeKey(to key: inout KeyWriter) {
        key.append(name)
        key.append(id)
    }

    func writeFields(to fields: inout FieldWriter) {
        fields.write(blob)
        fields.write(names)
        fields.write(label)
    }

    init(name: String, id: Int, blob: [UInt8], names: [String], label: String?) {
        (self.name, self.id, self.blob, self.names, self.label) = (name, id, blob, names, label)
    }

    init(key: inout KeyReader, fields: inout FieldReader) throws {
        name = try key.read()
        id = try key.read()
        blob = try fields.read()
        names = try fields.read()
        label = try fields.read()
    }

    /// Strings with `00` and `01` at the end and in the middle, and the empty string (a string
    /// cannot hold an `FF` byte: UTF-8 never has one).
    static let strings = ["", "\0", "\0\0", "\u{1}", "a", "a\0", "a\0b", "a\0\0", "a\u{1}", "a\u{1}b", "ab", "b"]
    /// Byte arrays with `00`, `01` and `FF` at the end and in the middle, and the empty array.
    static let blobs: [[UInt8]] = [[], [0], [0, 0], [1], [0xFF], [0xFF, 0xFF], [0x61], [0x61, 0], [0x61, 0, 0x62], [0x61, 0xFF],
                                   [0x61, 0xFF, 0], [0x61, 1], [0x62]]

    /// Every string twice (so equalities find several records), with blobs, multi-valued names
    /// and unique labels drawn from the same values.
    static let cast: [EdgeValued] = (0..<(2 * strings.count)).map { i in
        EdgeValued(name: strings[i % strings.count], id: i, blob: blobs[i % blobs.count],
                   names: [strings[(i + 1) % strings.count], strings[(i * 5 + 3) % strings.count]],
                   label: i < strings.count ? strings[(i * 7) % strings.count] : nil)
    }
}

/// Equalities and comparisons over ``EdgeValued``: every read path, both orders, on the key and on
/// every kind of index, against a model.
enum EdgeValueCases {
    typealias E = EdgeValued

    static let all: [ConformanceCase] = [
        ConformanceCase("index", "equality on values ending in or holding 00, 01 and FF (and the empty value) matches exactly them, on every read path and in both orders") { ctx in
            let store = try CaseStores.store(on: ctx.open())
            try store.withTransaction { tx in for record in E.cast { try tx.insert(record) } }
            try store.withReadTransaction { tx in
                for value in E.strings + ["a\0c", "c"] {
                    let named = E.cast.filter { $0.name == value }
                    try expectEqualities(tx, E.byName, .all.equal(value), .all.then(Comparison.equals(value)), { $0.append(value) }, named, "byName = \(escaped(value))")
                    try expectEqualities(tx, E.byNames, .all.equal(value), .all.then(Comparison.equals(value)), { $0.append(value) }, E.cast.filter { $0.names.contains(value) },
                                         "byNames = \(escaped(value))")
                    try expectKeyEqualities(tx, value, named)
                    let labelled = E.cast.first { $0.label == value }
                    try expectEqual(try E.byLabel.fetch(in: tx, .all.equal(String?(value))), labelled, "byLabel fetch \(escaped(value))")
                    try expectEqual(try E.byLabel.fetch(in: tx) { $0.append(String?(value)) }, labelled, "byLabel fetch, encoded values, \(escaped(value))")
                    try expectEqualities(tx, E.byLabel, .all.equal(String?(value)), .all.then(Comparison.equals(String?(value))), { $0.append(String?(value)) }, labelled.map { [$0] } ?? [],
                                         "byLabel = \(escaped(value))")
                }
                for blob in E.blobs + [[0x61, 0, 0x63], [0xFF, 0]] {
                    let matching = E.cast.filter { $0.blob == blob }
                    try expectEqualities(tx, E.byBlob, .all.equal(blob), .all.then(Comparison.equals(blob)), { $0.append(blob) }, matching, "byBlob = \(blob)")
                    try expectEqualities(tx, E.byBlobName, .all.equal(blob), .all.then(Comparison.equals(blob)), { $0.append(blob) }, matching,
                                         "byBlobName = \(blob)")
                    for name in ["", "a", "a\0"] {
                        try expectEqualities(tx, E.byBlobName, .all.equal(blob).equal(name), .all.equal(blob).then(Comparison.equals(name)),
                                             { $0.append(blob); $0.append(name) },
                                             matching.filter { $0.name == name }, "byBlobName = \(blob), \(escaped(name))")
                    }
                }
                // Comparisons around each value: above and at-or-below, in index order.
                for value in E.strings {
                    let v = KeyCodec.encode(value)
                    let byName = inKeyOrder(E.cast)
                    try expectEqual(try E.byName.select(in: tx, .all.then(Comparison.greaterThan(value)), order: .ascending).map(\.id),
                                    byName.filter { precedes(v, KeyCodec.encode($0.name)) }.map(\.id), "byName > \(escaped(value))")
                    try expectEqual(try E.byName.select(in: tx, .all.then(Comparison.lessThanOrEqual(value)), order: .ascending).map(\.id),
                                    byName.filter { !precedes(v, KeyCodec.encode($0.name)) }.map(\.id), "byName <= \(escaped(value))")
                }
                for blob in E.blobs {
                    let v = KeyCodec.encode(blob)
                    let byBlob = E.cast.sorted { precedes(KeyCodec.encode($0.blob, $0.name, $0.id), KeyCodec.encode($1.blob, $1.name, $1.id)) }
                    try expectEqual(try E.byBlob.select(in: tx, .all.then(Comparison.greaterThan(blob)), order: .descending).map(\.id),
                                    byBlob.filter { precedes(v, KeyCodec.encode($0.blob)) }.reversed().map(\.id), "byBlob > \(blob), descending")
                }
            }
            // Deletes by a key equality remove exactly the equal records (each rolled back).
            struct Rollback: Error {}
            for value in E.strings {
                do {
                    try store.withTransaction { tx in
                        let named = E.cast.filter { $0.name == value }
                        try expectEqual(try tx.delete(E.self, .all.equal(value)), named.count, "delete name = \(escaped(value))")
                        try expectEqual(try E.select(in: tx, .all).count, E.cast.count - named.count, "records left after deleting \(escaped(value))")
                        throw Rollback()
                    }
                } catch is Rollback {}
            }
            let results = try store.withReadTransaction { tx in try tx.verifyIndexes(E.self) }
            for result in results {
                try expectTrue(result.isExact, "index \(result.index): \(result.missingCount) entries missing, \(result.staleCount) stale")
            }
        }
    ]

    /// Every read of an index equality, given as a query, as the same query with its last value
    /// as `.equals` (`byComparison`) and as encoded values (the macro's path), returns `expected`
    /// in index order (equal values: primary-key order) ascending, and reversed descending.
    static func expectEqualities(_ tx: TransactionContext, _ index: RecordIndex<E>, _ query: RecordQuery, _ byComparison: RecordQuery,
                                 _ values: (inout KeyWriter) -> Void, _ expected: [E], _ what: String) throws {
        let ids = inKeyOrder(expected).map(\.id)
        for order in [Order.ascending, .descending] {
            let want = order == .ascending ? ids : ids.reversed()
            let how = "\(what), \(order)"
            try expectEqual(try index.select(in: tx, query, order: order).map(\.id), want, "\(how): select")
            try expectEqual(try index.select(in: tx, order: order, equal: values).map(\.id), want, "\(how): select, encoded values")
            try expectEqual(try index.select(in: tx, byComparison, order: order).map(\.id), want, "\(how): select, .equals")
            try expectEqual(try index.select(in: tx, query, limit: 1, order: order).map(\.id), Array(want.prefix(1)), "\(how): select, limit 1")
            try expectEqual(try index.select(in: tx, limit: 1, order: order, equal: values).map(\.id), Array(want.prefix(1)),
                            "\(how): select, encoded values, limit 1")
            var visited: [Int] = []
            try index.forEach(in: tx, query, order: order) { visited.append($0.id); return true }
            try expectEqual(visited, want, "\(how): forEach")
            var viewed: [Int] = []
            try index.forEachView(in: tx, query, order: order) { viewed.append(try $0.record().id); return true }
            try expectEqual(viewed, want, "\(how): forEachView")
            try expectEqual(try index.primaryKeys(in: tx, query, order: order).count, want.count, "\(how): primaryKeys")
            let typed = index.query(query)
            try expectEqual(try typed.select(in: tx, order: order).map(\.id), want, "\(how): Query.select")
            var typedVisited: [Int] = []
            try typed.forEach(in: tx, order: order) { typedVisited.append($0.id); return true }
            try expectEqual(typedVisited, want, "\(how): Query.forEach")
            var typedViewed: [Int] = []
            try typed.forEachView(in: tx, order: order) { typedViewed.append(try $0.record().id); return true }
            try expectEqual(typedViewed, want, "\(how): Query.forEachView")
            try expectEqual(try typed.primaryKeys(in: tx, order: order).count, want.count, "\(how): Query.primaryKeys")
            try expectEqual(try pages(tx, typed, order), want, "\(how): pages of 1")
            try expectEqual(try cursor(tx, typed, order), want, "\(how): cursor")
        }
        try expectEqual(try index.count(in: tx, query), ids.count, "\(what): count")
        try expectEqual(try index.count(in: tx, equal: values), ids.count, "\(what): count, encoded values")
        try expectEqual(try index.query(query).count(in: tx), ids.count, "\(what): Query.count")
    }

    /// The key's equality on the name, on every read path of a key query.
    static func expectKeyEqualities(_ tx: TransactionContext, _ value: String, _ expected: [E]) throws {
        let ids = expected.map(\.id)
        let query = Query<E>(.all.equal(value))
        for order in [Order.ascending, .descending] {
            let want = order == .ascending ? ids : ids.reversed()
            let how = "key name = \(escaped(value)), \(order)"
            try expectEqual(try E.select(in: tx, .all.equal(value), order: order).map(\.id), want, "\(how): select")
            try expectEqual(try E.select(in: tx, .all.then(Comparison.equals(value)), order: order).map(\.id), want, "\(how): select, .equals")
            try expectEqual(try query.select(in: tx, order: order).map(\.id), want, "\(how): Query.select")
            var viewed: [Int] = []
            try query.forEachView(in: tx, order: order) { viewed.append(try $0.record().id); return true }
            try expectEqual(viewed, want, "\(how): Query.forEachView")
            try expectEqual(try query.primaryKeys(in: tx, order: order).count, want.count, "\(how): Query.primaryKeys")
            try expectEqual(try pages(tx, query, order), want, "\(how): pages of 1")
            try expectEqual(try cursor(tx, query, order), want, "\(how): cursor")
        }
        try expectEqual(try E.count(in: tx, .all.equal(value)), ids.count, "key name = \(escaped(value)): count")
        for record in expected {
            try expectEqual(try tx.fetch(E.self, key: EncodedIndexKey(bytes: KeyCodec.encode(record.name, record.id))), record,
                            "fetch (\(escaped(value)), \(record.id))")
        }
    }

    /// `records` in primary-key order.
    static func inKeyOrder(_ records: [E]) -> [E] {
        records.sorted { precedes(KeyCodec.encode($0.name, $0.id), KeyCodec.encode($1.name, $1.id)) }
    }

    /// The ids of every page of one record, after each page's token.
    static func pages(_ tx: TransactionContext, _ query: Query<E>, _ order: Order) throws -> [Int] {
        var ids: [Int] = []
        var token: PageToken?
        repeat {
            let page = try query.page(in: tx, limit: 1, order: order, after: token)
            ids += page.records.map(\.id)
            token = page.next
            try expectTrue(ids.count <= E.cast.count, "paging does not end")
        } while token != nil
        return ids
    }

    /// The ids a cursor with batches of one returns.
    static func cursor(_ tx: TransactionContext, _ query: Query<E>, _ order: Order) throws -> [Int] {
        let cursor = query.cursor(in: tx, order: order, batchSize: 1)
        var ids: [Int] = []
        while let record = try cursor.next() {
            ids.append(record.id)
            try expectTrue(ids.count <= E.cast.count, "the cursor does not end")
        }
        return ids
    }

    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

    /// A string with its control characters spelled out, for failure messages.
    static func escaped(_ value: String) -> String {
        "\"" + value.unicodeScalars.map { $0.value < 0x20 ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined() + "\""
    }
}
