/// The keys between two bounds laid on a line of 2^64 points, so that a range can be cut into
/// windows: a key's position is the 8 bytes after the bounds' common prefix, read as a big-endian
/// number (missing bytes count as zeros).
///
/// Reverse scans need it because etcd 3.4 answers a descending range request by reading every
/// key of the range and sorting them, whatever its limit; a window near the range's end holding
/// about as many keys as wanted keeps each request's cost to what it returns.
struct KeyLine {
    /// The bounds' common prefix.
    let prefix: [UInt8]

    init(_ low: [UInt8], _ high: [UInt8]) {
        var length = 0
        while length < low.count, length < high.count, low[length] == high[length] { length += 1 }
        prefix = Array(low[..<length])
    }

    /// The position of `key`, which begins with ``prefix``.
    func position(_ key: [UInt8]) -> UInt64 {
        var result: UInt64 = 0
        for i in 0..<8 {
            let index = prefix.count + i
            result = result << 8 | UInt64(index < key.count ? key[index] : 0)
        }
        return result
    }

    /// The shortest key at `position`: a key `k` with `position(k) == position`, above every key
    /// at a lower position and not above any key at a higher one.
    func key(at position: UInt64) -> [UInt8] {
        var bytes = (0..<8).map { UInt8(truncatingIfNeeded: position >> (56 - 8 * $0)) }
        while bytes.last == 0 { bytes.removeLast() }
        return prefix + bytes
    }
}
