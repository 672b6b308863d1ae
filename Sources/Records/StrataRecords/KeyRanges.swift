import StrataEngine

/// A comparison on one key component, given as the component's encoding.
public enum ComponentBound: Sendable, Hashable {
    /// Components below the value (or equal, when inclusive).
    case below([UInt8], inclusive: Bool)
    /// Components above the value (or equal, when inclusive).
    case above([UInt8], inclusive: Bool)
}

extension KeyRange {
    /// The keys that start with the encoded leading components `prefix` and whose next component
    /// satisfies `bounds`: the byte range behind every typed query.
    ///
    /// The encoded components are *not* simply a byte prefix of the keys that start with them:
    /// `("a")` is `02 61 00` and `("a\0")` is `02 61 00 FF 00`. But after a complete component
    /// comes either nothing or another component's type code, which is never `FF`, so the keys
    /// starting with components `p` are exactly those in `[p, p + FF)`. Likewise "at or below v"
    /// ends before `p + v + FF`, and "above v" starts there.
    public static func components(prefix: [UInt8], _ bounds: ComponentBound...) -> KeyRange {
        components(prefix: prefix, bounds)
    }

    /// ``components(prefix:_:)-(_,ComponentBound...)`` with the bounds as an array.
    public static func components(prefix: [UInt8], _ bounds: [ComponentBound]) -> KeyRange {
        var range = KeyRange(lower: .inclusive(prefix), upper: .exclusive(prefix + [0xFF]))
        for bound in bounds {
            switch bound {
            case let .above(value, inclusive):
                range.lower = .inclusive(prefix + value + (inclusive ? [] : [0xFF]))
            case let .below(value, inclusive):
                range.upper = .exclusive(prefix + value + (inclusive ? [0xFF] : []))
            }
        }
        return range
    }
}
