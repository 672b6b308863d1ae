// One record operation, repeated `count` times in one transaction after a fixed set-up:
// `instruction-counts <operation> <count>`. run.sh runs each operation at two counts under
// callgrind and divides the difference, so the set-up and the process cost cancel out.
// Written against the public API only, so that it builds against older commits too.
import Foundation
import StrataKeyCodec
import StrataLMDB
import StrataLevelDB
import StrataMemory
import StrataRecords

struct Book: CodableRecord {
    var id: Int, title: String, year: Int
}

struct Plain: Record {
    var id: Int, name: String, age: Int
    static let recordType = RecordType(keyspace: "Plain", key: [("id", Int.self)], fields: [("name", String.fieldFormat), ("age", Int.fieldFormat)])
    init(id: Int, name: String, age: Int) { (self.id, self.name, self.age) = (id, name, age) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(name); fields.write(age) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); name = try fields.read(); age = try fields.read() }
    static var storedKeyPaths: [String: PartialKeyPath<Plain>] { ["id": \.id, "name": \.name, "age": \.age] }
}

struct OneIndex: Record {
    var id: Int, name: String, age: Int
    static let recordType = RecordType(keyspace: "OneIndex", key: [("id", Int.self)], fields: [("name", String.fieldFormat), ("age", Int.fieldFormat)])
    static let byAge = RecordIndex<OneIndex>("byAge", .field("age", \.age))
    static let indexes = [byAge]
    init(id: Int, name: String, age: Int) { (self.id, self.name, self.age) = (id, name, age) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(name); fields.write(age) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); name = try fields.read(); age = try fields.read() }
}

/// Three indexes of the three kinds: unique, covering, multi-valued.
struct ThreeIndexes: Record {
    var id: Int, name: String, age: Int, tags: [String]
    static let recordType = RecordType(keyspace: "ThreeIndexes", key: [("id", Int.self)],
                                       fields: [("name", String.fieldFormat), ("age", Int.fieldFormat), ("tags", [String].fieldFormat)])
    static let byName = RecordIndex<ThreeIndexes>("byName", .field("name", \.name), unique: true)
    static let byAge = RecordIndex<ThreeIndexes>("byAge", .field("age", \.age), covering: true)
    static let byTag = RecordIndex<ThreeIndexes>("byTag", .each("tags", \.tags))
    static let indexes = [byName, byAge, byTag]
    init(id: Int, name: String, age: Int, tags: [String]) { (self.id, self.name, self.age, self.tags) = (id, name, age, tags) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(name); fields.write(age); fields.write(tags) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read(); name = try fields.read(); age = try fields.read(); tags = try fields.read()
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
    print("usage: instruction-counts <operation> <count>")
    exit(2)
}
let operation = arguments[1]
let directory = NSTemporaryDirectory() + "instruction-counts-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: directory) }
let onLevelDB = operation.hasSuffix("-leveldb")
let store = operation.hasSuffix("-memory") ? try Store(.memory)
    : try Store(onLevelDB ? .leveldb(path: directory) : .lmdb(path: directory), durability: .relaxed)
let stored = 12_000
func three(_ i: Int) -> ThreeIndexes { ThreeIndexes(id: i, name: "name \(i)", age: i % 90, tags: ["t\(i % 7)", "t\(i % 11 + 7)"]) }

var total = 0
switch operation {
case "insert-lmdb", "insert-leveldb":
    try store.withTransaction { ctx in for i in 0..<count { try ctx.insert(Plain(id: i, name: "name \(i)", age: i % 90)) } }
case "insert-feed-lmdb", "insert-feed-leveldb":
    // The change feed on: each insert also tells an insert from an update (a read: no indexes)
    // and records its change for the transaction's chunks.
    try store.enableChangeFeed(retention: .commits(100))
    try store.withTransaction { ctx in for i in 0..<count { try ctx.insert(Plain(id: i, name: "name \(i)", age: i % 90)) } }
case "insert-observed-lmdb", "insert-observed-leveldb":
    // As bench-observe's fill: the change feed on and 10 queries observing other keys, which
    // every change is tested against and none wants.
    try store.enableChangeFeed(retention: .commits(100))
    let started = DispatchSemaphore(value: 0)
    let observed = store  // detached: a task made here would run on the main actor, which waits below
    let observers = (0..<10).map { k in
        Task.detached {
            do {
                for try await _ in observed.observe(Query<Plain>(RecordQuery.all.equal(1_000_000 + k))) { started.signal() }
            } catch {
                print("observation failed: \(error)")
                exit(1)
            }
        }
    }
    for _ in observers { started.wait() }
    try store.withTransaction { ctx in for i in 0..<count { try ctx.insert(Plain(id: i, name: "name \(i)", age: i % 90)) } }
    for observer in observers { observer.cancel() }
case "insert-1-index-lmdb", "insert-1-index-leveldb":
    try store.withTransaction { ctx in for i in 0..<count { try ctx.insert(OneIndex(id: i, name: "name \(i)", age: i % 90)) } }
case "insert-3-indexes-lmdb", "insert-3-indexes-leveldb":
    // In transactions of 100: in one transaction of thousands, LevelDB's unique check scans the
    // transaction's pending writes, which are sorted again after every insert (quadratic: 4.6
    // million instructions per insert at 12,000; noted in the speed issue).
    for start in stride(from: 0, to: count, by: 100) {
        try store.withTransaction { ctx in for i in start..<min(start + 100, count) { try ctx.insert(three(i)) } }
    }
case "engine-scan-row":
    // The engine layer's own scan over the same pairs: the yardstick of the record scans.
    try store.withTransaction { ctx in for i in 0..<stored { try ctx.insert(Plain(id: i, name: "name \(i)", age: i % 90)) } }
    try store.engine.read { tx in
        try tx.scan(.all, reverse: false, limit: count) { _, value in
            total &+= value.count
            return true
        }
    }
case "filter-reject-row", "filter-select-row":
    // A predicate query over the first `count` keys whose filter (on a field no index has)
    // rejects every row, or keeps every row.
    try store.withTransaction { ctx in for i in 0..<stored { try ctx.insert(Plain(id: i, name: "name \(i)", age: i % 90)) } }
    let end = count
    try store.withReadTransaction { ctx in
        if operation == "filter-reject-row" {
            total = try Plain.count(in: ctx, where: #Predicate { $0.id < end && $0.name == "nobody" })
        } else {
            total = try Plain.select(in: ctx, where: #Predicate { $0.id < end && $0.age >= 0 }).count
        }
    }
case "fetch", "fetch-memory", "scan-row", "view-row", "foreach-row":
    try store.withTransaction { ctx in for i in 0..<stored { try ctx.insert(Plain(id: i, name: "name \(i)", age: i % 90)) } }
    try store.withReadTransaction { ctx in
        switch operation {
        case "fetch", "fetch-memory":
            for i in 0..<count { total += try ctx.fetch(Plain.self, key: EncodedIndexKey(bytes: KeyCodec.encode(i % stored)))!.age }
        case "scan-row":
            total = try ctx.select(Plain.self, limit: count).count
        case "foreach-row":
            // A materialized record per row, not collected: what `strata bench`'s record scans do.
            var left = count
            try ctx.forEach(Plain.self) { record in
                total &+= record.age
                left -= 1
                return left > 0
            }
        default:
            try ctx.forEachView(Plain.self, limit: count) { view in
                var fields = view.fieldReader()
                _ = try fields.read(String.self)
                total += try fields.read(Int.self)
                return true
            }
        }
    }
case "transaction-insert", "transaction-fetch":
    // One transaction per operation: what an app that writes or reads one record at a time pays
    // for the transaction itself (the writer's lock, the catalog's check, the snapshot).
    for i in 0..<count {
        if operation == "transaction-insert" {
            try store.withTransaction { ctx in try ctx.insert(Plain(id: i, name: "name \(i)", age: i % 90)) }
        } else {
            total += try store.withReadTransaction { ctx in
                try ctx.fetch(Plain.self, key: EncodedIndexKey(bytes: KeyCodec.encode(i))) == nil ? 1 : 0
            }
        }
    }
case "codable-insert", "codable-fetch":
    try store.withTransaction { ctx in for i in 0..<stored { try ctx.insert(Book(id: i, title: "title \(i)", year: i % 90)) } }
    try store.withTransaction { ctx in
        for i in 0..<count {
            if operation == "codable-insert" {
                try ctx.insert(Book(id: stored + i, title: "title \(i)", year: i % 90))
            } else {
                total += try Book.fetch(in: ctx, id: i % stored)!.year
            }
        }
    }
case "lookup-unique", "lookup-covering":
    try store.withTransaction { ctx in for i in 0..<stored { try ctx.insert(three(i)) } }
    try store.withReadTransaction { ctx in
        for i in 0..<count {
            if operation == "lookup-unique" {
                total += try ThreeIndexes.byName.fetch(in: ctx, .all.equal("name \(i % stored)"))!.age
            } else {
                total += try ThreeIndexes.byAge.select(in: ctx, .all.equal(i % 90), limit: 1)[0].age
            }
        }
    }
default:
    print("unknown operation \(operation)")
    exit(2)
}
if total < 0 { print(total) }
try store.close()
