import Foundation
import StrataConformance
import StrataEngine
import StrataLevelDB
import StrataMemory
import Testing

/// Storage primitives over a sorted array, written for these tests only (not StrataMemory): the
/// core must turn them into a conforming engine. `dropDeletes` makes a broken variant.
final class SortedArrayStorage: KeyValueStorage, @unchecked Sendable {
    private let lock = NSLock()
    private var committed: [(key: [UInt8], value: [UInt8])] = []
    let dropDeletes: Bool

    init(dropDeletes: Bool) { self.dropDeletes = dropDeletes }

    func beginRead() throws -> any StorageReadTransaction { SortedArrayTransaction(lock.withLock { committed }, storage: self) }
    func beginWrite() throws -> any StorageWriteTransaction { SortedArrayTransaction(lock.withLock { committed }, storage: self) }
    func publish(_ pairs: [(key: [UInt8], value: [UInt8])]) { lock.withLock { committed = pairs } }
    func close() throws {}

    static func engine(dropDeletes: Bool = false, limits: EngineLimits = EngineLimits()) throws -> EngineUnderTest {
        let declaration = EngineDeclaration(name: dropDeletes ? "sorted-array (drops deletes)" : "sorted-array", capabilities: [], limits: limits)
        return try EngineUnderTest(name: declaration.name) { _, options in
            try CoreEngine(declaration: declaration, path: nil, options: options) { _ in SortedArrayStorage(dropDeletes: dropDeletes) }
        }
    }
}

/// A sorted array keeps no room for deleted pairs: a compaction has nothing to give back.
extension SortedArrayStorage: CompactingStorage {
    func compact() throws -> CompactionReport {
        let bytes = lock.withLock { committed.reduce(0) { $0 + $1.key.count + $1.value.count } }
        return CompactionReport(bytesBefore: bytes, bytesAfter: bytes)
    }
}

final class SortedArrayTransaction: StorageWriteTransaction {
    private var pairs: [(key: [UInt8], value: [UInt8])]
    private let storage: SortedArrayStorage

    init(_ pairs: [(key: [UInt8], value: [UInt8])], storage: SortedArrayStorage) {
        self.pairs = pairs
        self.storage = storage
    }

    /// The first index whose key is at or above `key` (above it when `!inclusive`): a binary search
    /// with the standard library's lexicographic order (not the engine core's comparator).
    private func index(_ key: UnsafeRawBufferPointer, inclusive: Bool = true) -> Int {
        var low = 0, high = pairs.count
        while low < high {
            let mid = (low + high) / 2
            let candidate = pairs[mid].key
            let below = candidate.lexicographicallyPrecedes(key) || (!inclusive && candidate.elementsEqual(key))
            if below { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private func has(_ i: Int, _ key: UnsafeRawBufferPointer) -> Bool { i < pairs.count && pairs[i].key.elementsEqual(key) }

    func get<R>(_ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        let i = index(key)
        return has(i, key) ? try pairs[i].value.withUnsafeBytes { try body($0) } : try body(nil)
    }

    func scan(
        _ range: ResolvedRange, reverse: Bool, limit: Int?, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let start = range.lower.map { b in b.key.withUnsafeBytes { index($0, inclusive: b.inclusive) } } ?? 0
        let end = range.upper.map { b in b.key.withUnsafeBytes { index($0, inclusive: !b.inclusive) } } ?? pairs.count
        guard start < end else { return }
        let snapshot = pairs
        for i in (reverse ? Array((start..<end).reversed()) : Array(start..<end)).prefix(limit ?? .max) {
            let more = try snapshot[i].key.withUnsafeBytes { k in try snapshot[i].value.withUnsafeBytes { try visit(k, $0) } }
            if !more { return }
        }
    }

    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
        let i = index(key)
        if has(i, key) { pairs[i].value = Array(value) } else { pairs.insert((Array(key), Array(value)), at: i) }
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        let i = index(key)
        if has(i, key) && !storage.dropDeletes { pairs.remove(at: i) }
    }

    // `clear` is the protocol's default: a scan, then a delete per key.

    func commit() throws { storage.publish(pairs) }
    func end() {}
}

@Suite("The engine core")
struct CoreEngineTests {
    @Test("storage primitives over a sorted array make an engine that passes the whole conformance suite")
    func primitivesOnly() async throws {
        let report = await ConformanceSuite.run(try SortedArrayStorage.engine())
        #expect(report.failures.isEmpty, "\(report.description)")
        #expect(report.passed.count == ConformanceSuite.cases.filter { $0.requires.isEmpty }.count)
    }

    @Test("a primitive that drops deletes is caught by the suite")
    func droppedDeletesAreCaught() async throws {
        let report = await ConformanceSuite.run(try SortedArrayStorage.engine(dropDeletes: true))
        #expect(report.failures.count > 5, "\(report.description)")
        #expect(report.failures.contains { $0.caseID.hasPrefix("point/") }, "\(report.description)")
        #expect(report.failures.contains { $0.caseID.hasPrefix("clear/") }, "\(report.description)")
    }

    @Test("declared limits are enforced by the core and pass the declaration cases")
    func declaredLimits() async throws {
        for limits in [EngineLimits(maxValueLength: 1_000, maxOperationsPerTransaction: 50),
                       EngineLimits(maxBytesPerTransaction: 20_000)] {
            let report = await ConformanceSuite.run(try SortedArrayStorage.engine(limits: limits), filter: "declaration/")
            #expect(report.failures.isEmpty, "\(report.description)")
            #expect(report.passed.count == 3, "\(report.description)")
        }
    }

    @Test("a mis-declared engine is caught: capabilities it lacks, limits it does not enforce")
    func misDeclared() async throws {
        let claimsPersistence = EngineUnderTest(name: "memory claiming persistence", capabilities: [.persistent]) { _, options in
            MemoryEngine(options: options)
        }
        let persistence = await ConformanceSuite.run(claimsPersistence)
        #expect(persistence.failures.contains { $0.caseID == "lifecycle/data survives close and reopen" }, "\(persistence.description)")
        #expect(persistence.failures.contains { $0.caseID.hasPrefix("declaration/the engine reports") }, "\(persistence.description)")

        let claimsLimits = EngineUnderTest(name: "memory claiming limits", capabilities: [],
                                           limits: EngineLimits(maxValueLength: 100, maxOperationsPerTransaction: 10)) { _, options in
            MemoryEngine(options: options)
        }
        let limits = await ConformanceSuite.run(claimsLimits, filter: "declaration/")
        #expect(limits.failures.count == 3, "\(limits.description)")

        // LevelDB locks its store to one process: declared multi-process, its peer cannot open it.
        var claimsSharing = EngineUnderTest(name: "leveldb claiming multiProcess", capabilities: [.persistent, .multiProcess]) { dir, options in
            try LevelDBEngine(path: dir, options: options)
        }
        claimsSharing.peer = Engines.leveldb.peer
        let sharing = await ConformanceSuite.run(claimsSharing, filter: "multiprocess/")
        #expect(sharing.failures.count == 3, "\(sharing.description)")
        #expect(sharing.failures.allSatisfy { $0.message.contains("locked by another process") }, "\(sharing.description)")

        // Declared multi-process without a second process to prove it: refused, not skipped.
        var noPeer = Engines.lmdb
        noPeer.peer = nil
        let unproven = await ConformanceSuite.run(noPeer, filter: "multiprocess/")
        #expect(unproven.failures.count == 3 && unproven.failures.allSatisfy { $0.message.contains("no peer process") }, "\(unproven.description)")
    }

    /// What the engine core keeps so that adapters do not: none of it may appear in an adapter.
    static let contractWords = [
        "transactionEnded", "closed", "nestedTransaction", "writeWhileReading",
        "KeyLimits", "OpenPathRegistry", "StoreDirectory", "TransactionGate",
    ]

    static let adapterFolders = ["StrataLMDB", "StrataLevelDB", "StrataSQLite", "StrataMemory"]

    /// The places in Swift `source` (comments excluded) that use one of `words` as a whole word.
    static func contractUses(in source: String, words: [String] = contractWords) -> [String] {
        var found: [String] = []
        for (number, line) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let code = line.range(of: "//").map { line[..<$0.lowerBound] } ?? line[...]
            for word in words where code.range(of: "\\b\(word)\\b", options: .regularExpression) != nil {
                found.append("line \(number + 1): \(word)")
            }
        }
        return found
    }

    @Test("no adapter source does the core's bookkeeping (checked outside comments)")
    func adaptersKeepNoContract() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/Engines").standardizedFileURL
        var files = 0
        for folder in Self.adapterFolders {
            let directory = sources.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".swift") {
                files += 1
                let uses = Self.contractUses(in: try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8))
                #expect(uses.isEmpty, "\(folder)/\(name): \(uses)")
            }
        }
        #expect(files >= 10, "found only \(files) adapter sources")
    }

    @Test("the check finds a use in code and ignores one in a comment")
    func contractCheckCanFail() {
        #expect(Self.contractUses(in: "if lent > 0 { throw EngineError.writeWhileReading }") == ["line 1: writeWhileReading"])
        #expect(Self.contractUses(in: "try KeyLimits.validate(key)\n") == ["line 1: KeyLimits"])
        #expect(Self.contractUses(in: "guard let db else { throw .closed }") == ["line 1: closed"])
        #expect(Self.contractUses(in: "/// the core throws `closed` for us\nlet x = 1 // TransactionGate") == [])
        #expect(Self.contractUses(in: "var isClosed = false") == [])
    }
}
