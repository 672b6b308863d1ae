import Foundation
import StrataEngine

/// A Strata engine in memory, for tests and scratch data: a sorted array of pairs.
///
/// Snapshots are copy-on-write: a read transaction holds the committed arrays as they were
/// when it began, and a write transaction mutates its own copy, published at commit.
/// Nothing outlives the process (no ``EngineCapabilities/persistent``). Inserting into the middle
/// of a large store moves the tail of the array, so it is meant for small data sets.
public final class MemoryEngine: KeyValueEngine, @unchecked Sendable {
    public let engineName = "memory"
    public let capabilities: EngineCapabilities = []

    private let gate = TransactionGate()
    private let lock = NSLock()
    private var committed = SortedPairs()

    public init() {}

    public func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R {
        try gate.withRead {
            let transaction = MemoryTransaction(lock.withLock { committed }, writable: false)
            defer { transaction.ended = true }
            return try body(transaction)
        }
    }

    public func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R {
        try gate.withWrite {
            let transaction = MemoryTransaction(lock.withLock { committed }, writable: true)
            defer { transaction.ended = true }
            let result = try body(transaction)
            let data = transaction.data
            lock.withLock { committed = data }
            return result
        }
    }

    public func close() throws {
        try gate.close { lock.withLock { committed = SortedPairs() } }
    }
}

/// Keys and values in parallel arrays, keys sorted bytewise.
struct SortedPairs {
    var keys: [[UInt8]] = []
    var values: [[UInt8]] = []

    /// The index of the first key at or above `key` (`inclusive`) or above it.
    func index<K: Collection<UInt8>>(of key: K, inclusive: Bool = true) -> Int {
        var low = 0, high = keys.count
        while low < high {
            let mid = (low + high) / 2
            let c = Bytewise.compare(keys[mid], key)
            if c < 0 || (c == 0 && !inclusive) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The indices a resolved range covers.
    func indices(_ range: ResolvedRange) -> Range<Int> {
        let start = range.lower.map { index(of: $0.key, inclusive: $0.inclusive) } ?? 0
        let end = range.upper.map { index(of: $0.key, inclusive: !$0.inclusive) } ?? keys.count
        return start..<max(start, end)
    }
}

final class MemoryTransaction: KeyValueWriter {
    var data: SortedPairs
    let writable: Bool
    var ended = false
    private var lent = 0

    init(_ data: SortedPairs, writable: Bool) {
        self.data = data
        self.writable = writable
    }

    func withValue<R>(forKey key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try KeyLimits.validate(key)
        try live()
        let i = data.index(of: key)
        lent += 1  // also for a missing key: writes in the body are refused on every engine
        defer { lent -= 1 }
        guard i < data.keys.count, Bytewise.compare(data.keys[i], key) == 0 else { return try body(nil) }
        return try data.values[i].withUnsafeBytes { try body($0) }
    }

    func scan(
        _ range: KeyRange, reverse: Bool, limit: Int?,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try live()
        try KeyLimits.validate(limit: limit)
        guard limit != 0, let range = range.resolved() else { return }
        let covered = data.indices(range)
        let snapshot = data  // writes are refused while scanning; this keeps the loop simple
        lent += 1
        defer { lent -= 1 }
        var visited = 0
        for i in reverse ? Array(covered.reversed()) : Array(covered) {
            let more = try snapshot.keys[i].withUnsafeBytes { k in try snapshot.values[i].withUnsafeBytes { try visit(k, $0) } }
            visited += 1
            if !more || visited == limit { return }
        }
    }

    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
        try KeyLimits.validate(key)
        try writableCheck()
        let i = data.index(of: key)
        if i < data.keys.count, Bytewise.compare(data.keys[i], key) == 0 {
            data.values[i] = Array(value)
        } else {
            data.keys.insert(Array(key), at: i)
            data.values.insert(Array(value), at: i)
        }
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        try KeyLimits.validate(key)
        try writableCheck()
        let i = data.index(of: key)
        if i < data.keys.count, Bytewise.compare(data.keys[i], key) == 0 {
            data.keys.remove(at: i)
            data.values.remove(at: i)
        }
    }

    func clear(_ range: KeyRange) throws -> Int {
        try writableCheck()
        guard let range = range.resolved() else { return 0 }
        let covered = data.indices(range)
        data.keys.removeSubrange(covered)
        data.values.removeSubrange(covered)
        return covered.count
    }

    private func live() throws(EngineError) {
        if ended { throw .transactionEnded }
    }

    private func writableCheck() throws(EngineError) {
        try live()
        if !writable { throw .readOnly(path: ":memory:") }
        if lent > 0 { throw .writeWhileReading }
    }
}
