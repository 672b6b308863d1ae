/// One end of a ``KeyRange``.
public enum KeyBound: Sendable, Hashable {
    /// No limit on this side.
    case unbounded
    /// Keys equal to the bound are inside the range.
    case inclusive([UInt8])
    /// Keys equal to the bound are outside the range.
    case exclusive([UInt8])
}

/// A range of keys in unsigned bytewise order, with independent lower and upper bounds.
///
/// Bounds may be empty or longer than any key. A range whose lower bound lies above its upper
/// bound is empty; scanning or clearing it is not an error.
public struct KeyRange: Sendable, Hashable {
    /// The low end: keys below it are outside the range.
    public var lower: KeyBound
    /// The high end: keys above it are outside the range.
    public var upper: KeyBound

    /// The keys between `lower` and `upper`, each ``KeyBound/unbounded`` unless given (so
    /// `KeyRange()` is every key, as ``all``).
    public init(lower: KeyBound = .unbounded, upper: KeyBound = .unbounded) {
        self.lower = lower
        self.upper = upper
    }

    /// Every key.
    public static let all = KeyRange()

    /// Keys `k` with `lower <= k < upper`.
    public static func halfOpen(_ lower: [UInt8], _ upper: [UInt8]) -> KeyRange {
        KeyRange(lower: .inclusive(lower), upper: .exclusive(upper))
    }

    /// Keys `k` with `lower <= k <= upper`.
    public static func closed(_ lower: [UInt8], _ upper: [UInt8]) -> KeyRange {
        KeyRange(lower: .inclusive(lower), upper: .inclusive(upper))
    }

    /// Exactly the keys that start with `prefix`. The upper bound is the prefix with its last
    /// non-FF byte incremented and the FF bytes after it dropped; a prefix of only FF bytes
    /// (or an empty one) has no upper bound.
    public static func prefix(_ prefix: [UInt8]) -> KeyRange {
        KeyRange(lower: .inclusive(prefix), upper: prefixSuccessor(prefix).map { .exclusive($0) } ?? .unbounded)
    }

    /// The least byte string greater than every string that starts with `prefix`, or `nil` when
    /// there is none (an empty prefix or one made only of FF bytes).
    public static func prefixSuccessor(_ prefix: [UInt8]) -> [UInt8]? {
        guard let last = prefix.lastIndex(where: { $0 != 0xFF }) else { return nil }
        var successor = Array(prefix[...last])
        successor[last] += 1
        return successor
    }

    /// Whether `key` lies inside the range.
    public func contains<Key: Collection<UInt8>>(_ key: Key) -> Bool {
        switch lower {
        case .unbounded: break
        case .inclusive(let b): if Bytewise.compare(key, b) < 0 { return false }
        case .exclusive(let b): if Bytewise.compare(key, b) <= 0 { return false }
        }
        switch upper {
        case .unbounded: return true
        case .inclusive(let b): return Bytewise.compare(key, b) <= 0
        case .exclusive(let b): return Bytewise.compare(key, b) < 0
        }
    }
}

/// Unsigned bytewise comparison: the order of every Strata engine.
public enum Bytewise {
    /// Negative when `a < b`, zero when equal, positive when `a > b`; a proper prefix sorts first.
    public static func compare<A: Collection<UInt8>, B: Collection<UInt8>>(_ a: A, _ b: B) -> Int {
        var ia = a.makeIterator()
        var ib = b.makeIterator()
        while true {
            switch (ia.next(), ib.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case let (x?, y?): if x != y { return x < y ? -1 : 1 }
            }
        }
    }

    /// Bytewise comparison of two arrays, through their buffers (the generic version walks
    /// iterators byte by byte: about 200 instructions for two short keys).
    @inlinable
    public static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in compare(x, y) } }
    }

    /// Bytewise comparison of two raw buffers (memcmp, then the shorter first). Inlined: the
    /// adapters' scans compare every row with their range's bound.
    @inlinable @inline(__always)
    public static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = Swift.min(a.count, b.count)
        if n > 0 {
            let c = memcmp(a.baseAddress!, b.baseAddress!, n)
            if c != 0 { return c < 0 ? -1 : 1 }
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
