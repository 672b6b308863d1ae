import Foundation
import StrataEngine
internal import CCRC32C

/// Errors of the store tools (copy, backup, dump).
public enum StoreToolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The destination of a copy already holds data; nothing was written to it.
    case destinationNotEmpty(path: String)
    /// The copy's pairs, read back, are not the source's: the copy is left without a manifest,
    /// so it never opens as a store.
    case copyMismatch(path: String, detail: String)
    /// A pair of the source is beyond what the destination's engine takes (its declared key,
    /// value or transaction limits); checked before anything is written.
    case exceedsDestinationLimits(path: String, detail: String)
    /// An argument the tool cannot use.
    case invalidArgument(String)

    public var description: String {
        switch self {
        case let .destinationNotEmpty(path): return "the copy's destination \(path) already holds data; nothing was written"
        case let .copyMismatch(path, detail): return "the copy at \(path) does not match its source (\(detail)); it has no manifest and will not open"
        case let .exceedsDestinationLimits(path, detail): return "the copy's destination \(path) cannot hold \(detail); nothing was written"
        case let .invalidArgument(detail): return detail
        }
    }
}

/// What ``Store/copy(to:batchSize:progress:)`` wrote.
public struct CopyReport: Sendable, Hashable {
    /// Pairs written (the manifest and the copy's own identity included).
    public let pairs: Int
    /// The key and value bytes of the pairs copied, in total (the manifest's and identity's not included).
    public let bytes: Int
    /// Write transactions on the destination (the manifest's included).
    public let batches: Int
}

extension Store {
    /// Copies the store, as one snapshot, into the empty store `destination` (any engine):
    /// every pair byte for byte except the manifest, which is rewritten for the destination's
    /// engine, and the store's identity: the copy is another store and draws its own (page tokens
    /// of one are refused by the other). Writers of this store may keep writing: the copy holds exactly the state of the
    /// moment it began (a backup). A copy read by another engine is restorable with another copy.
    ///
    /// The destination is written in batches of at most `batchSize` pairs (and within its engine's
    /// declared transaction limits), each its own transaction; its pairs are then read back and
    /// compared with the source's (count and CRC-32C), and only then are the manifest and the identity
    /// written, last.
    /// An interrupted copy therefore holds data without a manifest, which every open refuses
    /// (``RecordError/manifestMismatch(detail:)``); delete it and copy again. Refused before
    /// anything is written: a destination that already holds data
    /// (``StoreToolError/destinationNotEmpty(path:)``), and a source pair the destination's
    /// engine cannot take (a key or value over its declared limits, or a pair larger than one of
    /// its transactions: ``StoreToolError/exceedsDestinationLimits(path:detail:)``). The bundled
    /// engines share one key limit, so this concerns engines with smaller limits (etcd's values).
    @discardableResult
    public func copy(to destination: EngineConfiguration, batchSize: Int = 1_000,
                     progress: (InspectionProgress) throws -> Void = { _ in }) throws -> CopyReport {
        precondition(batchSize > 0, "a batch holds at least one pair")
        let target = try destination.open(EngineOptions(mode: .create, durability: .full))
        defer { try? target.close() }
        let location = destination.path ?? destination.name
        guard try target.read({ tx in try tx.keys(.all, limit: 1).isEmpty }) else {
            throw StoreToolError.destinationNotEmpty(path: location)
        }
        let limits = target.limits
        let clock = ContinuousClock()
        let start = clock.now
        var batches = 0
        var digest = PairDigest()
        // The copy's manifest names the chain the source's does, read in the copy's snapshot (not
        // the transforms this store was opened with: a read-only open with a new key and the old
        // one begins no rotation), and keeps a rotation under way (its job's position is copied).
        var manifest = StrataRecords.Manifest.current(target, transforms: [])
        try engine.read { tx in
            if let stored = try tx.get(SystemKey.manifest).map(StrataRecords.Manifest.decode) {
                (manifest.transforms, manifest.retiring) = (stored.transforms, stored.retiring)
            }
            // First pass: count the pairs and check each against the destination's limits.
            var total = 0
            var refusal: String?
            try tx.scan(.all, reverse: false, limit: nil) { key, value in
                total += 1
                if key.count > limits.maxKeyLength {
                    refusal = "a key of \(key.count) bytes (its limit: \(limits.maxKeyLength)): \(StoredValue.hex(key))"
                } else if let max = limits.maxValueLength, value.count > max {
                    refusal = "a value of \(value.count) bytes (its limit: \(max)) at key \(StoredValue.hex(key))"
                } else if let max = limits.maxBytesPerTransaction, key.count + value.count > max {
                    refusal = "a pair of \(key.count + value.count) bytes (its transactions' limit: \(max)) at key \(StoredValue.hex(key))"
                }
                return refusal == nil
            }
            if let refusal { throw StoreToolError.exceedsDestinationLimits(path: location, detail: refusal) }
            var batch: [([UInt8], [UInt8])] = []
            var batchBytes = 0
            var done = 0
            func flush() throws {
                guard !batch.isEmpty else { return }
                try target.write { w in for (key, value) in batch { try w.put(value, forKey: key) } }
                batches += 1
                batch.removeAll(keepingCapacity: true)
                batchBytes = 0
                try progress(InspectionProgress(done: done, total: total, elapsed: clock.now - start))
            }
            try tx.scan(.all, reverse: false, limit: nil) { key, value in
                done += 1
                // The destination gets its own manifest and identity (a copy is another store).
                if key.elementsEqual(SystemKey.manifest) || key.elementsEqual(SystemKey.identity) { return true }
                let size = key.count + value.count
                if batch.count == min(batchSize, limits.maxOperationsPerTransaction ?? .max)
                    || (limits.maxBytesPerTransaction.map { batchBytes + size > $0 } ?? false) {
                    try flush()
                }
                batch.append((Array(key), Array(value)))
                batchBytes += size
                digest.add(key, value)
                return true
            }
            try flush()
        }
        var copied = PairDigest()
        try target.read { tx in
            try tx.scan(.all, reverse: false, limit: nil) { key, value in
                copied.add(key, value)
                return true
            }
        }
        guard copied == digest else {
            throw StoreToolError.copyMismatch(path: location, detail: "\(copied.pairs) pairs read back, \(digest.pairs) copied")
        }
        try target.write { tx in
            try tx.put(StrataRecords.Manifest.encode(manifest), forKey: SystemKey.manifest)
            try StoreIdentity.drawNew(in: tx)
        }
        try target.close()
        return CopyReport(pairs: digest.pairs + 2, bytes: digest.bytes, batches: batches + 1)
    }
}

/// A count and CRC-32C of a sequence of pairs (each key and value with its length), to compare
/// a copy with its source.
struct PairDigest: Equatable {
    var pairs = 0
    var bytes = 0
    var crc: UInt32 = 0

    mutating func add(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        pairs += 1
        bytes += key.count + value.count
        for part in [key, value] {
            var length = UInt32(part.count).littleEndian
            withUnsafeBytes(of: &length) { crc = strata_crc32c_extend(crc, $0.baseAddress, 4) }
            crc = strata_crc32c_extend(crc, part.baseAddress, part.count)
        }
    }
}
