import Foundation
import StrataConformance

/// The benchmark's workloads, in the style of LevelDB's db_bench.
enum Workload: String, CaseIterable, Codable {
    case fillseq, fillrandom, readrandom, scanforward, scanreverse, scan100, fillsync

    /// Whether the workload only reads in key order (the ones the view layer runs).
    var isScan: Bool { self == .scanforward || self == .scanreverse || self == .scan100 }

    var summary: String {
        switch self {
        case .fillseq: return "sequential fill, one transaction"
        case .fillrandom: return "random fill, 1,000 per transaction"
        case .readrandom: return "point reads of every key, random order"
        case .scanforward: return "full forward scan"
        case .scanreverse: return "full reverse scan"
        case .scan100: return "scans of 100 from random start keys"
        case .fillsync: return "single-record transactions, full durability"
        }
    }
}

/// Which implementation a figure is for.
enum Layer: String, CaseIterable, Codable {
    /// The C library through its own API: the yardstick.
    case raw = "raw C"
    /// Strata's KeyValueEngine adapter.
    case engine
    /// Strata's record layer (Store, a record with a composite key).
    case record
    /// The record layer's borrowing scan (`forEachView`): scan workloads only.
    case view
}

/// The data every implementation writes: the same keys and values, in memory the benchmark
/// owns (allocated once, freed in deinit), so keys and values are lent without copies.
final class BenchData {
    let count: Int
    /// 16-byte keys: the index big-endian, then 8 fixed bytes.
    let keys: UnsafeMutableRawBufferPointer
    /// 100-byte values: half random, half repeated (compressible, as db_bench's).
    let values: UnsafeMutableRawBufferPointer
    /// A random permutation of 0..<count, and the identity.
    let randomOrder: [UInt32]
    let sequentialOrder: [UInt32]
    /// Start keys of the short scans: the first key of a random group of 1,000.
    let scanStarts: [Int]
    static let keyLength = 16, valueLength = 100

    init(count: Int, scans: Int, seed: UInt64 = 301) {
        self.count = count
        var rng = SeededRandom(seed: seed)
        keys = .allocate(byteCount: count * Self.keyLength, alignment: 8)
        values = .allocate(byteCount: count * Self.valueLength, alignment: 8)
        let suffix = Array("strata!!".utf8)
        for i in 0..<count {
            keys.storeBytes(of: UInt64(i).bigEndian, toByteOffset: i * 16, as: UInt64.self)
            for j in 0..<8 { keys[i * 16 + 8 + j] = suffix[j] }
            for j in 0..<50 { values[i * 100 + j] = UInt8(truncatingIfNeeded: rng.next()) }
            for j in 50..<100 { values[i * 100 + j] = UInt8(0x61 + (i + j) % 4) }
        }
        sequentialOrder = (0..<UInt32(count)).map { $0 }
        var order = sequentialOrder
        order.shuffle(using: &rng)
        randomOrder = order
        // At a record group's first key, so that every layer's scan (the record layer's starts
        // at a group) reads the same 100 rows and their checksums can be compared.
        scanStarts = (0..<scans).map { _ in Int.random(in: 0..<count, using: &rng) / 1_000 * 1_000 }
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    /// Key `i`, valid while this object lives.
    func key(_ i: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: keys[(i * 16)..<(i * 16 + 16)]) }

    /// Value `i`, valid while this object lives.
    func value(_ i: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: values[(i * 100)..<(i * 100 + 100)]) }

    /// The start keys of the short scans, packed.
    var packedScanStarts: [UInt8] { scanStarts.flatMap { Array(key($0)) } }
}

/// One measured figure.
struct BenchResult: Codable {
    var engine: String
    var layer: Layer
    var workload: Workload
    var operations: Int
    var seconds: Double
    /// Per-operation latency from the batch timings, in microseconds.
    var p50Micros: Double
    var p99Micros: Double
    /// The figure divided by raw C's for the same engine and workload (across rounds: the median
    /// of each round's ratio).
    var ratioToRaw: Double?
    /// fillseq: the heap's high-water mark above its start during the one transaction, in bytes.
    var heapHighWater: UInt64?
    /// The rounds this figure is the median of.
    var rounds = 1

    var opsPerSecond: Double { Double(operations) / seconds }
}

/// Per-batch timings → throughput and latency percentiles.
struct Timings {
    var batchNanos: [UInt64]
    var opsPerBatch: Int

    func percentile(_ p: Double) -> Double {
        guard !batchNanos.isEmpty else { return 0 }
        let sorted = batchNanos.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))
        return Double(sorted[index]) / Double(opsPerBatch) / 1_000
    }
}

/// Monotonic nanoseconds.
func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
