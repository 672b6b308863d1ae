import Foundation
import StrataEngine

/// Checks an existing LevelDB store before LevelDB opens it: LevelDB rotates its info log even to
/// report an error, and reports a foreign comparator as a plain error, so both checks run first.
///
/// - No file may be named as LevelDB's log number 0 (`000000.log`, `0.log`, …; else `corrupt`):
///   recovery replays the logs numbered at or above the manifest's log number, or equal to its
///   previous log number (usually 0), and making the name of log 0 fails an assertion that stops
///   the process (found by the `files` fuzz target). LevelDB numbers its files from 1.
/// - `CURRENT` must name a manifest that exists and is not empty (else `corrupt`).
/// - The manifest's first record must name LevelDB's bytewise comparator (else `notAStore`): it is
///   a log record (a 7-byte header: checksum, length, type) holding a VersionEdit that begins
///   with the comparator, tag 1 then a length-prefixed name (LevelDB's `db/log_format.h` and
///   `db/version_edit.cc`).
enum LevelDBFileCheck {
    static let bytewise = "leveldb.BytewiseComparator"

    static func validate(_ path: String) throws(EngineError) {
        if let zero = (try? FileManager.default.contentsOfDirectory(atPath: path))?.first(where: isLogNumberZero) {
            throw .corrupt(path: path, detail: "\(zero) is not a LevelDB log name (LevelDB numbers its files from 1)")
        }
        let current = (path as NSString).appendingPathComponent("CURRENT")
        guard FileManager.default.fileExists(atPath: current) else { return }
        guard let text = try? String(contentsOfFile: current, encoding: .utf8),
              text.hasPrefix("MANIFEST-"), text.hasSuffix("\n"),
              text.dropFirst(9).dropLast().allSatisfy(\.isNumber) else {
            throw .corrupt(path: path, detail: "CURRENT does not name a LevelDB manifest")
        }
        let manifest = (path as NSString).appendingPathComponent(String(text.dropLast()))
        let size = (try? FileManager.default.attributesOfItem(atPath: manifest)[.size] as? NSNumber)?.intValue ?? -1
        guard size > 0 else {
            throw .corrupt(path: path, detail: "\(text.dropLast()) is \(size < 0 ? "missing" : "empty") (truncated?)")
        }
        // A manifest whose first record does not start as expected is left to LevelDB's checks.
        guard let handle = FileHandle(forReadingAtPath: manifest) else { return }
        defer { try? handle.close() }
        if let head = try? handle.read(upToCount: 4096), let name = comparator(inManifest: [UInt8](head)), name != bytewise {
            throw .notAStore(path: path, reason: "a LevelDB store made with another comparator (\(name)); Strata's keys are bytewise (\(bytewise))")
        }
    }

    /// Whether LevelDB's file-name parser reads `name` as the log numbered 0: digits, all zeros,
    /// then `.log`.
    static func isLogNumberZero(_ name: String) -> Bool {
        name.hasSuffix(".log") && name.count > 4 && name.dropLast(4).allSatisfy { $0 == "0" }
    }

    /// The comparator named by a manifest's first record, or `nil` when it does not begin with one.
    static func comparator(inManifest bytes: [UInt8]) -> String? {
        var offset = 7
        func varint() -> Int? {
            var value = 0
            var shift = 0
            while offset < bytes.count && shift < 35 {
                let byte = bytes[offset]
                offset += 1
                value |= Int(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }
        guard bytes.count > 7, varint() == 1, let length = varint(), length <= bytes.count - offset else { return nil }
        return String(decoding: bytes[offset..<(offset + length)], as: UTF8.self)
    }
}
