import Foundation
import StrataConformance

/// What the power-loss shim (`Tests/Shims/powerloss.c`) recorded: the file operations a process
/// completed under a store's directory, in order, with the writer's acknowledgements among them.
enum RecordedOperation {
    case create(String)
    case write(String, offset: Int, bytes: [UInt8], synced: Bool)
    case truncate(String, length: Int)
    /// fsync or fdatasync of a file, or of the directory itself ("").
    case sync(String)
    case rename(String, String)
    case unlink(String)
    /// The writer acknowledged this transaction (it wrote "ack N" after the commit returned).
    case ack(UInt64)

    /// Parses the shim's log; a record cut short at the end (the process died writing it) is dropped.
    static func parse(_ data: [UInt8]) -> [RecordedOperation] {
        var operations: [RecordedOperation] = []
        var at = 0
        func integer(_ size: Int) -> Int? {
            guard at + size <= data.count else { return nil }
            defer { at += size }
            return (0..<size).reduce(0) { $0 | Int(data[at + $1]) << (8 * $1) }
        }
        func bytes() -> [UInt8]? {
            guard let count = integer(4), at + count <= data.count else { return nil }
            defer { at += count }
            return Array(data[at..<(at + count)])
        }
        func path() -> String? { bytes().map { String(decoding: $0, as: UTF8.self) } }
        while at < data.count {
            let type = data[at]
            at += 1
            let operation: RecordedOperation?
            switch type {
            case UInt8(ascii: "C"): operation = path().map { .create($0) }
            case UInt8(ascii: "W"):
                if let p = path(), let offset = integer(8), let written = bytes(), let synced = integer(1) {
                    operation = .write(p, offset: offset, bytes: written, synced: synced != 0)
                } else { operation = nil }
            case UInt8(ascii: "T"):
                if let p = path(), let length = integer(8) { operation = .truncate(p, length: length) } else { operation = nil }
            case UInt8(ascii: "S"): operation = path().map { .sync($0) }
            case UInt8(ascii: "R"):
                if let from = path(), let to = path() { operation = .rename(from, to) } else { operation = nil }
            case UInt8(ascii: "U"): operation = path().map { .unlink($0) }
            case UInt8(ascii: "A"):
                operation = bytes().flatMap { UInt64(String(decoding: $0, as: UTF8.self).dropFirst(4).trimmingCharacters(in: .whitespacesAndNewlines)) }.map { .ack($0) }
            default: operation = nil
            }
            guard let operation else { break }
            operations.append(operation)
        }
        return operations
    }
}

/// How much of what was not synced a power loss keeps.
enum LossMode: CaseIterable, CustomStringConvertible {
    /// Every write not covered by a completed sync is lost.
    case allUnsynced
    /// Each unsynced write is kept or lost at random.
    case randomSubset
    /// Unsynced writes are torn: each 512-byte (or 4 KiB) aligned piece kept or lost at random.
    case torn512, torn4096

    var description: String {
        switch self {
        case .allUnsynced: "all unsynced writes lost"
        case .randomSubset: "a random subset lost"
        case .torn512: "torn at 512 bytes"
        case .torn4096: "torn at 4 KiB"
        }
    }
}

/// The disk a power loss after the first `cut` recorded operations could leave.
///
/// A write is on disk when its descriptor was synchronous (`O_SYNC`/`O_DSYNC`) or when a sync
/// of its file completed after it. The directory's entries (files created, renamed, unlinked)
/// are on disk as of the last completed sync of the directory; later changes to them are lost
/// (`allUnsynced`) or kept in order up to a random point (metadata is journaled in order).
/// Files that are rebuilt after a crash by design (LMDB's `lock.mdb`, SQLite's `-shm`) are left out.
///
/// Writes reach the disk from the page cache in 4 KiB pages, so a file's length moves by whole
/// pages: a torn write that extends a file extends it to the end of each page it kept a part
/// of (zeros where a 512-byte sector was lost), never to a length inside a page it did not write.
struct PowerLossImage {
    /// Each file's bytes, by name.
    private(set) var files: [String: [UInt8]] = [:]
    /// The last transaction acknowledged before the loss.
    private(set) var acknowledged: UInt64 = 0

    init(_ operations: ArraySlice<RecordedOperation>, mode: LossMode, random: inout SeededRandom) {
        // Files are objects (an inode each); names point to them.
        var names: [String: Int] = [:]
        var objects = 0
        var durableNames: [String: Int] = [:]
        var pendingNames: [[String: Int]] = []  // the namespace after each directory change since the last directory sync
        var contents: [Int: [(index: Int, operation: RecordedOperation)]] = [:]
        var lastSync: [Int: Int] = [:]
        func object(_ name: String) -> Int {
            if let id = names[name] { return id }
            // A file opened that existed before the recording began: there were none (the store starts empty).
            objects += 1
            names[name] = objects
            return objects
        }
        for (index, operation) in zip(operations.indices, operations) {
            switch operation {
            case let .create(name):
                objects += 1
                names[name] = objects
                pendingNames.append(names)
            case let .write(name, _, _, _), let .truncate(name, _):
                contents[object(name), default: []].append((index, operation))
            case let .sync(name):
                if name.isEmpty {
                    durableNames = names
                    pendingNames = []
                } else {
                    lastSync[object(name)] = index
                }
            case let .rename(from, to):
                names[to] = names[from]
                names[from] = nil
                pendingNames.append(names)
            case let .unlink(name):
                names[name] = nil
                pendingNames.append(names)
            case let .ack(seq):
                acknowledged = seq
            }
        }
        // The names on disk: as of the last directory sync, plus, unless every unsynced change is
        // lost, the later changes up to a random point.
        var onDisk = durableNames
        if mode != .allUnsynced, !pendingNames.isEmpty {
            let kept = Int.random(in: 0...pendingNames.count, using: &random)
            if kept > 0 { onDisk = pendingNames[kept - 1] }
        }
        for (name, id) in onDisk where name != "lock.mdb" && !name.hasSuffix("-shm") {
            var bytes: [UInt8] = []
            for (index, operation) in contents[id] ?? [] {
                let synced = (lastSync[id] ?? -1) > index
                switch operation {
                case let .write(_, offset, written, syncedWrite):
                    if synced || syncedWrite {
                        Self.apply(written, at: offset, to: &bytes)
                    } else {
                        Self.applyUnsynced(written, at: offset, to: &bytes, mode: mode, random: &random)
                    }
                case let .truncate(_, length):
                    if synced || (mode != .allUnsynced && Bool.random(using: &random)) {
                        if length < bytes.count { bytes.removeSubrange(length...) } else { bytes += repeatElement(0, count: length - bytes.count) }
                    }
                default: break
                }
            }
            files[name] = bytes
        }
    }

    private static func apply(_ written: some Collection<UInt8>, at offset: Int, to bytes: inout [UInt8]) {
        if bytes.count < offset + written.count { bytes += repeatElement(0, count: offset + written.count - bytes.count) }
        bytes.replaceSubrange(offset..<(offset + written.count), with: written)
    }

    private static func applyUnsynced(_ written: [UInt8], at offset: Int, to bytes: inout [UInt8], mode: LossMode, random: inout SeededRandom) {
        switch mode {
        case .allUnsynced: return
        case .randomSubset: if Bool.random(using: &random) { apply(written, at: offset, to: &bytes) }
        case .torn512, .torn4096:
            let sector = mode == .torn512 ? 512 : 4096, page = 4096
            let writeEnd = offset + written.count
            var start = offset
            while start < writeEnd {
                let end = min((start / sector + 1) * sector, writeEnd)
                if Bool.random(using: &random) {
                    apply(written[(start - offset)..<(end - offset)], at: start, to: &bytes)
                    // The page holding the kept piece reaches the disk whole in length.
                    let pageEnd = min((start / page + 1) * page, writeEnd)
                    if bytes.count < pageEnd { bytes += repeatElement(0, count: pageEnd - bytes.count) }
                }
                start = end
            }
        }
    }

    /// Writes the image into the empty directory `path`.
    func write(to path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for (name, bytes) in files {
            let file = (path as NSString).appendingPathComponent(name)
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: file))
        }
    }
}
