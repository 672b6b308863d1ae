import FuzzSupport
import Foundation
import StrataKeyCodec
@testable import StrataRecords

/// Tokens from strangers: page tokens and change feed tokens are handed to clients and come
/// back from the network. The input is a token's JSON, raw (flag byte even) or built from
/// fuzzed fields (odd: a tampered version, keyspace, index, checksum, order or position, with
/// the real check when asked, so the position is used). A page must hold only records the
/// query selects, in its order, after the token's position; a change page only entries at or
/// after the token's version. Anything else is a typed refusal.
enum TokenTarget {
    /// The stores the tokens are used on, made once: only read.
    static let store: Store = try! seededStore(items: 30, changeFeed: true).1

    static let queries: [Query<Item>] = [
        Item.query(),
        Query(RecordQuery.all.equal("shelf 1\u{0}é").then(Comparison<Int>.range(-30..<300))),
        Item.byTitleCount.query(RecordQuery.all.equal("Dune")),
        Item.byTag.query(RecordQuery.all.then(Comparison<String>.greaterThan("a"))),
    ]

    static let target = FuzzTarget(name: "tokens", run: run, seeds: seeds)

    static func run(_ input: UnsafeRawBufferPointer) {
        var r = InputReader(input)
        let flags = r.byte()
        let query = queries[Int(r.byte()) % queries.count]
        let order: Order = r.byte() & 1 == 0 ? .ascending : .descending
        let limit = Int(r.byte() % 5) + 1
        let json: [UInt8]
        var position: [UInt8]?
        if flags & 1 == 0 {
            json = Array(r.rest())
        } else {
            // Fields as a client may send them back: each tampered or not, the check recomputed
            // over them or not (the second flag byte).
            let more = r.byte()
            let after = r.chunk()
            position = after
            let version = flags & 2 == 0 ? 2 : Int(Int8(bitPattern: r.byte()))
            let keyspace = flags & 4 == 0 ? "Item" : String(decoding: r.chunk(), as: UTF8.self)
            let fingerprint = flags & 8 == 0 ? query.fingerprint : UInt32(r.byte()) << 24 | UInt32(r.byte())
            let descending = (flags & 16 == 0) == (order == .descending)
            let index = query.index.map { flags & 32 == 0 ? $0.name : String(decoding: r.chunk(), as: UTF8.self) }
            let identity = more & 1 == 0 ? store.identity ?? 0 : UInt64(r.byte())
            var fields: [String: Any] = [
                "version": version, "store": identity, "keyspace": keyspace, "query": fingerprint, "descending": descending,
                "after": Data(after).base64EncodedString(),
                "check": more & 2 == 0
                    ? PageToken.check(store: identity, keyspace: keyspace, index: index, query: fingerprint, descending: descending,
                                      after: Data(after))
                    : UInt32(r.byte()),
            ]
            if let index { fields["index"] = index }
            if flags & 64 != 0 { fields["extra"] = Array(r.rest()) }
            json = Array((try? JSONSerialization.data(withJSONObject: fields)) ?? Data())
        }
        if flags & 128 != 0 { return changes(json) }
        guard let token = try? JSONDecoder().decode(PageToken.self, from: Data(json)) else { return }
        try? store.withReadTransaction { (ctx: TransactionContext) in
            let page: Page<Item>
            do {
                page = try query.page(in: ctx, limit: limit, order: order, after: token)
            } catch is RecordError {
                return
            } catch {
                violated("a page token was refused with an untyped error: \(error)")
            }
            let expected = try query.select(in: ctx, order: order)
            guard page.records.count <= limit else { violated("a page of \(page.records.count) for a limit of \(limit)") }
            // In the query, in its order.
            var rest = expected[...]
            for record in page.records {
                guard let i = rest.firstIndex(where: { $0.same(as: record) }) else {
                    violated("a page token read \(record.shelf)/\(record.number), outside the query or out of order")
                }
                rest = rest[(i + 1)...]
            }
            // On the key, exactly the records after the position.
            guard query.index == nil, let position else { return }
            let after = expected.filter { item in
                var k = KeyWriter()
                item.writeKey(to: &k)
                return order == .ascending ? position.lexicographicallyPrecedes(k.bytes) : k.bytes.lexicographicallyPrecedes(position)
            }
            if !zip(after.prefix(limit), page.records).allSatisfy({ $0.same(as: $1) }) || page.records.count != min(limit, after.count) {
                violated("after \(position): \(page.records.count) records, expected \(min(limit, after.count))")
            }
        }
    }

    /// A change token: entries at or after its version, or a typed refusal.
    static func changes(_ json: [UInt8]) {
        guard let token = try? JSONDecoder().decode(ChangeToken.self, from: Data(json)) else { return }
        do {
            let page = try store.changes(since: token, limit: 7)
            if let early = page.entries.first(where: { $0.version < token.version }) {
                violated("token \(token) gave an entry of version \(early.version)")
            }
        } catch is RecordError {
        } catch {
            violated("a change token was refused with an untyped error: \(error)")
        }
    }

    static func seeds() -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        try? store.withReadTransaction { (ctx: TransactionContext) in
            for (q, query) in queries.enumerated() {
                for (o, order) in [Order.ascending, .descending].enumerated() {
                    guard let next = try query.page(in: ctx, limit: 2, order: order).next else { continue }
                    seeds.append([0, UInt8(q), UInt8(o), 1] + Array(try JSONEncoder().encode(next)))
                }
            }
        }
        var k = KeyWriter()
        Item(4).writeKey(to: &k)
        seeds.append([1, 0, 0, 2, 0] + framed(k.bytes))
        seeds.append([1, 1, 1, 2, 0] + framed(k.bytes))
        if let end = try? store.changeFeedEnd(), let json = try? JSONEncoder().encode(end) {
            seeds.append([128, 0, 0, 0] + Array(json))
            if let first = try? store.changes(since: nil, limit: 3).next, let json = try? JSONEncoder().encode(first) {
                seeds.append([128, 0, 0, 0] + Array(json))
            }
        }
        return seeds
    }
}
