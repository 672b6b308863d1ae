import StrataEngine

/// The crash harness's data: transaction `seq` writes `batchSize` records, each holding its
/// sequence number, its index and a checksum over both, sets `last` to `seq`, and deletes the
/// batch written `window` transactions earlier. So after any crash the store must hold exactly
/// the batches `last - window + 1 ... last`, each complete and intact, and nothing else.
enum CrashData {
    static let batchSize = 10
    static let window: UInt64 = 50
    static let lastKey: [UInt8] = Array("last".utf8)

    static func key(_ seq: UInt64, _ index: Int) -> [UInt8] {
        Array("t".utf8) + withUnsafeBytes(of: seq.bigEndian) { Array($0) } + [UInt8(index)]
    }

    /// 8 bytes seq, 1 byte index, 55 bytes derived from both, 8 bytes checksum.
    static func value(_ seq: UInt64, _ index: Int) -> [UInt8] {
        var body = withUnsafeBytes(of: seq.bigEndian) { Array($0) } + [UInt8(index)]
        var x = seq &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index)
        for _ in 0..<55 {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17
            body.append(UInt8(truncatingIfNeeded: x))
        }
        return body + withUnsafeBytes(of: checksum(body).bigEndian) { Array($0) }
    }

    static func checksum(_ bytes: [UInt8]) -> UInt64 {
        bytes.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
    }

    /// Writes transaction `seq`.
    static func write(_ seq: UInt64, _ tx: any KeyValueWriter) throws {
        for i in 0..<batchSize { try tx.put(value(seq, i), forKey: key(seq, i)) }
        try tx.put(withUnsafeBytes(of: seq.bigEndian) { Array($0) }, forKey: lastKey)
        if seq > window {
            try tx.clear(.halfOpen(key(seq - window, 0), key(seq - window + 1, 0)))
        }
    }

    /// The last committed sequence number, or 0.
    static func last(_ tx: any KeyValueReader) throws -> UInt64 {
        try tx.get(lastKey).map { $0.reduce(0) { $0 << 8 | UInt64($1) } } ?? 0
    }

    /// Checks the whole store; returns a description of the first problem, or nil.
    static func verify(_ tx: any KeyValueReader, acknowledged: UInt64) throws -> String? {
        let last = try last(tx)
        if acknowledged > last { return "lost: transaction \(acknowledged) was acknowledged but the store ends at \(last)" }
        let first = last > window ? last - window + 1 : 1
        var expected: [[UInt8]] = []
        if last > 0 { for seq in first...last { for i in 0..<batchSize { expected.append(key(seq, i)) } } }
        var index = 0
        var problem: String?
        try tx.scan(.prefix(Array("t".utf8)), reverse: false, limit: nil) { key, value in
            let k = Array(key)
            guard index < expected.count, k == expected[index] else {
                problem = "partial: unexpected key \(k) (expected \(index < expected.count ? "\(expected[index])" : "nothing more"))"
                return false
            }
            let v = Array(value)
            let seq = k[1..<9].reduce(0) { $0 << 8 | UInt64($1) }
            if v != CrashData.value(seq, Int(k[9])) { problem = "corrupt: the value of \(k) fails its checksum" ; return false }
            index += 1
            return true
        }
        if let problem { return problem }
        if index != expected.count { return "partial: \(expected.count - index) records of transactions \(first)...\(last) are missing" }
        return nil
    }
}
