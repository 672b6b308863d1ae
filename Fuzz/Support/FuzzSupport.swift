import Foundation

/// One fuzz target: a body that must never crash, hang or read out of bounds on any input (it
/// stops the process with ``violated(_:)`` when an invariant fails), and the seed inputs its
/// corpus starts from (real encodings, so mutations start from valid shapes).
public struct FuzzTarget: Sendable {
    public let name: String
    public let run: @Sendable (UnsafeRawBufferPointer) -> Void
    public let seeds: @Sendable () -> [[UInt8]]

    public init(name: String, run: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, seeds: @escaping @Sendable () -> [[UInt8]]) {
        self.name = name
        self.run = run
        self.seeds = seeds
    }
}

/// Stops the process: libFuzzer reports the input as a crash and saves it.
public func violated(_ what: String) -> Never {
    FileHandle.standardError.write(Data("invariant violated: \(what)\n".utf8))
    abort()
}

/// Reads a fuzz input front to back; past its end every read gives zeros / nothing.
public struct InputReader {
    public let bytes: UnsafeRawBufferPointer
    public var offset = 0

    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    public var isAtEnd: Bool { offset >= bytes.count }

    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next `count` bytes (fewer at the end).
    public mutating func take(_ count: Int) -> UnsafeRawBufferPointer {
        let end = min(bytes.count, offset + count)
        defer { offset = end }
        return UnsafeRawBufferPointer(rebasing: bytes[min(offset, end)..<end])
    }

    /// A chunk whose length is the next `lengthBytes` bytes (big-endian), then its bytes.
    public mutating func chunk(lengthBytes: Int = 1) -> [UInt8] {
        let count = (0..<lengthBytes).reduce(0) { length, _ in length << 8 | Int(byte()) }
        return Array(take(count))
    }

    /// What is left.
    public mutating func rest() -> UnsafeRawBufferPointer { take(bytes.count) }
}

/// The framing `InputReader.chunk` reads: the length in `lengthBytes` bytes (big-endian; one byte
/// frames at most 255 bytes, the rest is cut), then the bytes.
public func framed(_ bytes: [UInt8], lengthBytes: Int = 1) -> [UInt8] {
    let kept = lengthBytes == 1 ? Array(bytes.prefix(255)) : bytes
    return (0..<lengthBytes).reversed().map { UInt8(truncatingIfNeeded: kept.count >> (8 * $0)) } + kept
}

/// libFuzzer's entry points, for an executable of targets: each executable's `@_cdecl`
/// functions call these with its list. The target is named by STRATA_FUZZ_TARGET; with
/// STRATA_FUZZ_SEEDS=<directory> the target writes its seed inputs there instead of fuzzing (how
/// Fuzz/Corpus was made).
public enum FuzzDriver {
    /// The target this process runs, chosen once from the environment among `targets`.
    public static func chosen(among targets: [FuzzTarget]) -> FuzzTarget {
        let name = ProcessInfo.processInfo.environment["STRATA_FUZZ_TARGET"] ?? ""
        guard let target = targets.first(where: { $0.name == name }) else {
            FileHandle.standardError.write(Data("STRATA_FUZZ_TARGET must be one of: \(targets.map(\.name).joined(separator: ", "))\n".utf8))
            exit(2)
        }
        return target
    }

    /// `LLVMFuzzerInitialize`: checks the target's name, or writes its seeds and exits.
    public static func initialize(_ target: FuzzTarget) -> Int32 {
        guard let directory = ProcessInfo.processInfo.environment["STRATA_FUZZ_SEEDS"] else { return 0 }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (i, seed) in target.seeds().enumerated() {
                try Data(seed).write(to: URL(fileURLWithPath: directory).appendingPathComponent(String(format: "seed-%03d", i)))
            }
        } catch {
            FileHandle.standardError.write(Data("writing the seeds failed: \(error)\n".utf8))
            exit(1)
        }
        exit(0)
    }
}
