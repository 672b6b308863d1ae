import Foundation
@_spi(StrataInternals) import StrataEngine

/// A Strata engine in memory, for tests and scratch data: a sorted array of pairs.
///
/// Snapshots are copy-on-write: a read transaction holds the committed arrays as they were
/// when it began, and a write transaction mutates its own copy, published at commit.
/// Nothing outlives the process (no `EngineCapabilities.persistent`). Inserting into the middle
/// of a large store moves the tail of the array, so it is meant for small data sets.
public final class MemoryEngine: CoreBackedEngine, Sendable {
    /// The memory engine's declaration: name `memory`, no capabilities (neither persistent nor
    /// multi-process), 511-byte keys and no other limits, storage that reads its own writes, and
    /// no marker file (no directory).
    public static let declaration = EngineDeclaration(name: "memory", capabilities: [])
    /// The core engine over this instance's in-memory storage; it keeps the contract.
    public let core: CoreEngine

    /// A new, empty store of this instance's own (there is no path: two instances never share
    /// data). Never throws. Of `options`, only a `.readOnly` mode matters (every write throws);
    /// there is nothing to find, so `.openExisting` starts empty too.
    public init(options: EngineOptions = EngineOptions()) {
        // Opening memory storage cannot fail.
        core = try! CoreEngine(declaration: Self.declaration, path: nil, options: options) { _ in MemoryStorage() }
    }
}

/// The committed pairs, and transactions over copies of them.
final class MemoryStorage: KeyValueStorage, Sendable {
    private let committed = Locked(SortedPairs())

    func beginRead() throws -> any StorageReadTransaction {
        MemoryTransaction(committed.withLock { $0 }, storage: nil)
    }

    func beginWrite() throws -> any StorageWriteTransaction {
        MemoryTransaction(committed.withLock { $0 }, storage: self)
    }

    func publish(_ data: SortedPairs) { committed.withLock { $0 = data } }

    func close() throws { committed.withLock { $0 = SortedPairs() } }
}

/// A memory store keeps no room for deleted pairs (each commit publishes arrays of the pairs that
/// remain), so a compaction has nothing to give back: it reports the bytes of the keys and values
/// held, the same before and after.
extension MemoryStorage: CompactingStorage {
    func compact() throws -> CompactionReport {
        let pairs = committed.withLock { $0 }
        let bytes = pairs.keys.reduce(0) { $0 + $1.count } + pairs.values.reduce(0) { $0 + $1.count }
        return CompactionReport(bytesBefore: bytes, bytesAfter: bytes)
    }
}

/// Keys and values in parallel arrays, keys sorted bytewise.
struct SortedPairs {
    var keys: [[UInt8]] = []
    var values: [[UInt8]] = []

    /// The index of the first key at or above `key` (`inclusive`) or above it. Keys compare by
    /// memcmp over their buffers: the generic `Bytewise.compare` walked two iterators byte by
    /// byte, unspecialized across the module boundary.
    func index(of key: UnsafeRawBufferPointer, inclusive: Bool = true) -> Int {
        var low = 0, high = keys.count
        while low < high {
            let mid = (low + high) / 2
            let c = keys[mid].withUnsafeBytes { Bytewise.compare($0, key) }
            if c < 0 || (c == 0 && !inclusive) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Whether the key at `i` is `key`.
    func holds(_ key: UnsafeRawBufferPointer, at i: Int) -> Bool {
        i < keys.count && keys[i].withUnsafeBytes { Bytewise.compare($0, key) } == 0
    }

    /// The indices a resolved range covers.
    func indices(_ range: ResolvedRange) -> Range<Int> {
        let start = range.lower.map { bound in bound.key.withUnsafeBytes { index(of: $0, inclusive: bound.inclusive) } } ?? 0
        let end = range.upper.map { bound in bound.key.withUnsafeBytes { index(of: $0, inclusive: !bound.inclusive) } } ?? keys.count
        return start..<max(start, end)
    }
}

/// A snapshot of the pairs; a writer edits its own copy and publishes it at commit.
final class MemoryTransaction: StorageWriteTransaction {
    var data: SortedPairs
    /// The storage to publish to; `nil` for a reader.
    private let storage: MemoryStorage?

    init(_ data: SortedPairs, storage: MemoryStorage?) {
        self.data = data
        self.storage = storage
    }

    func get<R>(_ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        let i = data.index(of: key)
        guard data.holds(key, at: i) else { return try body(nil) }
        return try data.values[i].withUnsafeBytes { try body($0) }
    }

    func scan(
        _ range: ResolvedRange, reverse: Bool, limit: Int?, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        // Walked lazily: a scan with a limit (a cursor's batch) costs the rows it visits, not the range.
        let covered = data.indices(range)
        var remaining = limit ?? .max
        func visitRow(_ i: Int) throws -> Bool {
            guard remaining > 0 else { return false }
            remaining -= 1
            return try data.keys[i].withUnsafeBytes { k in try data.values[i].withUnsafeBytes { try visit(k, $0) } }
        }
        if reverse {
            for i in covered.reversed() where try !visitRow(i) { return }
        } else {
            for i in covered where try !visitRow(i) { return }
        }
    }

    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
        _ = try putReportingReplaced(value, forKey: key)
    }

    func putReportingReplaced(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws -> Bool {
        let i = data.index(of: key)
        if data.holds(key, at: i) {
            data.values[i] = Array(value)
            return true
        }
        data.keys.insert(Array(key), at: i)
        data.values.insert(Array(value), at: i)
        return false
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        let i = data.index(of: key)
        if data.holds(key, at: i) {
            data.keys.remove(at: i)
            data.values.remove(at: i)
        }
    }

    func clear(_ range: ResolvedRange) throws -> Int {
        let covered = data.indices(range)
        data.keys.removeSubrange(covered)
        data.values.removeSubrange(covered)
        return covered.count
    }

    func commit() throws { storage?.publish(data) }

    func end() {}
}

extension EngineConfiguration {
    /// In memory, for tests: gone when the store is closed.
    public static var memory: EngineConfiguration {
        EngineConfiguration(name: "memory", path: nil) { MemoryEngine(options: $0) }
    }
}

extension EngineKind {
    /// In memory (every store opened is a new, empty one).
    public static let memory = EngineKind(declaration: MemoryEngine.declaration) { _ in .memory }
}
