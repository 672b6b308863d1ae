import Foundation
import StrataRecords
import StrataBundledEngines
import StrataEngine
import StrataMemory
import Testing

/// Counts the rows an engine hands out and the seeks it makes: the proof that queries seek
/// to their first key and stop after their last (O(log n + k)).
final class CountingEngine: KeyValueEngine, @unchecked Sendable {
    let inner: any KeyValueEngine
    var engineName: String { inner.engineName }
    var capabilities: EngineCapabilities { inner.capabilities }
    let counts = Counts()

    final class Counts: @unchecked Sendable {
        var rows = 0, seeks = 0, gets = 0
        func reset() { (rows, seeks, gets) = (0, 0, 0) }
    }

    init(_ inner: any KeyValueEngine) { self.inner = inner }

    func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R { try inner.read { try body(Counting(inner: $0, counts: counts)) } }
    func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R {
        try inner.write { try body(Counting(inner: $0, counts: counts)) }
    }
    func read<R: Sendable>(_ body: @Sendable (any KeyValueReader) throws -> R) async throws -> R { try await readOnTransactionThread(body) }
    func write<R: Sendable>(_ body: @Sendable (any KeyValueWriter) throws -> R) async throws -> R { try await writeOnTransactionThread(body) }
    func close() throws { try inner.close() }

    final class Counting: KeyValueWriter {
        let inner: any KeyValueReader
        let counts: Counts
        init(inner: any KeyValueReader, counts: Counts) { (self.inner, self.counts) = (inner, counts) }
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
        func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws { try (inner as! any KeyValueWriter).put(value, forKey: key) }
        func delete(_ key: UnsafeRawBufferPointer) throws { try (inner as! any KeyValueWriter).delete(key) }
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
