import Foundation
import StrataConformance
import StrataRecords
import StrataToolSupport

/// The benchmark's compaction step: a record store filled at random, a random half of its records
/// deleted, then `Store.compact()`; its files' size before and after, the time it took, and a
/// check that the same records are there (count and a checksum of every key and payload).
enum CompactionBench {
    /// The speed issue's target: the size after at most this fraction of the size before.
    static let target = 0.6

    struct Result {
        let engine: String
        let report: CompactionReport
        let seconds: Double
    }

    static func run(engine: String, data: BenchData, root: String) throws -> Result {
        let path = "\(root)/\(engine)-compaction"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try Store(engine: try Bench.openEngine(engine, path, EngineOptions(mode: .create, durability: .relaxed)))
        defer { try? store.close() }
        let label = "  \(engine) record compaction (fill, delete a random half, compact)…"
        let ticker = Ticker(label)
        let target = RecordTarget(store: store, data: data)
        _ = try target.fill(data.randomOrder, perTransaction: 1_000, batch: min(1_000, data.count))
        var random = SeededRandom(seed: 909)
        let doomed = data.randomOrder.shuffled(using: &random).prefix(data.count / 2)
        for start in stride(from: 0, to: doomed.count, by: 1_000) {
            try store.withTransaction { ctx in
                for index in doomed.dropFirst(start).prefix(1_000) {
                    _ = try ctx.delete(BenchRecord(index: Int(index), payload: []))
                }
            }
        }
        let before = try digest(store)
        let start = DispatchTime.now().uptimeNanoseconds
        let report = try store.compact()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        ticker.stop()
        let after = try digest(store)
        guard after == before, after.count == data.count - doomed.count else {
            throw BenchFailure(description: "\(engine): \(after.count) records after the compaction (checksum \(after.sum)), \(before.count) before (\(before.sum))")
        }
        say(" \(report) in \(String(format: "%.2f", seconds)) s, \(after.count) records checked")
        return Result(engine: engine, report: report, seconds: seconds)
    }

    /// The number of records and a checksum of their keys and payloads, in key order.
    static func digest(_ store: Store) throws -> (count: Int, sum: UInt64) {
        try store.withReadTransaction { ctx in
            var count = 0
            var sum: UInt64 = 14_695_981_039_346_656_037
            for record in try ctx.select(BenchRecord.self) {
                count += 1
                for byte in [UInt64(record.group), UInt64(record.id)] + record.payload.map(UInt64.init) {
                    sum = (sum ^ byte) &* 1_099_511_628_211
                }
            }
            return (count, sum)
        }
    }

    static func targets(_ results: [Result]) -> [String] {
        results.map { result in
            let met = result.report.ratio <= target
            return "  \(met ? "met   " : "MISSED") \(result.engine) record compaction, size after / before (half deleted): "
                + String(format: "%.2f (≤ %.2f)", result.report.ratio, target)
        }
    }
}
