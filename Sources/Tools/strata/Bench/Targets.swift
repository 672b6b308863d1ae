import CRawBench
import Foundation
import StrataRecords
import StrataEngine
import StrataToolSupport

/// One implementation under measurement: raw C, Strata's engine layer, or its record layer.
protocol BenchTarget: AnyObject {
    /// The sum of `rb_checksum` over every value (every record's payload) the last read, scan or
    /// scans saw: each layer reads every value byte, and must agree with raw C.
    var checksum: UInt64 { get }
    /// The heap's high-water mark above its start during the last fill (0: not measured).
    var heapHighWater: UInt64 { get }
    func fill(_ order: [UInt32], perTransaction: Int, batch: Int) throws -> [UInt64]
    func read(_ order: [UInt32], batch: Int) throws -> [UInt64]
    func scan(reverse: Bool, batch: Int) throws -> [UInt64]
    func scans(length: Int) throws -> [UInt64]
    func close() throws
}

/// Times every `batch` operations of a loop into an array.
struct BatchClock {
    let batch: Int
    var nanos: [UInt64] = []
    var mark = now()
    var done = 0
    /// Heap in use above the start, at its highest at the end of a batch (when sampled).
    let sampleHeap: Bool
    let heapAtStart: UInt64
    var heapHighWater: UInt64 = 0
    init(batch: Int, sampleHeap: Bool = false) {
        self.batch = batch
        self.sampleHeap = sampleHeap
        heapAtStart = sampleHeap ? HeapProbe.inUse() : 0
    }

    mutating func tick() {
        done += 1
        if done % batch == 0 { lap() }
    }

    mutating func lap() {
        if sampleHeap {
            let inUse = HeapProbe.inUse()
            heapHighWater = max(heapHighWater, inUse > heapAtStart ? inUse - heapAtStart : 0)
        }
        let t = now()
        nanos.append(t - mark)
        mark = t
    }

    mutating func finish() -> [UInt64] {
        if done % batch != 0 { lap() }
        return nanos
    }
}

/// Runs `transaction` over `order` in slices of `perTransaction`, timing every `batch` writes;
/// `transaction` calls `tick` after each write but the last, whose tick comes after the commit,
/// so commits count in the batch where they fall. Also returns the heap's high-water mark above
/// its start, sampled at every batch (`uordblks + hblkhd`).
func timedFill(
    _ order: [UInt32], perTransaction: Int, batch: Int,
    _ transaction: (_ indices: Range<Int>, _ tick: () -> Void) throws -> Void
) rethrows -> (nanos: [UInt64], heapHighWater: UInt64) {
    var clock = BatchClock(batch: batch, sampleHeap: true)
    var next = 0
    while next < order.count {
        let end = min(next + perTransaction, order.count)
        try transaction(next..<end) { clock.tick() }
        clock.tick()
        next = end
    }
    let nanos = clock.finish()
    return (nanos, clock.heapHighWater)
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
}

/// `rb_checksum` of a value's bytes (the yardstick's function, so every layer does the same work).
@inline(__always)
func valueChecksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 { rb_checksum(bytes.baseAddress, bytes.count) }

/// The C library through its own API.
final class RawTarget: BenchTarget {
    let store: OpaquePointer
    let data: BenchData
    var checksum: UInt64 = 0
    var heapHighWater: UInt64 = 0

    init(engine: String, path: String, durable: Bool, data: BenchData) throws {
        let code: Int32 = engine == "lmdb" ? Int32(RB_LMDB) : engine == "leveldb" ? Int32(RB_LEVELDB) : Int32(RB_SQLITE)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard let store = rb_open(code, path, durable ? 1 : 0) else { throw BenchFailure(description: String(cString: rb_error())) }
        self.store = store
        self.data = data
    }

    private func check(_ rc: Int32) throws { if rc != 0 { throw BenchFailure(description: String(cString: rb_error())) } }

    func fill(_ order: [UInt32], perTransaction: Int, batch: Int) throws -> [UInt64] {
        var nanos = [UInt64](repeating: 0, count: (order.count + batch - 1) / batch)
        try check(rb_fill(store, data.keys.baseAddress!.assumingMemoryBound(to: UInt8.self), 16,
                          data.values.baseAddress!.assumingMemoryBound(to: UInt8.self), 100, order, order.count, perTransaction, batch, &nanos))
        return nanos
    }

    func read(_ order: [UInt32], batch: Int) throws -> [UInt64] {
        var nanos = [UInt64](repeating: 0, count: (order.count + batch - 1) / batch)
        var found: UInt64 = 0
        checksum = 0
        try check(rb_read(store, data.keys.baseAddress!.assumingMemoryBound(to: UInt8.self), 16, order, order.count, batch, &nanos, &found, &checksum))
        guard found == UInt64(order.count) else { throw BenchFailure(description: "raw read found \(found) of \(order.count)") }
        return nanos
    }

    func scan(reverse: Bool, batch: Int) throws -> [UInt64] {
        var nanos = [UInt64](repeating: 0, count: data.count / batch + 2)
        var rows: UInt64 = 0
        checksum = 0
        try check(rb_scan(store, reverse ? 1 : 0, batch, &nanos, nanos.count, &rows, &checksum))
        guard rows == UInt64(data.count) else { throw BenchFailure(description: "raw scan saw \(rows) rows of \(data.count)") }
        return Array(nanos.prefix((data.count + batch - 1) / batch))
    }

    func scans(length: Int) throws -> [UInt64] {
        var nanos = [UInt64](repeating: 0, count: data.scanStarts.count)
        var rows: UInt64 = 0
        checksum = 0
        let starts = data.packedScanStarts
        try check(rb_scans(store, starts, 16, data.scanStarts.count, length, &nanos, &rows, &checksum))
        return nanos
    }

    func close() throws { rb_close(store) }
}

/// Strata's engine layer: the KeyValueEngine adapter, with borrowed bytes.
final class EngineTarget: BenchTarget {
    let engine: any KeyValueEngine
    let data: BenchData
    var checksum: UInt64 = 0
    var heapHighWater: UInt64 = 0

    init(engine: any KeyValueEngine, data: BenchData) {
        self.engine = engine
        self.data = data
    }

    func fill(_ order: [UInt32], perTransaction: Int, batch: Int) throws -> [UInt64] {
        let (nanos, heap) = try timedFill(order, perTransaction: perTransaction, batch: batch) { indices, tick in
            try engine.write { tx in
                for i in indices {
                    try tx.put(data.value(Int(order[i])), forKey: data.key(Int(order[i])))
                    if i + 1 < indices.upperBound { tick() }
                }
            }
        }
        heapHighWater = heap
        return nanos
    }

    func read(_ order: [UInt32], batch: Int) throws -> [UInt64] {
        var clock = BatchClock(batch: batch)
        var found = 0, sum: UInt64 = 0
        try engine.read { tx in
            for i in order {
                try tx.withValue(forKey: data.key(Int(i))) { value in
                    guard let value else { return }
                    found += 1
                    sum &+= valueChecksum(value)
                }
                clock.tick()
            }
        }
        checksum = sum
        guard found == order.count else { throw BenchFailure(description: "read found \(found) of \(order.count)") }
        return clock.finish()
    }

    func scan(reverse: Bool, batch: Int) throws -> [UInt64] {
        var clock = BatchClock(batch: batch)
        var sum: UInt64 = 0
        try engine.read { tx in
            try tx.scan(.all, reverse: reverse, limit: nil) { _, value in
                sum &+= valueChecksum(value)
                clock.tick()
                return true
            }
        }
        checksum = sum
        guard clock.done == data.count else { throw BenchFailure(description: "scan saw \(clock.done) rows of \(data.count)") }
        return clock.finish()
    }

    func scans(length: Int) throws -> [UInt64] {
        var nanos: [UInt64] = []
        var sum: UInt64 = 0
        try engine.read { tx in
            for start in data.scanStarts {
                let t = now()
                let key = Array(data.key(start))
                try tx.scan(KeyRange(lower: .inclusive(key)), reverse: false, limit: length) { _, value in
                    sum &+= valueChecksum(value)
                    return true
                }
                nanos.append(now() - t)
            }
        }
        checksum = sum
        return nanos
    }

    func close() throws { try engine.close() }
}

/// Strata's record layer: a Store and BenchRecord.
class RecordTarget: BenchTarget {
    let store: Store
    let data: BenchData
    var checksum: UInt64 = 0
    var heapHighWater: UInt64 = 0

    init(store: Store, data: BenchData) {
        self.store = store
        self.data = data
    }

    func fill(_ order: [UInt32], perTransaction: Int, batch: Int) throws -> [UInt64] {
        let (nanos, heap) = try timedFill(order, perTransaction: perTransaction, batch: batch) { indices, tick in
            try store.withTransaction { ctx in
                for i in indices {
                    let index = Int(order[i])
                    try ctx.insert(BenchRecord(index: index, payload: Array(data.value(index))))
                    if i + 1 < indices.upperBound { tick() }
                }
            }
        }
        heapHighWater = heap
        return nanos
    }

    func read(_ order: [UInt32], batch: Int) throws -> [UInt64] {
        var clock = BatchClock(batch: batch)
        var found = 0, sum: UInt64 = 0
        try store.withReadTransaction { ctx in
            for i in order {
                let index = Int(i)
                let record = try ctx.fetch(BenchRecord.self) { key in
                    key.append(index / 1_000)
                    key.append(index % 1_000)
                }
                if let record {
                    found += 1
                    sum &+= record.payload.withUnsafeBytes(valueChecksum)
                }
                clock.tick()
            }
        }
        checksum = sum
        guard found == order.count else { throw BenchFailure(description: "record read found \(found) of \(order.count)") }
        return clock.finish()
    }

    /// The highest heap use seen during the last full scan, above its start, in bytes.
    var scanHeapGrowth: UInt64 = 0

    func scan(reverse: Bool, batch: Int) throws -> [UInt64] {
        var clock = BatchClock(batch: batch)
        let heapAtStart = HeapProbe.inUse()
        var heapPeak = heapAtStart
        var sum: UInt64 = 0
        try store.withReadTransaction { ctx in
            try BenchRecord.forEach(in: ctx, order: reverse ? .descending : .ascending) { record in
                sum &+= record.payload.withUnsafeBytes(valueChecksum)
                clock.tick()
                if clock.done % 10_000 == 0 { heapPeak = max(heapPeak, HeapProbe.inUse()) }
                return true
            }
        }
        checksum = sum
        scanHeapGrowth = max(scanHeapGrowth, heapPeak - heapAtStart)
        guard clock.done == data.count else { throw BenchFailure(description: "record scan saw \(clock.done) of \(data.count)") }
        return clock.finish()
    }

    func scans(length: Int) throws -> [UInt64] {
        var nanos: [UInt64] = []
        var sum: UInt64 = 0
        try store.withReadTransaction { ctx in
            for start in data.scanStarts {
                let t = now()
                let query = RecordQuery.all.then(Comparison<Int>.greaterThanOrEqual(start / 1_000))
                for record in try BenchRecord.select(in: ctx, query, limit: length) {
                    sum &+= record.payload.withUnsafeBytes(valueChecksum)
                }
                nanos.append(now() - t)
            }
        }
        checksum = sum
        return nanos
    }

    func close() throws { try store.close() }
}

/// The record layer's borrowing scan: views over the engine's bytes (key components and the
/// payload's length read in place), instead of materialized records.
final class ViewTarget: RecordTarget {
    override func scan(reverse: Bool, batch: Int) throws -> [UInt64] {
        var clock = BatchClock(batch: batch)
        var sum: UInt64 = 0
        try store.withReadTransaction { ctx in
            try ctx.forEachView(BenchRecord.self, order: reverse ? .descending : .ascending) { view in
                var fields = view.fieldReader()
                sum &+= valueChecksum(try fields.readBytes())
                clock.tick()
                return true
            }
        }
        checksum = sum
        guard clock.done == data.count else { throw BenchFailure(description: "view scan saw \(clock.done) of \(data.count)") }
        return clock.finish()
    }

    override func scans(length: Int) throws -> [UInt64] {
        var nanos: [UInt64] = []
        var sum: UInt64 = 0
        try store.withReadTransaction { ctx in
            for start in data.scanStarts {
                let t = now()
                let query = RecordQuery.all.then(Comparison<Int>.greaterThanOrEqual(start / 1_000))
                try ctx.forEachView(BenchRecord.self, query, limit: length) { view in
                    var fields = view.fieldReader()
                    sum &+= valueChecksum(try fields.readBytes())
                    return true
                }
                nanos.append(now() - t)
            }
        }
        checksum = sum
        return nanos
    }
}
