import ArgumentParser
import Dispatch
import Foundation
import StrataBundledEngines
import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataRecords
import StrataToolSupport

// Records for the index benchmark: a key, three integer fields unrelated to it (each a
// permutation of the ids, so an equality lookup finds one record) and a 100-byte payload. The
// four types share the layout and differ only in their indexes.

struct IndexBenchFields: Sendable {
    var id, a, b, c: Int
    var payload: [UInt8]
}

protocol IndexBenchRecord: Record {
    var fields: IndexBenchFields { get }
    init(_ fields: IndexBenchFields)
}

extension IndexBenchRecord {
    static var recordType: RecordType { indexBenchType }
    var a: Int { fields.a }
    var b: Int { fields.b }
    var c: Int { fields.c }
    func writeKey(to key: inout KeyWriter) { key.append(fields.id) }
    func writeFields(to writer: inout FieldWriter) {
        writer.write(fields.a); writer.write(fields.b); writer.write(fields.c); writer.write(fields.payload)
    }
    init(key: inout KeyReader, fields reader: inout FieldReader) throws {
        self.init(IndexBenchFields(id: try key.read(), a: try reader.read(), b: try reader.read(), c: try reader.read(), payload: try reader.read()))
    }
}

private let indexBenchType = RecordType(keyspace: "IndexBench", version: 1, key: [("id", Int.self)])

struct NoIndex: IndexBenchRecord {
    let fields: IndexBenchFields
    init(_ fields: IndexBenchFields) { self.fields = fields }
}

struct OneIndex: IndexBenchRecord {
    let fields: IndexBenchFields
    init(_ fields: IndexBenchFields) { self.fields = fields }
    static let byA = RecordIndex<OneIndex>("byA", .field("a", \.a))
    static let indexes = [byA]
}

struct ThreeIndexes: IndexBenchRecord {
    let fields: IndexBenchFields
    init(_ fields: IndexBenchFields) { self.fields = fields }
    static let indexes = [RecordIndex<ThreeIndexes>("byA", .field("a", \.a)), RecordIndex<ThreeIndexes>("byB", .field("b", \.b)),
                          RecordIndex<ThreeIndexes>("byC", .field("c", \.c))]
}

struct CoveringIndex: IndexBenchRecord {
    let fields: IndexBenchFields
    init(_ fields: IndexBenchFields) { self.fields = fields }
    static let byA = RecordIndex<CoveringIndex>("byA", .field("a", \.a), covering: true)
    static let indexes = [byA]
}

/// `strata bench-indexes`: what secondary indexes cost and give, per engine (release build).
struct IndexBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-indexes",
        abstract: "Measure secondary indexes: fills with 0, 1 and 3 indexes, indexed lookups against key lookups, an online build.")

    @Option(help: "Records per store.") var records = 100_000
    @Option(help: "Lookups per kind.") var lookups = 20_000
    @Option(parsing: .upToNextOption, help: "Engines: lmdb leveldb sqlite.") var engines: [String] = ["lmdb", "leveldb", "sqlite"]
    @Option(help: "Scratch directory for the stores (removed afterwards).") var scratch = NSTemporaryDirectory()

    func run() throws {
        #if DEBUG
        say("note: this is a debug build; figures mean little. Use: swift run -c release strata bench-indexes")
        #endif
        let root = (scratch as NSString).appendingPathComponent("strata-bench-indexes-\(getpid())")
        defer { try? FileManager.default.removeItem(atPath: root) }
        var random = SeededRandom(seed: 42)
        let data = (0..<records).map { id in
            IndexBenchFields(id: id, a: 0, b: 0, c: 0, payload: (0..<100).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
        // a, b and c: permutations of the ids; inserts in random key order.
        var fields = data
        for (i, value) in Array(0..<records).shuffled(using: &random).enumerated() { fields[i].a = value }
        for (i, value) in Array(0..<records).shuffled(using: &random).enumerated() { fields[i].b = value }
        for (i, value) in Array(0..<records).shuffled(using: &random).enumerated() { fields[i].c = value }
        let order = fields.shuffled(using: &random)
        let probes = (0..<lookups).map { _ in Int.random(in: 0..<records, using: &random) }
        say("Index benchmark: \(records) records (Int key, three Int fields, 100-byte payload), fills of 1,000 per transaction, \(lookups) lookups")
        for engine in engines {
            guard let kind = BundledEngines.named(engine) else { throw ValidationError("unknown engine \(engine)") }
            var paths: [String] = []
            func store() throws -> Store {
                paths.append("\(root)/\(engine)-\(paths.count)")
                return try Store(engine: try kind.open(paths.last!, EngineOptions(durability: .relaxed)))
            }
            // Fills.
            let none = try store(), one = try store(), three = try store(), covering = try store()
            // Each fill is timed in five consecutive fifths, and each lookup kind in five
            // interleaved rounds: a target is met when the median of its five ratios meets it
            // (one slow moment on a shared machine moves one round, not the verdict).
            let fill0 = try Self.fill(none, NoIndex.self, order)
            let fill1 = try Self.fill(one, OneIndex.self, order)
            let fill3 = try Self.fill(three, ThreeIndexes.self, order)
            _ = try Self.fill(covering, CoveringIndex.self, order)
            // Bulk imports of the same records in the same order (importRecords, sorted batches).
            let import0 = try Self.importFill(try store(), NoIndex.self, order)
            let import1 = try Self.importFill(try store(), OneIndex.self, order)
            // Each indexed lookup is compared with key lookups in the same store: on LevelDB a
            // store that also holds index entries has more files for every read to look through,
            // so a key lookup in the unindexed store (also shown) would charge the index for that.
            var byKey: [Double] = [], byKeyOne: [Double] = [], byKeyCovering: [Double] = [], byIndex: [Double] = [], byCovering: [Double] = []
            func keyLookups<R: IndexBenchRecord>(_ store: Store, _: R.Type) throws -> Double {
                try Self.time(probes.count) {
                    try store.withReadTransaction { ctx in
                        for id in probes { _ = try ctx.fetch(R.self) { $0.append(id) } }  // as the macro's fetch(in:id:)
                    }
                }
            }
            for _ in 0..<Self.rounds {
                byKey.append(try keyLookups(none, NoIndex.self))
                byKeyOne.append(try keyLookups(one, OneIndex.self))
                byKeyCovering.append(try keyLookups(covering, CoveringIndex.self))
                // The call the macro generates for `OneIndex.byA.select(in: ctx, a: a)` (this
                // command is built without the macro, to keep swift-syntax out of `make run`).
                byIndex.append(try Self.time(probes.count) {
                    try one.withReadTransaction { ctx in for a in probes { _ = try OneIndex.byA.select(in: ctx) { $0.append(a) } } }
                })
                byCovering.append(try Self.time(probes.count) {
                    try covering.withReadTransaction { ctx in for a in probes { _ = try CoveringIndex.byA.select(in: ctx) { $0.append(a) } } }
                })
            }
            for s in [one, three, covering] { try s.close() }
            // An online build over the unindexed store, with a writer committing one record at a time.
            let build = try Self.build(none, path: paths[0], kind: kind, records: records)
            let r = { (x: Double, base: Double) in String(format: "%.2f×", x / base) }
            let total = { (fifths: [Double]) in fifths.reduce(0, +) }
            let fillRatio1 = Self.medianRatio(fill1, fill0), fillRatio3 = Self.medianRatio(fill3, fill0)
            let indexRatio = Self.medianRatio(byIndex, byKeyOne), coveringRatio = Self.medianRatio(byCovering, byKeyCovering)
            say("")
            say("\(engine):")
            say(String(format: "  fillrandom      no index %8.0f rec/s   1 index %8.0f rec/s (%@ the time)   3 indexes %8.0f rec/s (%@ the time)",
                       Double(records) / total(fill0), Double(records) / total(fill1), r(total(fill1), total(fill0)),
                       Double(records) / total(fill3), r(total(fill3), total(fill0))))
            say(String(format: "  lookup (µs)     by index %6.2f (by key in that store %6.2f)   by covering index %6.2f (by key %6.2f)   by key, unindexed store %6.2f   (medians of %d rounds)",
                       Self.median(byIndex) * 1e6, Self.median(byKeyOne) * 1e6, Self.median(byCovering) * 1e6, Self.median(byKeyCovering) * 1e6,
                       Self.median(byKey) * 1e6, Self.rounds))
            say(String(format: "  median ratios   1 index fill %.2f×   3 indexes fill %.2f×   lookup by index / by key %.2f×   by covering index / by key %.2f×",
                       fillRatio1, fillRatio3, indexRatio, coveringRatio))
            say(String(format: "  online build    %8.0f rec/s; a concurrent writer's commits: p50 %.0f µs, p99 %.0f µs (idle: p50 %.0f µs, p99 %.0f µs), %d during the build",
                       build.rate, build.during.p50, build.during.p99, build.idle.p50, build.idle.p99, build.during.count))
            let importRatio = Self.medianRatio(import1, import0)
            say(String(format: "  bulk import     no index %8.0f rec/s (%.2f× the insert fill's time)   1 index %8.0f rec/s (%.2f× the insert fill's)   1 index / no index %.2f×",
                       Double(records) / total(import0), total(import0) / total(fill0), Double(records) / total(import1), total(import1) / total(fill1), importRatio))
            let met1 = fillRatio1 <= 2, metNon = indexRatio <= 2.5, metCov = coveringRatio <= 1.5, metImport = importRatio <= Self.importTarget
            say("  targets (median of \(Self.rounds) rounds): 1 index ≤ 2× no index on fillrandom: \(met1 ? "met" : "missed"); non-covering lookup ≤ 2.5× a key lookup: \(metNon ? "met" : "missed"); covering ≤ 1.5×: \(metCov ? "met" : "missed"); bulk import with 1 index ≤ \(Self.importTarget)× no index: \(metImport ? "met" : "missed")")
        }
    }

    /// Rounds per measured figure (#22: a target is met when the median of 5 rounds meets it).
    static let rounds = 5

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// The median of the rounds' ratios `x[i] / base[i]`.
    static func medianRatio(_ x: [Double], _ base: [Double]) -> Double { median(zip(x, base).map { $0 / $1 }) }

    /// Seconds to insert `order` in transactions of 1,000, per fifth of it (in order).
    static func fill<R: IndexBenchRecord>(_ store: Store, _: R.Type, _ order: [IndexBenchFields]) throws -> [Double] {
        var fifths: [Double] = []
        for round in 0..<rounds {
            let slice = order[(order.count * round / rounds)..<(order.count * (round + 1) / rounds)]
            fifths.append(try time(1) {
                var start = slice.startIndex
                while start < slice.endIndex {
                    let end = min(start + 1_000, slice.endIndex)
                    try store.withTransaction { ctx in for f in slice[start..<end] { try ctx.insert(R(f)) } }
                    start = end
                }
            })
        }
        return fifths
    }

    /// The speed issue's target for a bulk import with one index against one without.
    static let importTarget = 1.5

    /// Seconds to import `order` with `Store.importRecords` (batches of 5,000), per fifth of it.
    static func importFill<R: IndexBenchRecord>(_ store: Store, _: R.Type, _ order: [IndexBenchFields]) throws -> [Double] {
        defer { try? store.close() }
        var fifths: [Double] = []
        for round in 0..<rounds {
            let slice = order[(order.count * round / rounds)..<(order.count * (round + 1) / rounds)]
            fifths.append(try time(1) { try store.importRecords(slice.lazy.map { R($0) }, batchSize: 5_000) })
        }
        return fifths
    }

    /// Seconds per operation of `body`, which does `operations` of them.
    static func time(_ operations: Int, _ body: () throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 / Double(operations)
    }

    struct Latencies { var p50 = 0.0, p99 = 0.0, count = 0 }

    /// Builds `OneIndex.byA` online over the unindexed store at `path` while this thread commits
    /// single-record transactions; the build's rate, and the commit latencies (µs) during the
    /// build and, before it, on the idle store.
    static func build(_ store: Store, path: String, kind: EngineKind, records: Int) throws -> (rate: Double, during: Latencies, idle: Latencies) {
        let idle = try commits(store, ids: records..<(records + 500), { NoIndex(IndexBenchFields(id: $0, a: -$0, b: 0, c: 0, payload: [])) }) { true }
        try store.close()
        // The same store, now declaring an index: a new Store (one Swift type per keyspace and store).
        let indexed = try Store(engine: try kind.open(path, EngineOptions(mode: .openExisting, durability: .relaxed)))
        defer { try? indexed.close() }
        let start = DispatchTime.now().uptimeNanoseconds
        let job = indexed.prepare(OneIndex.self)
        let during = try commits(indexed, ids: (records + 500)..<(records + 1_000_000), { OneIndex(IndexBenchFields(id: $0, a: -$0, b: 0, c: 0, payload: [])) }) {
            !job.isFinished
        }
        let report = try job.wait()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return (Double(report.recordsIndexed) / seconds, during, idle)
    }

    /// Commits one record per transaction while `running`; the latencies (µs).
    static func commits<R: Record>(_ store: Store, ids: Range<Int>, _ make: (Int) -> R, while running: () -> Bool) throws -> Latencies {
        var nanos: [UInt64] = []
        for id in ids where running() {
            let t = DispatchTime.now().uptimeNanoseconds
            try store.withTransaction { ctx in try ctx.insert(make(id)) }
            nanos.append(DispatchTime.now().uptimeNanoseconds - t)
        }
        nanos.sort()
        guard !nanos.isEmpty else { return Latencies() }
        return Latencies(p50: Double(nanos[nanos.count / 2]) / 1e3, p99: Double(nanos[nanos.count * 99 / 100]) / 1e3, count: nanos.count)
    }
}
