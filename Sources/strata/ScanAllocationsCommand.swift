import ArgumentParser
import CAllocationCounter
import Foundation
import StrataEngine
import StrataKeyCodec
import StrataRecords

/// `strata scan-allocations`: heap allocations per row of a full scan through the engine, the
/// record layer's views (`forEachView`) and materialized records (`forEach`), in this process
/// (the counting interposer is linked into the tool). The view test asserts on its output.
struct ScanAllocations: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan-allocations", abstract: "Count allocations per scanned row (a test helper).", shouldDisplay: false)

    @Option var engine: EngineChoice
    @Option var records = 20_000

    func run() throws {
        let (store, path) = try BenchRecord.filledStore(engine, records: records)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rows = Double(records)
        var sum = 0
        func count(_ pass: () throws -> Void) rethrows -> Double {
            try pass()  // warm-up: caches, lazily built buffers
            let before = strata_allocation_count()
            try pass()
            return Double(strata_allocation_count() - before) / rows
        }
        // The engine's own scan, in a transaction of its own (one transaction per pass counts
        // the transaction's constant cost, spread over the rows).
        let engineScan = try count {
            try store.engine.read { tx in try tx.scan(.all, reverse: false, limit: nil) { _, value in sum &+= value.count; return true } }
        }
        let (views, materialized) = try store.withReadTransaction { ctx -> (Double, Double) in
            let views = try count {
                try ctx.forEachView(BenchRecord.self) { view in
                    var key = view.keyReader()
                    sum &+= try key.read(Int.self) &+ key.read(Int.self)
                    var fields = view.fieldReader()
                    sum &+= try fields.readBytes().count
                    return true
                }
            }
            let materialized = try count {
                try ctx.forEach(BenchRecord.self) { record in
                    sum &+= record.payload.count
                    return true
                }
            }
            return (views, materialized)
        }
        let checksum = sum
        try store.close()
        say(String(format: "engine-scan %.3f view %.3f record %.3f allocations per row (%d rows, checksum %d)",
                   engineScan, views, materialized, records, checksum))
    }
}

extension BenchRecord {
    /// A new store in a temporary directory holding `records` bench records (1,000 per
    /// transaction), and its path (for the caller to remove).
    static func filledStore(_ engine: EngineChoice, records: Int) throws -> (Store, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-reading-\(UUID().uuidString)").path
        let store = try Store(engine: try engine.open(path, EngineOptions(mode: .create)))
        let payload = [UInt8](repeating: 0x61, count: 100)
        for start in stride(from: 0, to: records, by: 1_000) {
            try store.withTransaction { ctx in
                for i in start..<min(start + 1_000, records) { try ctx.insert(BenchRecord(index: i, payload: payload)) }
            }
        }
        return (store, path)
    }
}
