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

    /// Why a stored value fails its check, as a record error's detail.
    @usableFromInline
    struct Mismatch: Error {
        @usableFromInline let detail: String
        @inlinable init(detail: String) { self.detail = detail }
    }

    /// The bytes of a stored record value before its checksum, once the checksum is shown to
    /// match `key` and those bytes; damaged or truncated values throw, naming which.
    @inlinable
    static func body(ofKey key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(Mismatch) -> UnsafeRawBufferPointer {
        guard value.count >= 4 else { throw Mismatch(detail: "value: \(value.count) bytes, too short for a record") }
        let body = UnsafeRawBufferPointer(rebasing: value[..<(value.count - 4)])
        let stored = UInt32(littleEndian: value.loadUnaligned(fromByteOffset: value.count - 4, as: UInt32.self))
        guard of(key: key, value: body) == stored else {
            throw Mismatch(detail: "checksum mismatch: the stored key or value bytes were changed")
        }
        return body
    }

    @usableFromInline
    static func extend(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        strata_crc32c_extend(crc, bytes.baseAddress, bytes.count)
    }
}
