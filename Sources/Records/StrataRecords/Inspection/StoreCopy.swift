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
    /// A record value a copy that re-seals values could not open (damaged, or refused by a
    /// transform): re-sealed, it would be lost. The copy has no manifest and will not open.
    case unreadableValue(key: String, detail: String)

    public var description: String {
        switch self {
        case let .destinationNotEmpty(path): return "the copy's destination \(path) already holds data; nothing was written"
        case let .copyMismatch(path, detail): return "the copy at \(path) does not match its source (\(detail)); it has no manifest and will not open"
        case let .exceedsDestinationLimits(path, detail): return "the copy's destination \(path) cannot hold \(detail); nothing was written"
        case let .invalidArgument(detail): return detail
        case let .unreadableValue(key, detail):
            return "the record at \(key) cannot be opened to be sealed again (\(detail)); the copy has no manifest and will not open"
        }
    }
}

/// What ``Store/copy(to:batchSize:progress:)`` wrote.
public struct CopyReport: Sendable, Hashable {
    /// Pairs written (the manifest, the copy's own identity and, for a copy that re-seals values
    /// with transforms, its salt included).
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
        try copy(to: destination, resealing: nil, batchSize: batchSize, progress: progress)
    }

    /// Copies the store as ``copy(to:batchSize:progress:)`` does, with its values re-sealed by
    /// `transforms` instead of the store's own: encryption added, removed or under another key,
    /// compression turned on or off (an empty chain stores the values as the records wrote them).
    ///
    /// Every record value is opened with this store's transforms and sealed with `transforms`
    /// (bound to a salt the copy draws: it is another store); every covering index entry gets its
    /// record's new value; entries of retired index generations and disabled indexes, which no
    /// read uses, are left behind; every other pair is copied as it is. The copy's manifest names
    /// `transforms`, and a key rotation under way in this store does not carry over (its values
    /// are all re-sealed). Index entries that hold a value but belong to no record or to no index
    /// the catalog lists are left behind too: they would carry values of the old chain. The
    /// destination's limits are checked against the source's sizes: a re-sealed value that grows
    /// past them (encryption adds 32 bytes, compression taken off restores the full size) fails
    /// the copy part-way, which then has no manifest. A record value that cannot be opened (damaged, or refused by a
    /// transform) stops the copy with ``StoreToolError/unreadableValue(key:detail:)``: re-sealed,
    /// it would be lost; the copy is then left without a manifest.
    @discardableResult
    public func copy(to destination: EngineConfiguration, transforms: [any ValueTransform], batchSize: Int = 1_000,
                     progress: (InspectionProgress) throws -> Void = { _ in }) throws -> CopyReport {
        try copy(to: destination, resealing: transforms, batchSize: batchSize, progress: progress)
    }

    /// The copy, byte for byte (`resealing` nil) or with values re-sealed by `resealing`.
    private func copy(to destination: EngineConfiguration, resealing: [any ValueTransform]?, batchSize: Int,
                      progress: (InspectionProgress) throws -> Void) throws -> CopyReport {
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
        var manifest = StrataRecords.Manifest.current(target, transforms: [])
        // Re-sealing: the copy's salt (a new store), its chain bound to it, and the pairs left as they were written last.
        let salt = resealing.map { $0.isEmpty ? [] : StoreSalt.draw() }
        let sealer = try resealing.map { transforms in RecordEnvelope(try transforms.map { try $0.bound(toStore: salt ?? []) }) }
        try engine.read { tx in
            if let sealer {
                manifest.transforms = sealer.names
            } else if let stored = try StrataRecords.Manifest.stored(in: tx) {
                // A byte-for-byte copy names the chain the source's manifest does, read in the
                // copy's snapshot (not the transforms this store was opened with: a read-only open
                // with a new key and the old one begins no rotation), and keeps a rotation under
                // way (its job's position is copied).
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
            func add(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws {
                let size = key.count + value.count
                if batch.count == min(batchSize, limits.maxOperationsPerTransaction ?? .max)
                    || (limits.maxBytesPerTransaction.map { batchBytes + size > $0 } ?? false) {
                    try flush()
                }
                batch.append((Array(key), Array(value)))
                batchBytes += size
                digest.add(key, value)
            }
            guard let sealer else {
                try tx.scan(.all, reverse: false, limit: nil) { key, value in
                    done += 1
                    // The destination gets its own manifest and identity (a copy is another store).
                    if key.elementsEqual(SystemKey.manifest) || key.elementsEqual(SystemKey.identity) { return true }
                    try add(key, value)
                    return true
                }
                try flush()
                return
            }
            // Re-sealing: the records first, then the system keys, whose covering entries take
            // their records' new values from the copy.
            var scratch: [UInt8] = []
            try tx.scan(SystemKey.nonSystem, reverse: false, limit: nil) { key, value in
                done += 1
                let resealed: [UInt8]
                do {
                    resealed = try envelope.reseal(key: key, value: value, with: sealer, scratch: &scratch)
                } catch let damage as RecordEnvelope.Damage {
                    throw StoreToolError.unreadableValue(key: StoreProblem.describe(Array(key)), detail: damage.detail)
                }
                try resealed.withUnsafeBytes { try add(key, $0) }
                return true
            }
            try flush()
            var indexes = IndexLookup()
            let skipped = [SystemKey.manifest, SystemKey.identity, SystemKey.transformSalt, SystemKey.job(Self.rotationJob)]
            try tx.scan(.prefix(SystemKey.prefix), reverse: false, limit: nil) { key, value in
                done += 1
                if skipped.contains(where: { key.elementsEqual($0) }) { return true }
                guard let (keyspace, name, generation, valuesStart) = SystemKey.indexEntry(key) else {
                    try add(key, value)
                    return true
                }
                switch try indexes.role(of: generation, keyspace: keyspace, name: name, in: tx) {
                case .uncovered:
                    try add(key, value)
                case .unknown:
                    // An entry of an index the catalog does not list: kept when it holds no value;
                    // one that does would carry a value of the old chain into the copy.
                    if value.isEmpty { try add(key, value) }
                case .garbage:
                    break
                case .covering(let components):
                    // An entry of no record (verify reports it in the source) is left behind: it
                    // holds a value of the old chain.
                    guard let recordKey = Self.recordKey(ofEntry: key, valuesStart: valuesStart, keyspace: keyspace, components: components),
                          let record = try target.read({ try $0.get(recordKey) }) else { return true }
                    try record.withUnsafeBytes { try add(key, $0) }
                }
                return true
            }
            try flush()
        }
        // Read back in the order written (a re-sealing copy writes the records first).
        var copied = PairDigest()
        try target.read { tx in
            for range in sealer == nil ? [KeyRange.all] : [SystemKey.nonSystem, .prefix(SystemKey.prefix)] {
                try tx.scan(range, reverse: false, limit: nil) { key, value in
                    copied.add(key, value)
                    return true
                }
            }
        }
        guard copied == digest else {
            throw StoreToolError.copyMismatch(path: location, detail: "\(copied.pairs) pairs read back, \(digest.pairs) copied")
        }
        try target.write { tx in
            try tx.put(StrataRecords.Manifest.encode(manifest), forKey: SystemKey.manifest)
            try StoreIdentity.drawNew(in: tx)
            if let salt, !salt.isEmpty { try tx.put(salt, forKey: SystemKey.transformSalt) }
        }
        try target.close()
        return CopyReport(pairs: digest.pairs + 2 + (salt?.isEmpty == false ? 1 : 0), bytes: digest.bytes, batches: batches + 1)
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
