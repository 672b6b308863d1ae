/// The checksum format 1 put at the end of every record value (a multiply-xorshift hash over the
/// key and the value, each with its length). Format 2 uses CRC-32C (``RecordChecksum``); this one
/// is kept to check format-1 values while ``FormatUpgrade`` rewrites them (RecordFormat.md).
struct FormatOneChecksum {
    var state: UInt64 = 0x243F_6A88_85A3_08D3

    init() {}

    /// Mixes in `bytes` (length included, so moving bytes between the parts changes the result).
    mutating func combine(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset + 8 <= bytes.count {
            mix(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        mix(tail ^ UInt64(bytes.count) << 56)
    }

    mutating func mix(_ word: UInt64) {
        state = (state ^ word) &* 0x9E37_79B9_7F4A_7C15
        state ^= state >> 29
    }

    var value: UInt32 {
        var h = state &* 0xBF58_476D_1CE4_E5B9
        h ^= h >> 31
        return UInt32(truncatingIfNeeded: h ^ (h >> 32))
    }

    /// The checksum of a record stored under `key` with `value` (without the checksum itself).
    static func of(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> UInt32 {
        var checksum = FormatOneChecksum()
        checksum.combine(key)
        checksum.combine(value)
        return checksum.value
    }
}
