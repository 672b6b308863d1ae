import Foundation
import StrataBundledEngines
import StrataEngine
import Testing

/// The borrowing scan (`forEachView`) allocates nothing per row beyond the engine's own scan;
/// materializing records does (so the counter is seen to count). Measured in the `strata` tool,
/// whose process has the counting malloc interposer and runs nothing else meanwhile.
@Suite("Record views allocate nothing per row")
struct ViewAllocationTests {
    @Test("a scan of 20,000 records: views within 0.05 allocations per row of the engine's scan, records at least 1 more",
          arguments: BundledEngines.all.map(\.name))
    func viewsDoNotAllocate(engine: String) throws {
        let run = try runProgram(strataTool, ["scan-allocations", "--engine", engine, "--records", "20000"])
        #expect(run.status == 0, "\(run.output)")
        // "engine-scan E view V record R allocations per row …"
        let words = run.output.split(separator: " ")
        func figure(after label: String) -> Double? {
            words.firstIndex(of: Substring(label)).flatMap { Double(words[$0 + 1]) }
        }
        let engineScan = try #require(figure(after: "engine-scan"), "\(run.output)")
        let view = try #require(figure(after: "view"), "\(run.output)")
        let record = try #require(figure(after: "record"), "\(run.output)")
        #expect(view - engineScan < 0.05, "\(engine): \(run.output)")
        #expect(record - view >= 1, "materialized records allocate (the counter counts): \(run.output)")
    }
}
