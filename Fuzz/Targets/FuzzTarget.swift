import Foundation
@testable import StrataRecords

/// One fuzz target: a body that must never crash, hang or read out of bounds on any input (it
/// stops the process with ``violated(_:)`` when an invariant fails), and the seed inputs its
/// corpus starts from (real encodings, so mutations start from valid shapes).
struct FuzzTarget: Sendable {
    let name: String
    let run: @Sendable (UnsafeRawBufferPointer) -> Void
    let seeds: @Sendable () -> [[UInt8]]

    static let all: [FuzzTarget] = [
        KeyTarget.target, FieldTarget.target, CodableTarget.target, RecordTarget.target, EntryTarget.target,
        TokenTarget.target, UpgradeTarget.target, StoreTarget.target, FileTarget.target,
    ]
}

/// Stops the process: libFuzzer reports the input as a crash and saves it.
func violated(_ what: String) -> Never {
    FileHandle.standardError.write(Data("invariant violated: \(what)\n".utf8))
    abort()
}

/// Reads a fuzz input front to back; past its end every read gives zeros / nothing.
struct InputReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next `count` bytes (fewer at the end).
    mutating func take(_ count: Int) -> UnsafeRawBufferPointer {
        let end = min(bytes.count, offset + count)
        defer { offset = end }
        return UnsafeRawBufferPointer(rebasing: bytes[min(offset, end)..<end])
    }

    /// A chunk whose length is the next `lengthBytes` bytes (big-endian), then its bytes.
    mutating func chunk(lengthBytes: Int = 1) -> [UInt8] {
        let count = (0..<lengthBytes).reduce(0) { length, _ in length << 8 | Int(byte()) }
        return Array(take(count))
    }

    /// What is left.
    mutating func rest() -> UnsafeRawBufferPointer { take(bytes.count) }
}

/// The framing `InputReader.chunk` reads: the length in `lengthBytes` bytes (big-endian; one byte
/// frames at most 255 bytes, the rest is cut), then the bytes.
func framed(_ bytes: [UInt8], lengthBytes: Int = 1) -> [UInt8] {
    let kept = lengthBytes == 1 ? Array(bytes.prefix(255)) : bytes
    return (0..<lengthBytes).reversed().map { UInt8(truncatingIfNeeded: kept.count >> (8 * $0)) } + kept
}

/// `value` followed by the checksum a stored value ends with (format 2's, or format 1's), so
/// that the decoders behind the checksum see the fuzzed bytes.
func withChecksum(_ value: [UInt8], key: [UInt8], formatOne: Bool = false) -> [UInt8] {
    let checksum = key.withUnsafeBytes { k in
        value.withUnsafeBytes { formatOne ? FormatOneChecksum.of(key: k, value: $0) : RecordChecksum.of(key: k, value: $0) }
    }
    return value + withUnsafeBytes(of: checksum.littleEndian) { Array($0) }
}
