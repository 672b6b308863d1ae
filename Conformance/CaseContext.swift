import Foundation
import StrataEngine

/// What a case works with: a fresh directory, the engine's opener, and assertions that throw a
/// ``ConformanceFailure`` describing the expected and the actual result.
public final class CaseContext: @unchecked Sendable {
    /// The engine the case runs on, as given to the suite.
    public let engine: EngineUnderTest
    /// A fresh, empty directory for this case's store.
    public let directory: String
    private var opened: [any KeyValueEngine] = []
    private var peers: [PeerProcess] = []

    init(engine: EngineUnderTest) {
        self.engine = engine
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-conformance-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// Where the engine keeps stores (``EngineUnderTest/locations``).
    public var locations: any StoreLocations { engine.locations }

    /// Opens the case's store (again, after a close) with `options`.
    public func open(_ options: EngineOptions = EngineOptions(), at path: String? = nil) throws -> any KeyValueEngine {
        let store = try engine.open(path ?? directory, options)
        opened.append(store)
        return store
    }

    /// A store holding `pairs`, written in one transaction.
    public func store(with pairs: [([UInt8], [UInt8])]) throws -> any KeyValueEngine {
        let store = try open()
        try store.write { tx in for (k, v) in pairs { try tx.put(v, forKey: k) } }
        return store
    }

    /// Starts the engine's peer process (``EngineUnderTest/peer``) on this case's store (which
    /// must exist); it is stopped when the case ends.
    public func peer() throws -> PeerProcess {
        guard let command = engine.peer else {
            throw ConformanceFailure("\(engine.name) declares multiProcess but no peer process was given (EngineUnderTest.peer)")
        }
        let process = try PeerProcess(command, directory: directory)
        peers.append(process)
        return process
    }

    func finish() throws {
        for peer in peers { peer.stop() }
        peers = []
        for store in opened { try store.close() }
        opened = []
        try? FileManager.default.removeItem(atPath: directory)
    }

    func abandon() {
        for peer in peers { peer.stop() }
        peers = []
        for store in opened { try? store.close() }
        opened = []
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A broken rule: what was expected and what happened.
public struct ConformanceFailure: Error, CustomStringConvertible {
    public let description: String
    /// A failure reported as `description` (the case's report line shows it verbatim).
    public init(_ description: String) { self.description = description }
}

/// Checks that `actual == expected`.
public func expectEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: @autoclosure () -> String) throws {
    guard actual == expected else {
        throw ConformanceFailure("\(what()): expected \(show(expected)), got \(show(actual))")
    }
}

/// Checks that two long lists are equal, reporting the lengths and the first position where
/// they differ (printing whole lists of thousands of keys would bury the answer).
public func expectSameList<T: Equatable>(_ actual: [T], _ expected: [T], _ what: @autoclosure () -> String) throws {
    guard actual != expected else { return }
    let i = zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(actual.count, expected.count)
    let want = i < expected.count ? show(expected[i]) : "the end"
    let got = i < actual.count ? show(actual[i]) : "the end"
    throw ConformanceFailure("\(what()): expected \(expected.count) items, got \(actual.count); first difference at \(i): expected \(want), got \(got)")
}

/// Checks a condition.
public func expectTrue(_ condition: Bool, _ what: @autoclosure () -> String) throws {
    guard condition else { throw ConformanceFailure(what()) }
}

/// Checks that `body` throws `expected`.
public func expectError<R>(_ expected: EngineError, _ what: @autoclosure () -> String, _ body: () throws -> R) throws {
    do {
        let result = try body()
        throw ConformanceFailure("\(what()): expected error \(expected), got success \(show(result))")
    } catch let error as EngineError {
        guard error == expected else {
            throw ConformanceFailure("\(what()): expected error \(expected), got error \(error)")
        }
    }
}

/// Checks that `body` throws an `EngineError` matching `matches` (for errors carrying a path).
public func expectError<R>(_ what: @autoclosure () -> String, matching matches: (EngineError) -> Bool, _ body: () throws -> R) throws {
    do {
        let result = try body()
        throw ConformanceFailure("\(what()): expected an error, got success \(show(result))")
    } catch let error as EngineError {
        guard matches(error) else { throw ConformanceFailure("\(what()): unexpected error \(error)") }
    }
}

/// Byte strings print as hex (`61 00 ff`) in failure messages; lists of them as `[61, 61 00]`.
func show<T>(_ value: T) -> String {
    switch value {
    case let bytes as [UInt8]: return hex(bytes)
    case let optional as [UInt8]?: return optional.map(hex) ?? "nil (missing)"
    case let list as [[UInt8]]: return "[" + list.map(hex).joined(separator: ", ") + "]"
    case let pairs as [Pair]: return "[" + pairs.map { "\(hex($0.key))=\(hex($0.value))" }.joined(separator: ", ") + "]"
    default: return "\(value)"
    }
}

func hex(_ bytes: [UInt8]) -> String {
    if bytes.isEmpty { return "(empty)" }
    if bytes.count > 24 { return bytes.prefix(12).map { String(format: "%02x", $0) }.joined(separator: " ") + " … (\(bytes.count) bytes)" }
    return bytes.map { String(format: "%02x", $0) }.joined(separator: " ")
}

/// A key-value pair with equality, for comparing scan results.
public struct Pair: Equatable, Sendable {
    /// The pair's key bytes.
    public var key: [UInt8]
    /// The pair's value bytes (possibly empty).
    public var value: [UInt8]
    /// The pair `key` = `value`.
    public init(_ key: [UInt8], _ value: [UInt8]) { self.key = key; self.value = value }
}

extension KeyValueReader {
    /// The pairs of a scan, as comparable values.
    func collect(_ range: KeyRange = .all, reverse: Bool = false, limit: Int? = nil) throws -> [Pair] {
        try pairs(range, reverse: reverse, limit: limit).map { Pair($0.key, $0.value) }
    }
}

/// A key from a string's UTF-8 bytes.
func b(_ s: String) -> [UInt8] { Array(s.utf8) }

/// The reference order, written independently of the engine layer's comparator:
/// Swift's lexicographic comparison of byte arrays (a proper prefix sorts first).
func referenceLess(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

/// Whether `key` lies in `range`, by the reference order.
func referenceContains(_ range: KeyRange, _ key: [UInt8]) -> Bool {
    switch range.lower {
    case .unbounded: break
    case .inclusive(let lo): if referenceLess(key, lo) { return false }
    case .exclusive(let lo): if !referenceLess(lo, key) { return false }
    }
    switch range.upper {
    case .unbounded: return true
    case .inclusive(let hi): return !referenceLess(hi, key)
    case .exclusive(let hi): return referenceLess(key, hi)
    }
}

/// What a scan must return, by the reference order.
func referenceScan(_ keys: [[UInt8]], _ range: KeyRange, reverse: Bool = false, limit: Int? = nil) -> [[UInt8]] {
    var result = keys.filter { referenceContains(range, $0) }.sorted(by: referenceLess)
    if reverse { result.reverse() }
    if let limit { result = Array(result.prefix(limit)) }
    return result
}

/// A deterministic generator (SplitMix64), so every failure can be replayed from its seed.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    /// A generator whose sequence is fixed by `seed`: the same seed gives the same numbers on every
    /// platform and run.
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
