import CCRC32C
import Foundation
import StrataRecords
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
import StrataMemory
import Testing

/// Counts the rows an engine hands out and the seeks it makes: the proof that queries seek
/// to their first key and stop after their last (O(log n + k)). With `maxWrites` it also
/// declares and enforces a limit of writes per transaction, as etcd's engine does.
final class CountingEngine: KeyValueEngine, @unchecked Sendable {
    let inner: any KeyValueEngine
    var engineName: String { inner.engineName }
    var capabilities: EngineCapabilities { inner.capabilities }
    var limits: EngineLimits { maxWrites.map { EngineLimits(maxOperationsPerTransaction: $0) } ?? inner.limits }
    let maxWrites: Int?
    let counts = Counts()

    final class Counts: @unchecked Sendable {
        var rows = 0, seeks = 0, gets = 0
        func reset() { (rows, seeks, gets) = (0, 0, 0) }
    }

    init(_ inner: any KeyValueEngine, maxWrites: Int? = nil) { (self.inner, self.maxWrites) = (inner, maxWrites) }

    func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R { try inner.read { try body(Counting(inner: $0, counts: counts)) } }
    func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R {
        try inner.write { try body(Counting(inner: $0, counts: counts, maxWrites: maxWrites)) }
    }
    func read<R: Sendable>(_ body: @Sendable (any KeyValueReader) throws -> R) async throws -> R { try await readOnTransactionThread(body) }
    func write<R: Sendable>(_ body: @Sendable (any KeyValueWriter) throws -> R) async throws -> R { try await writeOnTransactionThread(body) }
    func close() throws { try inner.close() }

    final class Counting: KeyValueWriter {
        let inner: any KeyValueReader
        let counts: Counts
        let maxWrites: Int?
        var writes = 0
        init(inner: any KeyValueReader, counts: Counts, maxWrites: Int? = nil) { (self.inner, self.counts, self.maxWrites) = (inner, counts, maxWrites) }
        /// Counts a write against `maxWrites`, refusing the one that would cross it (the core's rule).
        func counted() throws {
            if let maxWrites, writes >= maxWrites { throw EngineError.transactionTooLarge(what: "writes", limit: maxWrites) }
            writes += 1
        }
        func withValue<R>(forKey key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
            counts.gets += 1
            return try inner.withValue(forKey: key, body)
        }
        func scan(_ range: KeyRange, reverse: Bool, limit: Int?, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
            counts.seeks += 1
            try inner.scan(range, reverse: reverse, limit: limit) { k, v in
                counts.rows += 1
                return try visit(k, v)
            }
        }
        func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
            try counted()
            try (inner as! any KeyValueWriter).put(value, forKey: key)
        }
        func delete(_ key: UnsafeRawBufferPointer) throws {
            try counted()
            try (inner as! any KeyValueWriter).delete(key)
        }
        func clear(_ range: KeyRange) throws -> Int { try (inner as! any KeyValueWriter).clear(range) }
    }
}

@Suite("Queries seek")
struct SeekTests {
    @Test("with 100,000 records, a query reads k rows plus a constant, in one seek")
    func seeks() throws {
        let engine = CountingEngine(MemoryEngine())
        let store = try Store(engine: engine)
        try store.withTransaction { (ctx: TransactionContext) throws in
            for i in 0..<100_000 { try ctx.insert(Person(lastName: "L\(i % 1_000)", firstName: String(format: "F%06d", i), age: i)) }
        }
        try store.withReadTransaction { (ctx: TransactionContext) throws in
            engine.counts.reset()
            let one = try Person.select(in: ctx, RecordQuery.all.equal("L500").equal("F000500"))
            #expect(one.count == 1)
            #expect(engine.counts.rows <= 1 + 2 && engine.counts.seeks == 1, "rows \(engine.counts.rows), seeks \(engine.counts.seeks)")

            engine.counts.reset()
            let hundred = try Person.select(in: ctx, RecordQuery.all.equal("L7"))
            #expect(hundred.count == 100)
            #expect(engine.counts.rows <= 100 + 2 && engine.counts.seeks == 1, "rows \(engine.counts.rows)")

            engine.counts.reset()
            let limited = try Person.select(in: ctx, RecordQuery.all.then(Comparison<String>.greaterThanOrEqual("L5")), limit: 100, order: .descending)
            #expect(limited.count == 100)
            #expect(engine.counts.rows <= 100 + 2, "rows \(engine.counts.rows)")

            engine.counts.reset()
            #expect(try ctx.fetch(Person.self, RecordQuery.all.equal("L9").equal("F000009")) != nil)
            #expect(engine.counts.gets == 1 && engine.counts.rows == 0)
        }
        try store.close()
    }
}

/// A record with one index on a field unrelated to its key.
struct Tagged: Record {
    var id: Int
    var tag: Int
    static let recordType = RecordType(keyspace: "Tagged", version: 1, key: [("id", Int.self)])
    static let byTag = RecordIndex<Tagged>("byTag", .field("tag", \.tag))
    static let byTagCovering = RecordIndex<Tagged>("byTagCovering", .field("tag", \.tag), covering: true)
    static let indexes = [byTag, byTagCovering]
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(tag) }
    init(id: Int, tag: Int) { (self.id, self.tag) = (id, tag) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); tag = try fields.read() }
}

@Suite("Index queries seek")
struct IndexSeekTests {
    /// Reads of an index query on a store of `size` records: (seeks, rows, gets) for 20 matches.
    static func reads(size: Int) throws -> [String: (seeks: Int, rows: Int, gets: Int)] {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = CountingEngine(try BundledEngines.named("lmdb")!.open(dir.path, EngineOptions(durability: .relaxed)))
        let store = try Store(engine: engine)
        defer { try? store.close() }
        // Tags: 20 records carry tag -1; the rest spread over 1,000 values. The first record goes
        // through the record layer (it registers the indexes, readable on an empty keyspace); the
        // rest are written as RecordFormat.md lays them out, straight through the engine and in
        // key order, many times faster in a debug build. verifyIndexes checks the result at 10,000.
        func tag(_ id: Int) -> Int { id % (size / 20) == 7 ? -1 : id % 1_000 }
        try store.withTransaction { ctx in try ctx.insert(Tagged(id: 0, tag: tag(0))) }
        func value(_ id: Int) -> [UInt8] {
            var value = FieldWriter()
            value.writeVarint(1)
            value.write(tag(id))
            let key = KeyCodec.encode("Tagged", id)
            var crc = key.withUnsafeBytes { strata_crc32c_extend(0, $0.baseAddress, $0.count) }
            crc = value.bytes.withUnsafeBytes { strata_crc32c_extend(crc, $0.baseAddress, $0.count) }
            withUnsafeBytes(of: crc.littleEndian) { value.writeRaw($0) }
            return value.bytes
        }
        var byTag: [Int: [Int]] = [:]
        for id in 1..<size { byTag[tag(id), default: []].append(id) }
        try engine.inner.write { tx in  // not through the counter: it costs a cast per put
            for (name, covering) in [("byTag", false), ("byTagCovering", true)] {
                let prefix = [0] + KeyCodec.encode("ix", "Tagged", name, 1)
                for t in byTag.keys.sorted() {
                    for id in byTag[t]! { try tx.put(covering ? value(id) : [], forKey: prefix + KeyCodec.encode(t, id)) }
                }
            }
            for id in 1..<size { try tx.put(value(id), forKey: KeyCodec.encode("Tagged", id)) }
        }
        if size <= 10_000 {
            #expect(try store.withReadTransaction { ctx in try ctx.verifyIndexes(Tagged.self) }.allSatisfy { $0.isExact })
        }
        return try store.withReadTransaction { (ctx: TransactionContext) throws in
            var result: [String: (seeks: Int, rows: Int, gets: Int)] = [:]
            _ = try Tagged.byTag.count(in: ctx, .all.equal(-2))  // the type's first use reads the catalog
            for index in [Tagged.byTag, Tagged.byTagCovering] {
                engine.counts.reset()
                #expect(try index.select(in: ctx, .all.equal(-1)).count == 20)
                result[index.name] = (engine.counts.seeks, engine.counts.rows, engine.counts.gets)
            }
            return result
        }
    }

    @Test("an index query reads the same at 10,000 and 1,000,000 records: one seek plus the rows (and a get per row without covering)")
    func independentOfSize() async throws {
        // On a thread of its own: a minute of work in a debug build would hold one of the
        // cooperative pool's threads, which every other test needs.
        let (small, large) = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { (try Self.reads(size: 10_000), try Self.reads(size: 1_000_000)) })
            }
        }
        for name in ["byTag", "byTagCovering"] {
            #expect(small[name]! == large[name]!, "\(name): \(small[name]!) at 10k, \(large[name]!) at 1M")
        }
        // Rows: the 20 entries and the first one after them, which ends the scan. An equality
        // seeks to its values and checks where their entries end itself (one bound, one buffer);
        // an engine given both bounds reads that next key all the same, to compare it.
        #expect(large["byTag"]! == (seeks: 1, rows: 21, gets: 20))
        #expect(large["byTagCovering"]! == (seeks: 1, rows: 21, gets: 0))
    }
}
