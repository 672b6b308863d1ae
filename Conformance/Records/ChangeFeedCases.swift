import Foundation
import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataRecords

/// A record without indexes, in a keyspace of its own: its inserts tell new keys from replaced
/// ones by a read of their own (an indexed record's write reads the old record anyway).
struct FeedNote: Record, Equatable {
    var id: Int
    var text: String
    static let recordType = RecordType(keyspace: "FeedNote", key: [("id", Int.self)], fields: [("text", String.fieldFormat)])
    init(id: Int, text: String) { (self.id, self.text) = (id, text) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(text) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        text = try fields.read()
    }
    static func key(_ id: Int) -> EncodedIndexKey { EncodedIndexKey(bytes: KeyCodec.encode(id)) }
}

/// The change feed (``Store/changes(since:limit:)``) on the engine: exactly the committed
/// transactions, whole, in commit order, with the right kinds; tokens that resume exactly, also
/// inside a transaction split across chunks; retention, trimming, and the typed errors for a
/// feed that is off, a token the retention passed, a token of another feed and corrupt chunks.
enum ChangeFeedCases {
    typealias M = IndexedMember

    static let all: [ConformanceCase] = [
        ConformanceCase("changefeed", "off by default: reading it is a typed error and writes leave nothing in it") { ctx in
            let store = try ctx.recordStore()
            try store.withTransaction { tx in try tx.insert(FeedNote(id: 1, text: "a")) }
            try expectRecordError(.changeFeedOff, "changes(since:) on a store without the feed") { try store.changes(since: nil) }
            try expectEqual(try store.changeFeedRetention() == nil, true, "retention of a feed never turned on")
            try expectEqual(try store.engine.read { try $0.keys(.prefix([0] + KeyCodec.encode("changes"))) }.count, 0, "chunks written without the feed")
        },

        ConformanceCase("changefeed", "random transactions and rollbacks: the feed equals the model's log of committed changes, read in pages of every size") { ctx in
            let store = try ctx.recordStore()
            try store.enableChangeFeed(retention: .forever)
            try expectEqual(try store.changeFeedRetention(), .forever, "retention as set")
            let start = try store.changeFeedEnd()
            try expectEqual(start.version, 1, "the first version of a new feed")
            var random = SeededRandom(seed: 0xFEED)
            var notes: [Int: FeedNote] = [:], members: [Int: M] = [:]
            var log: [(version: UInt64, change: RecordChange)] = []
            var version: UInt64 = 0
            for step in 0..<60 {
                struct Abort: Error {}
                let abort = Int.random(in: 0..<5, using: &random) == 0
                var (n, m) = (notes, members)
                var made: [RecordChange] = []
                do {
                    try store.withTransaction { tx in
                        for _ in 0..<Int.random(in: 0...5, using: &random) {
                            let id = Int.random(in: 0..<12, using: &random)
                            switch Int.random(in: 0..<8, using: &random) {
                            case 0..<3:
                                try tx.insert(FeedNote(id: id, text: "n\(step)"))
                                made.append(RecordChange(keyspace: "FeedNote", key: FeedNote.key(id), kind: n[id] == nil ? .insert : .update))
                                n[id] = FeedNote(id: id, text: "n\(step)")
                            case 3:
                                if try tx.delete(FeedNote.self, key: FeedNote.key(id)) {
                                    made.append(RecordChange(keyspace: "FeedNote", key: FeedNote.key(id), kind: .delete))
                                }
                                n[id] = nil
                            case 4:
                                let gone = n.keys.filter { (id..<(id + 3)).contains($0) }.sorted()
                                try expectEqual(try tx.delete(FeedNote.self, .all.then(Comparison.range(id..<(id + 3)))), gone.count, "step \(step): range delete")
                                for g in gone { made.append(RecordChange(keyspace: "FeedNote", key: FeedNote.key(g), kind: .delete)); n[g] = nil }
                            case 5..<7:
                                let member = M(id: id, email: "m\(id)-\(step)@x", city: "C\(id % 3)", age: step, tags: ["t"])
                                try tx.insert(member)
                                made.append(RecordChange(keyspace: "IndexedMember", key: M.key(id), kind: m[id] == nil ? .insert : .update))
                                m[id] = member
                            default:
                                if try tx.delete(M.self, key: M.key(id)) {
                                    made.append(RecordChange(keyspace: "IndexedMember", key: M.key(id), kind: .delete))
                                }
                                m[id] = nil
                            }
                        }
                        if abort { throw Abort() }
                    }
                    (notes, members) = (n, m)
                    if !made.isEmpty {
                        version += 1
                        log += made.map { (version, $0) }
                    }
                } catch is Abort {}
            }
            try expectTrue(log.count > 50, "the log has changes (\(log.count))")
            for limit in [1, 3, 7, 1_000] {
                var token: ChangeToken? = limit.isMultiple(of: 2) ? start : nil
                var read: [(UInt64, RecordChange)] = []
                while true {
                    let page = try store.changes(since: token, limit: limit)
                    try expectTrue(page.entries.count <= limit, "a page of \(page.entries.count) with limit \(limit)")
                    read += page.entries.map { ($0.version, $0.change) }
                    token = page.next
                    if page.isAtEnd { break }
                    try expectTrue(!page.entries.isEmpty, "an empty page before the feed's end (limit \(limit))")
                    try expectEqual(page.entries.count, limit, "a page short of the limit before the end")
                }
                try expectSameList(read.map { "v\($0.0) \($0.1)" }, log.map { "v\($0.version) \($0.change)" }, "the feed read \(limit) at a time")
                try expectEqual(try store.changes(since: token).entries.count, 0, "after the end (limit \(limit))")
            }
            // A write transaction reads the feed as of its start; its own changes join as it commits.
            let end = try store.changeFeedEnd()
            try store.withTransaction { tx in
                try tx.insert(FeedNote(id: 99, text: "last"))
                try expectEqual(try tx.changeFeed(since: end).entries.count, 0, "a transaction's own changes in its view of the feed")
            }
            try expectEqual(try store.changes(since: end).entries.map(\.change), [RecordChange(keyspace: "FeedNote", key: FeedNote.key(99), kind: .insert)],
                            "the changes after the end token")
        },

        ConformanceCase("changefeed", "a transaction of many changes spans chunks; tokens inside it resume at the next change") { ctx in
            let store = try ctx.recordStore()
            try store.enableChangeFeed(retention: .commits(10))
            let long = String(repeating: "k", count: 300)
            // Long keys: 400 changes of ~310 key bytes are more than one chunk's 32 KiB.
            struct Wide: Record {
                var name: String
                static let recordType = RecordType(keyspace: "FeedWide", version: 1, key: [("name", String.self)])
                init(name: String) { self.name = name }
                func writeKey(to key: inout KeyWriter) { key.append(name) }
                func writeFields(to fields: inout FieldWriter) {}
                init(key: inout KeyReader, fields: inout FieldReader) throws { name = try key.read() }
            }
            let names = (0..<400).map { "\(long)\($0)" }
            try store.withTransaction { tx in for name in names { try tx.insert(Wide(name: name)) } }
            try expectTrue(try store.engine.read { try $0.keys(.prefix([0] + KeyCodec.encode("changes"))) }.count > 1, "the transaction was split into chunks")
            var token: ChangeToken?
            var keys: [[UInt8]] = []
            while true {
                let page = try store.changes(since: token, limit: 37)
                keys += page.entries.map(\.change.key.bytes)
                try expectTrue(page.entries.allSatisfy { $0.version == 1 && $0.change.kind == .insert }, "every change is version 1's insert")
                token = page.next
                if page.isAtEnd { break }
                try expectTrue(!page.entries.isEmpty, "an empty page before the feed's end")
            }
            try expectSameList(keys, names.map { KeyCodec.encode($0) }, "the transaction's changes, in order, across chunks and pages")
            try expectEqual(token?.version, 2, "the token after the whole transaction")
        },

        ConformanceCase("changefeed", "retention by count: writers trim as they go, an older token is historyTruncated, the newest transaction stays") { ctx in
            let store = try ctx.recordStore()
            try store.enableChangeFeed(retention: .forever)
            let first = try store.changeFeedEnd()
            for i in 0..<30 { try store.insert(FeedNote(id: i, text: "x")) }
            let middle = try store.changes(since: first, limit: 20).next  // resumes at version 21
            try store.enableChangeFeed(retention: .commits(5))  // trims to versions 26...30 before it returns
            try expectSameList(try store.changes(since: nil).entries.map(\.version), [26, 27, 28, 29, 30], "the versions kept")
            for i in 30..<40 { try store.insert(FeedNote(id: i, text: "x")) }
            try expectSameList(try store.changes(since: nil).entries.map(\.version), [36, 37, 38, 39, 40], "the versions kept while writing")
            try expectHistoryTruncated("a token at version 21 after the trim") { try store.changes(since: middle) }
            try expectEqual(try store.changes(since: try store.changeFeedEnd()).entries.count, 0, "the end token reads nothing")
            try store.enableChangeFeed(retention: .commits(1))
            try expectSameList(try store.changes(since: nil).entries.map(\.version), [40], "retention 1 keeps the newest")
            try expectRecordError(.invalidChangeFeedSettings(detail: "maxCommits is 0; the feed keeps at least 1 transaction"), "a retention of 0") {
                try store.enableChangeFeed(retention: .commits(0))
            }
        },

        ConformanceCase("changefeed", "retention by age: transactions older than it are trimmed by the next writer, the newest always stays") { ctx in
            let store = try ctx.recordStore()
            // An age a loaded 3-member etcd cluster outlasts with five commits (300 ms did not: a
            // fresh-clone run beside two builds trimmed two of them).
            try store.enableChangeFeed(retention: .age(.seconds(1)))
            let start = ContinuousClock.now
            for i in 0..<5 { try store.insert(FeedNote(id: i, text: "old")) }
            let took = ContinuousClock.now - start
            guard took < .milliseconds(900) else { throw ConformanceFailure("five commits took \(took): too slow to test a 1 s age") }
            try expectEqual(try store.changes(since: nil).entries.count, 5, "young transactions kept")
            Thread.sleep(forTimeInterval: 1.1)
            try expectEqual(try store.changes(since: nil).entries.count, 5, "nothing trimmed without a writer")
            try store.insert(FeedNote(id: 9, text: "new"))
            try expectSameList(try store.changes(since: nil).entries.map(\.version), [6], "after a writer, only the young transaction")
            Thread.sleep(forTimeInterval: 1.1)
            try expectEqual(try store.trimChangeFeed(), 0, "the newest transaction is never trimmed")
            try expectSameList(try store.changes(since: nil).entries.map(\.version), [6], "the newest stays however old")
        },

        ConformanceCase("changefeed", "turning the feed off deletes it and ends its tokens, also once it is on again") { ctx in
            let store = try ctx.recordStore()
            try store.enableChangeFeed()
            for i in 0..<3 { try store.insert(FeedNote(id: i, text: "a")) }
            let token = try store.changes(since: nil, limit: 1).next
            try store.disableChangeFeed()
            try expectRecordError(.changeFeedOff, "reading a feed turned off") { try store.changes(since: token) }
            try store.insert(FeedNote(id: 7, text: "unfed"))
            try expectEqual(try store.engine.read { try $0.keys(.prefix([0] + KeyCodec.encode("changes"))) }.count, 0, "chunks left after turning it off")
            try store.enableChangeFeed()
            try store.insert(FeedNote(id: 8, text: "fed"))
            try expectHistoryTruncated("a token of the feed before") { try store.changes(since: token) }
            try expectSameList(try store.changes(since: nil).entries.map { "v\($0.version) \($0.change)" },
                               ["v1 \(RecordChange(keyspace: "FeedNote", key: FeedNote.key(8), kind: .insert))"], "the new feed starts at version 1")
        },

        ConformanceCase("changefeed", "a damaged chunk is a typed error naming it, and a token after the feed's end is refused") { ctx in
            let store = try ctx.recordStore()
            try store.enableChangeFeed()
            try store.insert(FeedNote(id: 1, text: "a"))
            let end = try store.changeFeedEnd()
            try store.insert(FeedNote(id: 2, text: "b"))
            let future = try store.changeFeedEnd()
            let chunks = try store.engine.read { try $0.pairs(.prefix([0] + KeyCodec.encode("changes"))) }
            try expectEqual(chunks.count, 2, "one chunk per transaction")
            var damaged = chunks[1].value
            damaged[damaged.count / 2] ^= 0x20
            try store.engine.write { try $0.put(damaged, forKey: chunks[1].key) }
            do {
                _ = try store.changes(since: end)
                throw ConformanceFailure("reading a damaged chunk succeeded")
            } catch RecordError.corruptChangeFeed(let detail) {
                try expectTrue(detail.contains("version 2") && detail.contains("checksum"), "the error names the chunk: \(detail)")
            }
            try expectEqual(try store.changes(since: nil, limit: 1).entries.map(\.version), [1], "the chunk before it still reads")
            try store.engine.write { try $0.put(chunks[1].value, forKey: chunks[1].key) }
            try expectEqual(try store.changes(since: end).entries.map(\.version), [2], "the chunk restored reads")
            // Tokens edited by hand (they travel through clients): a position past the feed's end,
            // as from a copy of the store restored from before, and an unknown layout.
            func edited(_ token: ChangeToken, _ edit: (inout [String: Any]) -> Void) throws -> ChangeToken {
                var object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(token)) as! [String: Any]
                edit(&object)
                return try JSONDecoder().decode(ChangeToken.self, from: try JSONSerialization.data(withJSONObject: object))
            }
            try expectEqual(try store.changes(since: try edited(future) { _ in }).entries.count, 0, "a token round-tripped through JSON")
            let ahead = try edited(future) { $0["version"] = 9 }
            do {
                _ = try store.changes(since: ahead)
                throw ConformanceFailure("a token past the end was accepted")
            } catch RecordError.invalidChangeToken(let detail) {
                try expectTrue(detail.contains("version 9") && detail.contains("last, 2"), "the error says where: \(detail)")
            }
            let layout = try edited(future) { $0["layout"] = 7 }
            try expectRecordError(.invalidChangeToken(detail: "it has layout 7; this build reads 1"), "a token of another layout") {
                try store.changes(since: layout)
            }
        },
    ]
}

/// Expects `body` to throw ``RecordError/historyTruncated(detail:)``.
func expectHistoryTruncated<R>(_ what: @autoclosure () -> String, _ body: () throws -> R) throws {
    do {
        let result = try body()
        throw ConformanceFailure("\(what()): expected historyTruncated, got \(result)")
    } catch RecordError.historyTruncated {
    } catch let error as ConformanceFailure {
        throw error
    } catch {
        throw ConformanceFailure("\(what()): expected historyTruncated, got \(error)")
    }
}
