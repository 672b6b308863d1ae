/// The key sizes every engine accepts: the same on all of them, so that data written through
/// one engine can always be written through another. 511 is LMDB's hard limit.
public enum KeyLimits {
    /// The longest key, in bytes.
    public static let maxKeyLength = 511
}

/// A ``KeyRange`` rewritten for storage primitives: bounds no longer than a key and never empty,
/// or no range at all when it provably holds no key.
///
/// The core hands every scan and clear to the storage in this form, so that empty bounds,
/// over-long bounds and inverted ranges are handled once, identically for all engines.
public struct ResolvedRange: Sendable, Hashable {
    /// One end of a resolved range.
    public struct Bound: Sendable, Hashable {
        /// The bound's key: from ``KeyRange/resolved(maxKeyLength:)`` never empty and no longer
        /// than a key, which primitives may rely on.
        public var key: [UInt8]
        /// Whether a key equal to ``key`` is inside the range.
        public var inclusive: Bool
        /// A bound at `key`; one made by hand must keep `key` non-empty and no longer than a key.
        public init(key: [UInt8], inclusive: Bool) {
            self.key = key
            self.inclusive = inclusive
        }
    }
    /// `nil`: from the first key.
    public var lower: Bound?
    /// `nil`: to the last key.
    public var upper: Bound?

    /// A range from `lower` to `upper`; `nil` (the default) leaves that side open.
    public init(lower: Bound? = nil, upper: Bound? = nil) {
        self.lower = lower
        self.upper = upper
    }

    /// Whether `key` is at or above the lower bound. Inlinable: the adapters' scans ask it of
    /// every row (called across the module, a row of a record scan paid 40 instructions for it).
    @inlinable @inline(__always)
    public func isAtOrAboveLower(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let lower else { return true }
        let c = lower.key.withUnsafeBytes { Bytewise.compare(key, $0) }
        return lower.inclusive ? c >= 0 : c > 0
    }

    /// Whether `key` is at or below the upper bound (inlinable, as ``isAtOrAboveLower(_:)``).
    @inlinable @inline(__always)
    public func isAtOrBelowUpper(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let upper else { return true }
        let c = upper.key.withUnsafeBytes { Bytewise.compare(key, $0) }
        return upper.inclusive ? c <= 0 : c < 0
    }
}

extension KeyRange {
    /// The range in adapter form, or `nil` when no storable key can lie inside it.
    ///
    /// Keys are 1...`maxKeyLength` bytes, so: an empty lower bound is no bound; an empty upper
    /// bound admits nothing; a bound `b` longer than `maxKeyLength` bytes is replaced by its
    /// prefix `p` of that length (`k >= b` and `k > b` become `k > p`; `k <= b` and `k < b`
    /// become `k <= p`).
    public func resolved(maxKeyLength max: Int = KeyLimits.maxKeyLength) -> ResolvedRange? {
        var result = ResolvedRange()
        switch lower {
        case .unbounded: break
        case .inclusive(let b), .exclusive(let b):
            if b.isEmpty { break }
            if b.count > max {
                result.lower = .init(key: Array(b.prefix(max)), inclusive: false)
            } else {
                if case .inclusive = lower { result.lower = .init(key: b, inclusive: true) }
                else { result.lower = .init(key: b, inclusive: false) }
            }
        }
        switch upper {
        case .unbounded: break
        case .inclusive(let b), .exclusive(let b):
            if b.isEmpty { return nil }
            if b.count > max {
                result.upper = .init(key: Array(b.prefix(max)), inclusive: true)
            } else {
                if case .inclusive = upper { result.upper = .init(key: b, inclusive: true) }
                else { result.upper = .init(key: b, inclusive: false) }
            }
        }
        if let lo = result.lower, let hi = result.upper {
            let c = Bytewise.compare(lo.key, hi.key)
            if c > 0 || (c == 0 && !(lo.inclusive && hi.inclusive)) { return nil }
        }
        return result
    }
}
