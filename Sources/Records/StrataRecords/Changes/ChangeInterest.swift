@_spi(StrataInternals) import StrataEngine

/// Which of a write transaction's changes the observed queries may need, taken when it begins
/// (under the writer gate): the others are not recorded for them (the change feed, when on,
/// encodes every change on its own: ``ChangeLogChunks``), so a fill beside queries of other
/// ranges allocates nothing per record for them.
///
/// Per keyspace: every change, when a query of it is not by key alone (a record may enter it
/// from anywhere) or a ``TransactionObserver`` is registered; else the union of its queries' key
/// ranges, started or not. A query registered after the transaction began reads its first
/// snapshot after that commit (the snapshot is read under the writer gate), so it never needs
/// what the transaction left out.
final class ChangeInterest: Sendable {
    /// Per keyspace: `nil` for every change, else the keys (without the keyspace's prefix) wanted.
    private let keyspaces: [String: KeySpans?]
    /// Whether every change of every keyspace is wanted.
    let everything: Bool

    init(everything: Bool, keyspaces: [String: KeySpans?]) {
        self.everything = everything
        self.keyspaces = keyspaces
    }

    /// What is wanted of `keyspace`: `.all`, `.none`, or the changes whose keys lie in spans.
    func wanted(in keyspace: String) -> Wanted {
        if everything { return .all }
        guard let entry = keyspaces[keyspace] else { return .none }
        return entry.map(Wanted.keys) ?? .all
    }

    enum Wanted {
        case all
        case none
        case keys(KeySpans)

        /// Whether the change of the record stored as `key` (without the keyspace's prefix) is wanted.
        func contains(_ key: UnsafeRawBufferPointer) -> Bool {
            switch self {
            case .all: return true
            case .none: return false
            case .keys(let spans): return spans.contains(key)
            }
        }
    }
}

/// Key ranges merged into disjoint spans `[low, high)` in ascending order (`high` `nil`: no
/// end), looked up by one binary search.
struct KeySpans: Sendable {
    private var lows: [[UInt8]] = []
    private var highs: [[UInt8]?] = []

    init(_ ranges: [KeyRange]) {
        var spans = ranges.compactMap(\.span)
        spans.sort { Bytewise.compare($0.0, $1.0) < 0 }
        for (low, high) in spans {
            if let last = highs.last, last.map({ Bytewise.compare(low, $0) <= 0 }) ?? true {
                // Overlaps or touches the previous span: widen it.
                if let previous = last, high.map({ Bytewise.compare($0, previous) > 0 }) ?? true { highs[highs.count - 1] = high }
            } else {
                lows.append(low)
                highs.append(high)
            }
        }
    }

    /// Whether `key` lies in a span.
    func contains(_ key: UnsafeRawBufferPointer) -> Bool {
        // Below the first span or above the last: most changes, when the observed queries read
        // other ranges than a fill writes (one comparison each, not a search).
        guard let first = lows.first, Self.compare(first, key) <= 0 else { return false }
        if let end = highs[highs.count - 1], Self.compare(end, key) <= 0 { return false }
        // The last span starting at or below the key.
        var (low, high) = (0, lows.count)
        while low < high {
            let middle = (low + high) / 2
            if Self.compare(lows[middle], key) <= 0 { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return false }
        return highs[low - 1].map { Self.compare($0, key) > 0 } ?? true
    }

    private static func compare(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Int {
        a.withUnsafeBytes { Bytewise.compare($0, b) }
    }
}

extension KeyRange {
    /// The range as `[low, high)` (`high` `nil`: no end), `nil` when empty; a byte string's
    /// successor is itself + 00.
    var span: (low: [UInt8], high: [UInt8]?)? {
        let low: [UInt8] = switch lower {
        case .unbounded: []
        case .inclusive(let bound): bound
        case .exclusive(let bound): bound + [0]
        }
        let high: [UInt8]? = switch upper {
        case .unbounded: nil
        case .inclusive(let bound): bound + [0]
        case .exclusive(let bound): bound
        }
        if let high, Bytewise.compare(low, high) >= 0 { return nil }
        return (low, high)
    }
}
