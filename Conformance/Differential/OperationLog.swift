import StrataEngine

/// One operation inside a transaction of a differential log.
public enum Operation: Sendable, Equatable, CustomStringConvertible {
    /// Stores the value (second) under the key (first), replacing any value there.
    case put([UInt8], [UInt8])
    /// Stores the value (second) under the key (first), as `put`; the result is whether the key
    /// held a value (`KeyValueWriter.putReportingReplaced(_:forKey:)`).
    case putReportingReplaced([UInt8], [UInt8])
    /// Removes the key, if present.
    case delete([UInt8])
    /// Removes every key in the range; the result is how many were removed.
    case clear(KeyRange)
    /// Reads the key's value: `nil` when absent.
    case get([UInt8])
    /// The pairs in the range in ascending key order (descending when `reverse`), at most `limit`
    /// of them (all when `nil`).
    case scan(KeyRange, reverse: Bool, limit: Int?)

    var isWrite: Bool {
        switch self {
        case .put, .putReportingReplaced, .delete, .clear: return true
        case .get, .scan: return false
        }
    }

    public var description: String {
        switch self {
        case let .put(k, v): return "put \(hex(k)) = \(hex(v))"
        case let .putReportingReplaced(k, v): return "putReportingReplaced \(hex(k)) = \(hex(v))"
        case let .delete(k): return "delete \(hex(k))"
        case let .clear(r): return "clear \(describe(r))"
        case let .get(k): return "get \(hex(k))"
        case let .scan(r, reverse, limit):
            return "scan \(describe(r))\(reverse ? " reverse" : "")\(limit.map { " limit \($0)" } ?? "")"
        }
    }
}

/// One step of a differential log: a transaction, or an action on a reader held open across steps.
public enum Step: Sendable, Equatable, CustomStringConvertible {
    /// A write transaction that commits, or rolls back when `commit` is false.
    case write([Operation], commit: Bool)
    /// A short read transaction.
    case read([Operation])
    /// Begins a read transaction on its own thread and keeps it open.
    case openReader(Int)
    /// Reads in a held reader: it must see the state from when it began.
    case readHeld(Int, [Operation])
    /// Ends a held reader.
    case closeReader(Int)

    public var description: String {
        switch self {
        case let .write(ops, commit): return "write(\(commit ? "commit" : "rollback")) { \(ops.map(\.description).joined(separator: "; ")) }"
        case let .read(ops): return "read { \(ops.map(\.description).joined(separator: "; ")) }"
        case let .openReader(id): return "open reader \(id)"
        case let .readHeld(id, ops): return "reader \(id) { \(ops.map(\.description).joined(separator: "; ")) }"
        case let .closeReader(id): return "close reader \(id)"
        }
    }

    var operationCount: Int {
        switch self {
        case let .write(ops, _), let .read(ops), let .readHeld(_, ops): return ops.count
        case .openReader, .closeReader: return 1
        }
    }
}

func describe(_ range: KeyRange) -> String {
    func bound(_ b: KeyBound, _ open: String, _ closed: String) -> String {
        switch b {
        case .unbounded: return "*"
        case .inclusive(let k): return closed + hex(k)
        case .exclusive(let k): return open + hex(k)
        }
    }
    return "[" + bound(range.lower, "(", "[") + " .. " + bound(range.upper, ")", "]") + "]"
}

/// Generates random logs from a seed: a small key pool (so operations collide), special bytes,
/// empty values, every bound kind, both directions, limits, rollbacks and held readers.
public struct LogGenerator {
    private var random: SeededRandom
    private let keys: [[UInt8]]
    private var openReaders: [Int] = []
    private var nextReader = 0

    /// A generator whose logs are fixed by `seed`, so a failing log can be regenerated from it.
    public init(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var pool = Set<[UInt8]>([[0x00], [0xFF], [0xFF, 0xFF], [0x00, 0x00], [0x7F], [0x80], [0x61], [0x61, 0x00]])
        let alphabet: [UInt8] = [0x00, 0x01, 0x61, 0x62, 0x7F, 0x80, 0xFE, 0xFF]
        while pool.count < 120 {
            let length = Int.random(in: 1...4, using: &random)
            var key: [UInt8] = []
            for _ in 0..<length { key.append(alphabet.randomElement(using: &random)!) }
            pool.insert(key)
        }
        pool.insert([UInt8](repeating: 0x62, count: 511))
        keys = pool.sorted(by: referenceLess)
        self.random = random
    }

    /// A log of at least `operations` operations.
    public mutating func log(operations: Int) -> [Step] {
        var steps: [Step] = []
        var count = 0
        while count < operations {
            let step = nextStep()
            count += step.operationCount
            steps.append(step)
        }
        return steps + openReaders.map { .closeReader($0) }
    }

    private mutating func nextStep() -> Step {
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<55: return .write(ops(writes: true), commit: Int.random(in: 0..<10, using: &random) > 0)
        case 55..<70: return .read(ops(writes: false))
        case 70..<78 where openReaders.count < 3:
            nextReader += 1
            openReaders.append(nextReader)
            return .openReader(nextReader)
        case 78..<92 where !openReaders.isEmpty:
            return .readHeld(openReaders.randomElement(using: &random)!, ops(writes: false))
        case 92..<100 where !openReaders.isEmpty:
            let id = openReaders.remove(at: Int.random(in: 0..<openReaders.count, using: &random))
            return .closeReader(id)
        default: return .read(ops(writes: false))
        }
    }

    private mutating func ops(writes: Bool) -> [Operation] {
        (0..<Int.random(in: 1...12, using: &random)).map { _ in
            let roll = Int.random(in: 0..<100, using: &random)
            if writes && roll < 30 { return .put(key(), value()) }
            if writes && roll < 45 { return .putReportingReplaced(key(), value()) }
            if writes && roll < 60 { return .delete(key()) }
            if writes && roll < 64 { return .clear(range()) }
            if roll < 80 { return .get(key()) }
            let limit: Int? = Int.random(in: 0..<3, using: &random) == 0 ? Int.random(in: 0...6, using: &random) : nil
            return .scan(range(), reverse: Bool.random(using: &random), limit: limit)
        }
    }

    private mutating func key() -> [UInt8] { keys.randomElement(using: &random)! }

    private mutating func value() -> [UInt8] {
        (0..<Int.random(in: 0...8, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    private mutating func bound() -> KeyBound {
        // Bounds on stored keys, between them, empty, or longer than any key.
        let base: [UInt8]
        switch Int.random(in: 0..<10, using: &random) {
        case 0: base = []
        case 1: base = key() + [UInt8](repeating: 0x00, count: 520)
        case 2...3: base = key() + [UInt8.random(in: 0...255, using: &random)]
        default: base = key()
        }
        switch Int.random(in: 0..<3, using: &random) {
        case 0: return .unbounded
        case 1: return .inclusive(base)
        default: return .exclusive(base)
        }
    }

    private mutating func range() -> KeyRange {
        if Int.random(in: 0..<6, using: &random) == 0 { return .prefix(Array(key().prefix(Int.random(in: 1...2, using: &random)))) }
        return KeyRange(lower: bound(), upper: bound())
    }
}
