internal import CCRC32C

/// The checksum at the end of every stored record value: CRC-32C over the record's key bytes
/// followed by its value bytes (without the checksum), stored little-endian (RecordFormat.md).
///
/// A flipped bit in a field would otherwise decode as another valid value (a different number):
/// with it, every read of a damaged record throws ``RecordError/corruptRecord(type:detail:)``,
/// also for a damaged key. The CPU's CRC instruction computes it where there is one. Not
/// cryptographic: it detects accidents, not tampering.
@usableFromInline
enum RecordChecksum {
    /// The checksum of a record stored under `key` with `value` (without the checksum itself).
    @inlinable
    static func of(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> UInt32 {
        extend(extend(0, key), value)
    }

    @usableFromInline
    static func extend(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        strata_crc32c_extend(crc, bytes.baseAddress, bytes.count)
    }
}
