import CCRC32C
import Foundation

/// Tells a log whose last record was torn by a power loss from a log damaged elsewhere.
///
/// LevelDB appends each commit to its log as records (`db/log_format.h`: 32 KiB blocks, each
/// record a 7-byte header of masked CRC-32C, length and type, then its bytes). A commit under
/// full durability is acknowledged only after the log was synced, so a record torn by a power
/// loss (some of its 512-byte sectors on disk, others not) belongs to a commit nobody was told
/// of. With `paranoid_checks`, which Strata keeps on to refuse damaged stores, LevelDB reports
/// that record as corruption and refuses the whole store. When the damage is only at the tail
/// (no valid record follows the first bad one), the adapter lets LevelDB's own recovery drop
/// it, as LevelDB does without paranoid checks; damage followed by valid records is refused.
enum LevelDBLogTail {
    private static let blockSize = 32_768
    private static let headerSize = 7
    private static let maskDelta: UInt32 = 0xA282_EAD8

    /// Whether the store's newest log ends in damaged records with no valid record after them,
    /// and every other log is whole.
    static func onlyTailIsTorn(_ storePath: String) -> Bool {
        let logs = ((try? FileManager.default.contentsOfDirectory(atPath: storePath)) ?? [])
            .filter { $0.hasSuffix(".log") && $0.dropLast(4).allSatisfy(\.isNumber) }
            .sorted { (Int($0.dropLast(4)) ?? 0) < (Int($1.dropLast(4)) ?? 0) }
        guard let newest = logs.last else { return false }
        for log in logs {
            guard let data = FileManager.default.contents(atPath: (storePath as NSString).appendingPathComponent(log)) else { return false }
            let damage = [UInt8](data).withUnsafeBytes { tailDamage($0) }
            if log == newest ? damage != .atTail : damage != .none { return false }
        }
        return true
    }

    enum Damage { case none, atTail, inside }

    /// Where a log's records fail their checks, if anywhere.
    static func tailDamage(_ log: UnsafeRawBufferPointer) -> Damage {
        var offset = 0
        while offset + headerSize <= log.count {
            let left = blockSize - offset % blockSize
            // A block's last few bytes cannot hold a header: LevelDB fills them with zeros.
            if left < headerSize { offset += left; continue }
            // An all-zero header is space LevelDB skips (to the next block), not a record.
            if log.loadUnaligned(fromByteOffset: offset, as: UInt32.self) == 0 && log[offset + 4] == 0 && log[offset + 5] == 0 && log[offset + 6] == 0 {
                offset += left
                continue
            }
            guard let end = record(at: offset, in: log) else {
                // The first bad record: a torn tail only if no valid record starts anywhere after
                // it (LevelDB would drop the rest of its block too, valid records included).
                for later in (offset + 1)..<max(offset + 1, log.count - headerSize + 1) where record(at: later, in: log) != nil {
                    return .inside
                }
                return .atTail
            }
            offset = end
        }
        return .none
    }

    /// The end of the valid record starting at `offset`, or nil.
    private static func record(at offset: Int, in log: UnsafeRawBufferPointer) -> Int? {
        let left = blockSize - offset % blockSize
        guard left >= headerSize, offset + headerSize <= log.count else { return nil }
        let type = log[offset + 6]
        let length = Int(log[offset + 4]) | Int(log[offset + 5]) << 8
        let end = offset + headerSize + length
        guard (1...4).contains(type), headerSize + length <= left, end <= log.count else { return nil }
        let masked = log.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
        let crc = strata_crc32c_extend(strata_crc32c_extend(0, log.baseAddress! + offset + 6, 1), log.baseAddress! + offset + headerSize, length)
        return unmask(masked) == crc ? end : nil
    }

    private static func unmask(_ masked: UInt32) -> UInt32 {
        let rotated = masked &- maskDelta
        return (rotated >> 17) | (rotated << 15)
    }
}
