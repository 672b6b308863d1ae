import ArgumentParser
import CAllocationCounter
import Dispatch
import Foundation
import StrataEngine
import StrataRecords
import StrataToolSupport

/// `strata-harness reading-memory`: how much the heap grows while every record of a store is read
/// through a cursor, an async stream and record views. The high-water mark (mallinfo2's
/// uordblks + hblkhd) is sampled every 1,000 rows. Reading millions of records must stay flat.
struct ReadingMemory: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reading-memory", abstract: "Heap growth while reading every record (a test helper).", shouldDisplay: false)

    @Option var engine: EngineChoice
    @Option var records = 10_000

    func run() throws {
        let (store, path) = try BenchRecord.filledStore(engine, records: records)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let query = Query<BenchRecord>()
        // A full pass first, so the engines' own caches (LevelDB's block cache, SQLite's page
        // cache, 2 to 8 MiB) are at their steady size before anything is measured.
        try store.withReadTransaction { ctx in try query.forEachView(in: ctx) { _ in true } }
        // Each way is measured twice and the smaller growth kept: the heap is the process's, and an
        // engine's background work (a LevelDB compaction after the fill, slower on a loaded
        // machine) can overlap one pass (seen once: 1.4 MiB in a cursor pass of 100,000 records);
        // a reader that keeps what it reads grows in both.
        func twice(_ measure: () throws -> UInt64) rethrows -> UInt64 { min(try measure(), try measure()) }
        let cursor = try twice { try HeapWatch.growth(expecting: records) { watch in
            try store.withReadTransaction { ctx in
                let cursor = query.cursor(in: ctx)
                while let record = try cursor.next() { watch.row(record.payload.count) }
            }
        } }
        let stream = try twice { try HeapWatch.growth(expecting: records) { watch in
            let done = DispatchSemaphore(value: 0)
            let outcome = Outcome()
            Task {
                do {
                    for try await record in query.stream(from: store) { watch.row(record.payload.count) }
                } catch {
                    outcome.error = error
                }
                done.signal()
            }
            done.wait()
            if let error = outcome.error { throw error }
        } }
        let views = try twice { try HeapWatch.growth(expecting: records) { watch in
            try store.withReadTransaction { ctx in
                try query.forEachView(in: ctx) { view in
                    var fields = view.fieldReader()
                    watch.row(try fields.readBytes().count)
                    return true
                }
            }
        } }
        try store.close()
        say("heap growth KiB: cursor \(cursor / 1_024) stream \(stream / 1_024) view \(views / 1_024) (\(records) rows)")
    }
}

/// Samples the heap every 1,000 rows; reports the high-water mark above the start.
///
/// `@unchecked Sendable`: used by the one thread that scans; handed to it, never shared.
final class HeapWatch: @unchecked Sendable {
    private let start = strata_heap_in_use()
    private var high: UInt64 = 0
    private var rows = 0
    private(set) var sum = 0

    func row(_ bytes: Int) {
        sum &+= bytes
        rows += 1
        if rows % 1_000 == 0 { high = max(high, strata_heap_in_use()) }
    }

    /// The heap's growth while `body` reads; throws unless it read `expected` rows.
    static func growth(expecting expected: Int, _ body: (HeapWatch) throws -> Void) throws -> UInt64 {
        let watch = HeapWatch()
        try body(watch)
        guard watch.rows == expected else { throw ValidationError("read \(watch.rows) rows of \(expected)") }
        watch.high = max(watch.high, strata_heap_in_use())
        return watch.high > watch.start ? watch.high - watch.start : 0
    }
}

// `@unchecked Sendable`: written by the scanning thread before it signals, read after the wait.
private final class Outcome: @unchecked Sendable {
    var error: (any Error)?
}
