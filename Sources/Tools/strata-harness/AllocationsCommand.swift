import ArgumentParser
import CAllocationCounter
import Foundation
import StrataEngine
import StrataKeyCodec
import StrataRecords
import StrataToolSupport

/// `strata-harness allocations`: heap allocations per operation, counted by the malloc
/// interposer linked into this tool (`CAllocationCounter`): per row of a full scan through the
/// engine, the record layer's views (`forEachView`) and materialized records (`forEach`); then per
/// point operation inside one transaction (an engine put and get, a record insert and fetch). The
/// view test asserts on the first line. (These counts were the benchmark's allocs/op column: they
/// are exact, so they live here rather than in a timing run of a product binary.)
struct Allocations: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "allocations", abstract: "Count allocations per scanned row and per point operation.")

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
        try pointOperations()
    }

    /// Allocations per point operation, each kind over the same keys in one transaction (its own
    /// constant cost spread over them), after a warm-up pass (so the second pass's writes
    /// replace). The engine's own operations run on an engine of their own.
    func pointOperations() throws {
        let operations = min(records, 10_000)
        let (store, path) = try BenchRecord.filledStore(engine, records: 0)
        let enginePath = path + "-engine"
        let plain = try engine.open(enginePath, EngineOptions(mode: .create))
        defer {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: enginePath)
        }
        let payload = [UInt8](repeating: 0x62, count: 100)
        let keys = (0..<operations).map { i in withUnsafeBytes(of: UInt64(i).bigEndian) { [UInt8]($0) } }
        var sum = 0
        func count(_ pass: () throws -> Void) rethrows -> Double {
            try pass()
            let before = strata_allocation_count()
            try pass()
            return Double(strata_allocation_count() - before) / Double(operations)
        }
        let put = try count {
            try plain.write { tx in
                for key in keys { try key.withUnsafeBytes { k in try payload.withUnsafeBytes { v in try tx.put(v, forKey: k) } } }
            }
        }
        let get = try count {
            try plain.read { tx in
                for key in keys { sum &+= try key.withUnsafeBytes { k in try tx.withValue(forKey: k) { $0?.count ?? 0 } } }
            }
        }
        let insert = try count {
            try store.withTransaction { ctx in for i in 0..<operations { try ctx.insert(BenchRecord(index: i, payload: payload)) } }
        }
        let fetch = try count {
            try store.withReadTransaction { ctx in
                for i in 0..<operations {
                    sum &+= try ctx.fetch(BenchRecord.self) { key in key.append(i / 1_000); key.append(i % 1_000) }?.payload.count ?? 0
                }
            }
        }
        let checksum = sum
        try store.close()
        try plain.close()
        say(String(format: "engine-put %.2f engine-get %.2f record-insert %.2f record-fetch %.2f allocations per operation (%d operations, checksum %d)",
                   put, get, insert, fetch, operations, checksum))
    }
}
