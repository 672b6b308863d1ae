import Foundation
import StrataEngine

/// Where the windows of a reverse scan begin. etcd 3.4 answers a descending range request by
/// reading and sorting every key of its range, whatever the limit, so a reverse scan asks for
/// windows below the last key it read that hold about the keys it wants.
///
/// Windows are cut on a ``KeyLine`` over a part of the range, `[floor, ceiling)`. A window's
/// width is probed with `count_only` requests, which etcd answers from its in-memory index
/// without reading values, until one holds between half and four times the keys wanted: the
/// first probe from the density of keys the last window had (its answer counts them), then four
/// times wider while a width holds too few keys, and halfway (geometrically across orders of
/// magnitude) between the widths that held too few and too many.
///
/// Real keys are skewed on a line (a record type's keys share a long prefix, integers have
/// leading zero bytes, digits are 10 of 256 byte values), so a part is narrowed to the longest
/// prefix its keys share: at the start, the prefix of the range's first key that every key
/// shares, and when a probe jumps from too few keys to too many, the prefix shared by the keys
/// between the two (found by halving the prefix's length with `count_only` probes). Keys that
/// differ only past the 8 bytes after a line's prefix cannot be told apart: such keys are read
/// in larger windows (correct, at the cost of reading more).
struct DescendingWindows {
    /// The range's start.
    let start: [UInt8]
    /// The part of the range the windows are cut in: `floor` is the lowest bound a window gets
    /// (`start`, or a prefix the part's keys share), `ceiling` the line's top when below `high`.
    private var floor: [UInt8]
    private var ceiling: [UInt8]?
    /// Keys per point on a line whose prefix is `densityPrefix` bytes long.
    private var density: Double?
    private var densityPrefix = 0

    /// A part of at most this many keys is read in one request: etcd reads about a thousand keys
    /// in the time of one request's round trip (20,000 in 22 ms, 3 loopback members), and finding
    /// a window takes about ten (`make bench-etcd`: 100 of 5,000 records in 18 ms with windows).
    static let wholePartKeys: Int64 = 8_192

    init(start: [UInt8]) {
        self.start = start
        floor = start
    }

    /// The line a window below `high` is cut on, and its bounds' positions.
    private func line(below high: [UInt8]) -> (line: KeyLine, top: UInt64, bottom: UInt64) {
        let top = ceiling.map { $0.lexicographicallyPrecedes(high) ? $0 : high } ?? high
        let line = KeyLine(floor, top)
        return (line, line.position(top), line.position(floor))
    }

    /// The lower bound of the next window below `high` holding about `want` keys. `count(bound)`
    /// answers how many keys `[bound, high)` holds; `first(bound)` the first key of `[bound, high)`.
    mutating func lowerBound(
        below high: [UInt8], want: Int, count: ([UInt8]) throws -> Int64, first: ([UInt8]) throws -> [UInt8]?
    ) throws -> [UInt8] {
        let want = Int64(want)
        if floor != start && !floor.lexicographicallyPrecedes(high) {
            // The part is read: the rest of the range is a new part.
            (floor, ceiling, density) = (start, nil, nil)
        }
        var total: Int64?
        if density == nil {
            total = try count(start)
            if total! <= max(4 * want, Self.wholePartKeys) { return start }
            if let key = try first(start) { try narrow(from: key, below: high, keysAbove: 0, count: count) }
        }
        var (line, top, bottom) = line(below: high)
        guard top > bottom else { return floor }
        var span = Double(top - bottom)
        if let total {
            density = Double(total) / span
            densityPrefix = line.prefix.count
        }
        // A longer common prefix zooms the line in: a point is 256 times narrower per byte.
        var width = Double(want) / (density! * pow(256, Double(densityPrefix - line.prefix.count)))
        func bound(_ width: Double) -> [UInt8] { width >= span ? floor : line.key(at: top - UInt64(max(width, 1))) }
        var few = (width: 0.0, keys: Int64(0), bound: high)  // the widest width known to hold fewer than `want` keys
        var many: Double?  // the narrowest width known to hold more than 4 × `want`
        var narrowed = false
        for _ in 0..<40 {
            width = min(max(width, 1), span)
            let candidate = bound(width)
            let keys = try count(candidate)
            if keys >= (want + 1) / 2 && keys <= 4 * want || width >= span && keys < want {
                density = Double(max(keys, 1)) / width
                densityPrefix = line.prefix.count
                return candidate
            }
            if keys < want {
                few = (width, keys, candidate)  // (fewer than half of `want`)
                width = many.map { Self.between(few.width, $0) } ?? width * max(4, Double(want) / Double(max(keys, 1)))
                continue
            }
            if !narrowed, let key = try first(candidate) {
                // From too few to too many: look closer at the keys in between.
                narrowed = true
                try narrow(from: key, below: few.bound, keysAbove: few.keys, count: count)
                (line, top, bottom) = self.line(below: few.bound)
                span = Double(top &- bottom)
                guard span > 0 else { return floor }
                many = floor.lexicographicallyPrecedes(candidate) ? Double(top &- line.position(candidate)) : nil
                few = (0, few.keys, few.bound)
                width = many.map { Self.between(1, $0) } ?? span / 2
                continue
            }
            many = width
            width = Self.between(few.width, width)
            if let many, many - few.width < 2 { break }  // the keys share a position: no finer window
        }
        return few.width >= 1 ? few.bound : bound(many ?? width)
    }

    /// Narrows the part to the keys that share the longest prefix `q` of `key` (the first key
    /// of a window) with no key in `[successor(q), limit)` but the `keysAbove` of `[limit, high)`.
    private mutating func narrow(from key: [UInt8], below limit: [UInt8], keysAbove: Int64, count: ([UInt8]) throws -> Int64) throws {
        var shared = KeyLine(key, limit).prefix.count  // keys between two keys begin with what they share
        var longest = key.count + 1  // the first length known not to be shared
        while longest - shared > 1 {
            let length = (shared + longest) / 2
            if let successor = KeyRange.prefixSuccessor(Array(key[..<length])), successor.lexicographicallyPrecedes(limit),
               try count(successor) > keysAbove {
                longest = length
            } else {
                shared = length
            }
        }
        let prefix = Array(key[..<shared])
        floor = floor.lexicographicallyPrecedes(prefix) ? prefix : floor
        let successor = KeyRange.prefixSuccessor(prefix)
        ceiling = successor.map { $0.lexicographicallyPrecedes(limit) ? $0 : limit } ?? limit
    }

    /// What a window `[low, high)` held: the density the next window's first probe starts from.
    mutating func learn(keys: Int64, from low: [UInt8], below high: [UInt8]) {
        let (line, top, bottom) = line(below: high)
        let width = Double(low == floor || low == start ? top &- bottom : top &- line.position(low))
        guard width > 0 else { return }
        if keys > 0 {
            density = Double(keys) / width
        } else if let old = density {
            density = old * pow(256, Double(densityPrefix - line.prefix.count)) / 4
        }
        densityPrefix = line.prefix.count
    }

    /// A width between `a` (too narrow) and `b` (too wide): geometric across orders of magnitude.
    private static func between(_ a: Double, _ b: Double) -> Double {
        a >= 1 && b / a > 16 ? (a * b).squareRoot() : (a + b) / 2
    }
}
