import Foundation

/// What a compaction did: how much room the store took before and after it.
///
/// Sizes are what the engine's files take (the sum of the regular files in the store's
/// directory) or, on etcd, the sum of the members' backend databases.
public struct CompactionReport: Sendable, Hashable, CustomStringConvertible {
    /// The store's size in bytes before the compaction.
    public let bytesBefore: Int
    /// The store's size in bytes after it.
    public let bytesAfter: Int

    /// A report of a store that took `bytesBefore` bytes and then `bytesAfter`.
    public init(bytesBefore: Int, bytesAfter: Int) {
        self.bytesBefore = bytesBefore
        self.bytesAfter = bytesAfter
    }

    /// The size after as a fraction of the size before (1 for an empty store).
    public var ratio: Double { bytesBefore == 0 ? 1 : Double(bytesAfter) / Double(bytesBefore) }

    public var description: String {
        "compacted from \(bytesBefore) to \(bytesAfter) bytes (\(String(format: "%.2f", ratio))x)"
    }
}

/// Storage that can give the room of deleted data back to the file system (or the server).
///
/// ``CoreEngine/compact()`` calls ``compact()`` as the one writer of this process with no read
/// transaction of this process running, and admits none until it returns. The storage keeps the
/// rest of the promise itself: every pair is there afterwards, and a crash during the compaction
/// leaves the store as it was before or as it is after, whole.
public protocol CompactingStorage: KeyValueStorage {
    /// Compacts the store; see ``KeyValueEngine/compact()`` for the contract.
    func compact() throws -> CompactionReport
}

extension KeyValueEngine {
    /// Refuses: an engine that declares no compaction of its own cannot compact.
    public func compact() throws -> CompactionReport {
        throw EngineError.invalidArgument("the \(engineName) engine cannot compact a store")
    }
}

extension CompactionReport {
    /// The bytes the regular files directly inside `path` take (their sizes, not their blocks):
    /// the size users see with `ls -l` and compare before and after a compaction.
    package static func filesSize(in path: String) -> Int {
        let fm = FileManager.default
        let names = (try? fm.contentsOfDirectory(atPath: path)) ?? []
        return names.reduce(0) { total, name in
            let attributes = try? fm.attributesOfItem(atPath: (path as NSString).appendingPathComponent(name))
            guard attributes?[.type] as? FileAttributeType == .typeRegular else { return total }
            return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
        }
    }
}
