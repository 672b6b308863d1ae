import StrataEngine
import StrataKeyCodec

/// What a key rotation did (``Store/rotateKeys(batchSize:onBatch:)``).
public struct KeyRotationReport: Sendable, Hashable {
    /// The transform chain the rotation retired, as the manifest named it; empty when no rotation
    /// was under way.
    public var retired: [String] = []
    /// Whether the rotation ended (or none was under way): the manifest names the new chain
    /// alone. `false` when the job was cancelled first.
    public var finished = false
    /// Record values re-sealed by the store's transforms.
    public var records = 0
    /// Covering index entries given their record's re-sealed value.
    public var coveringEntries = 0
    /// Entries of retired generations and disabled indexes removed (no read uses them; they
    /// would keep values sealed under the retired key until the next `Store.prepare`).
    public var entriesCleared = 0
    /// Values that could not be re-sealed (damaged, or refused by the transforms), covering
    /// entries of such records, and covering entries of no index or record the catalog knows:
    /// left as found and counted here, never
    /// skipped silently. Reading them fails either way; ``Store/verify(listing:progress:)`` names them.
    public var unreadable = 0
    /// The first (at most 10) keys of unreadable values.
    public var firstUnreadableKeys: [[UInt8]] = []
    /// Transactions committed.
    public var batches = 0

    mutating func unreadable(_ key: [UInt8]) {
        unreadable += 1
        if firstUnreadableKeys.count < 10 { firstUnreadableKeys.append(key) }
    }
}

/// A running key rotation (``Store/rotateKeys(batchSize:onBatch:)``).
public typealias KeyRotationJob = OnlineJob<KeyRotationReport>

extension Store {
    /// Finishes the key rotation under way, online, and returns at once: re-seals every record
    /// value and covering index entry with the store's transforms, then drops the retired chain
    /// from the manifest, so its key is no longer needed.
    ///
    /// A rotation begins when a store sealed under one key is opened for writing with transforms
    /// that seal under another and still read the first (`RecordEncryption` given a key provider
    /// whose current key is new and which holds the old one): from then on every value written is
    /// sealed under the new key, values not yet re-sealed are read under the old one, and the
    /// manifest names both. A store holds values under at most two keys: opening it with a third
    /// is refused until the rotation ends. With no rotation under way the job ends at once.
    ///
    /// The work runs in batches, as ``prepare(_:batchSize:onBatch:)``'s does: at most `batchSize`
    /// pairs and about 50 ms each, one short write transaction each that also stores the job's
    /// position, so readers and writers are served throughout, a crash or close loses nothing
    /// (the next `rotateKeys` continues), and two processes rotating at once take turns. Records
    /// keep their contents: observers are not told of re-sealed values, and the change feed does
    /// not list them.
    ///
    /// Another process that opened the store before the rotation began, with the old key, has its
    /// next write transaction refused with ``RecordError/manifestMismatch(detail:)`` (every write
    /// transaction of a store with transforms checks the manifest at its first write): it must
    /// open the store again, with the new key. ``verify(listing:progress:)`` accepts a covering
    /// entry sealed before its record was re-sealed while they hold the same contents.
    @discardableResult
    public func rotateKeys(batchSize: Int = 1_000, onBatch: @escaping @Sendable (JobProgress) -> Void = { _ in }) -> KeyRotationJob {
        KeyRotationJob.start(JobProgress()) { [self] job in try runRotation(batchSize: batchSize, job: job, onBatch: onBatch) }
    }

    /// The value transforms the manifest of the store on `engine` names, read without opening it
    /// as a store, so a tool can tell which transforms to open it with: the chain in order and,
    /// while a key rotation runs, the chain it retires. Both are empty for a store that keeps its
    /// values as written and for an engine without a store yet.
    public static func storedTransforms(in engine: any KeyValueEngine) throws -> (transforms: [String], retiring: [String]) {
        let manifest = try engine.read { tx in try Manifest.stored(in: tx) }
        return (manifest?.transforms ?? [], manifest?.retiring ?? [])
    }

    /// The job's stored position: a phase byte (``KeyRotationPhase``), then the last key handled.
    static let rotationJob = "rotate-keys"

    /// The rotation loop, on the calling thread.
    func runRotation(batchSize: Int, job: KeyRotationJob, onBatch: (JobProgress) -> Void) throws -> KeyRotationReport {
        var report = KeyRotationReport()
        let (retiring, total) = try engine.read { tx -> ([String], Int) in
            let retiring = try Manifest.stored(in: tx)?.retiring ?? []
            guard !retiring.isEmpty else { return (retiring, 0) }
            var pairs = 0
            for phase in [KeyRotationPhase.records, .coveringEntries] {
                try tx.scan(phase.range, reverse: false, limit: nil) { _, _ in pairs += 1; return true }
            }
            return (retiring, pairs)
        }
        report.retired = retiring
        job.update { $0.total = total }
        var batching = JobBatch(engine: engine, requested: batchSize)
        var scratch: [UInt8] = []
        while !job.isCancelled {
            let before = report
            let step = try JobBatch.run(&batching) { batching in
                report = before  // a batch refused as too large counted work that was rolled back
                return try engine.write { tx in try rotationStep(tx, batching, scratch: &scratch, report: &report) }
            }
            guard let step else {
                report.finished = true
                break
            }
            report.batches += 1
            let progress = job.update {
                $0.done += step.handled
                $0.phase = step.phase.description
                $0.total = max($0.total, $0.done)
            }
            onBatch(progress)
        }
        let cancelled = job.isCancelled
        job.update { $0.phase = cancelled ? "cancelled" : "done" }
        return report
    }

    /// One batch of the rotation in `tx`; `nil` when no rotation is under way (any more).
    private func rotationStep(_ tx: any KeyValueWriter, _ batching: JobBatch, scratch: inout [UInt8],
                              report: inout KeyRotationReport) throws -> (handled: Int, phase: KeyRotationPhase)? {
        var manifest = try Manifest.required(in: tx)
        guard !manifest.retiring.isEmpty else { return nil }
        guard manifest.transforms == envelope.names else {
            throw RecordError.manifestMismatch(detail: "the store's transforms became \(Manifest.describe(manifest.transforms)) since it was opened "
                + "with \(Manifest.describe(envelope.names)) (another process rotated its key): open it again")
        }
        let jobKey = SystemKey.job(Self.rotationJob)
        let position = try tx.get(jobKey)
        let phase = position.flatMap { $0.first.flatMap(KeyRotationPhase.init(rawValue:)) } ?? .records
        let after = position.flatMap { $0.count > 1 ? Array($0.dropFirst()) : nil }
        let (batch, exhausted) = try batching.next(in: tx, phase.range, after: after)
        switch phase {
        case .records:
            for (key, value) in batch { try reseal(key: key, value: value, in: tx, scratch: &scratch, report: &report) }
        case .coveringEntries:
            var indexes = IndexLookup()
            for (key, value) in batch { try refresh(entry: key, value: value, in: tx, indexes: &indexes, report: &report) }
        }
        if !exhausted {
            try tx.put([phase.rawValue] + batch.last!.key, forKey: jobKey)
        } else if let next = KeyRotationPhase(rawValue: phase.rawValue + 1) {
            try tx.put([next.rawValue], forKey: jobKey)
        } else {
            manifest.retiring = []
            try tx.put(Manifest.encode(manifest), forKey: SystemKey.manifest)
            try tx.delete(jobKey)
        }
        return (batch.count, phase)
    }

    /// Re-seals the record value `value` stored under `key`; a damaged or refused one is counted
    /// and left. A key that is unavailable now (a key provider failed) stops the job.
    private func reseal(key: [UInt8], value: [UInt8], in tx: any KeyValueWriter, scratch: inout [UInt8],
                        report: inout KeyRotationReport) throws {
        guard let keyspace = key.withUnsafeBytes({ CatalogSnapshot.keyspace(of: $0)?.name }) else {
            report.unreadable(key)
            return
        }
        let resealed: [UInt8]
        do {
            resealed = try key.withUnsafeBytes { k in try value.withUnsafeBytes { try envelope.reseal(key: k, value: $0, with: envelope, scratch: &scratch) } }
        } catch let damage as RecordEnvelope.Damage {
            if let refusal = damage.refusal, refusal.error.kind == .keyUnavailable {
                throw key.withUnsafeBytes { damage.recordError(type: keyspace, key: $0) }
            }
            report.unreadable(key)
            return
        }
        try tx.put(resealed, forKey: key)
        report.records += 1
    }

    /// Gives the covering index entry `key` its record's value (re-sealed by the records' phase,
    /// or written since under the new key); clears an entry of a retired generation or a disabled
    /// index; leaves one whose record cannot be opened (the records' phase left it) or of no index
    /// or record the catalog knows, counted as unreadable.
    private func refresh(entry key: [UInt8], value: [UInt8], in tx: any KeyValueWriter, indexes: inout IndexLookup,
                         report: inout KeyRotationReport) throws {
        guard let (keyspace, name, generation, valuesStart) = key.withUnsafeBytes(SystemKey.indexEntry) else {
            report.unreadable(key)
            return
        }
        switch try indexes.role(of: generation, keyspace: keyspace, name: name, in: tx) {
        case .uncovered:
            return
        case .garbage:
            try tx.delete(key)
            report.entriesCleared += 1
        case .unknown:
            if !value.isEmpty { report.unreadable(key) }
        case .covering(let components):
            guard let recordKey = key.withUnsafeBytes({ Self.recordKey(ofEntry: $0, valuesStart: valuesStart, keyspace: keyspace, components: components) }),
                  let record = try tx.get(recordKey),
                  record == value || recordKey.withUnsafeBytes({ k in record.withUnsafeBytes { envelope.contents(key: k, value: $0) != nil } }) else {
                report.unreadable(key)
                return
            }
            if record != value { try tx.put(record, forKey: key) }
            report.coveringEntries += 1
        }
    }
}

/// The rotation's passes, in order: record values, then covering index entries (which take
/// their record's value, so they follow it).
enum KeyRotationPhase: UInt8, CustomStringConvertible {
    case records = 0
    case coveringEntries = 1

    var range: KeyRange {
        switch self {
        case .records: SystemKey.nonSystem
        case .coveringEntries: .prefix(SystemKey.allIndexEntries)
        }
    }

    var description: String {
        switch self {
        case .records: "re-sealing records"
        case .coveringEntries: "re-sealing covering entries"
        }
    }
}

/// What the index generations of a batch's entries are, read from the catalog once per index.
struct IndexLookup {
    enum Role {
        /// A generation that is read (current or previous) and holds no values.
        case uncovered
        /// A covering generation that is read: its entries hold their record's value.
        case covering(components: Int)
        /// A retired generation or a disabled index: entries no read uses, cleared by `prepare`.
        case garbage
        /// An index the catalog does not list.
        case unknown
    }

    private var known: [String: [String: StoredIndex]] = [:]

    mutating func role(of generation: Int, keyspace: String, name: String, in tx: any KeyValueReader) throws -> Role {
        if known[keyspace] == nil {
            known[keyspace] = Dictionary(try IndexCatalog.stored(keyspace: keyspace, in: tx).map { ($0.name, $0.index) }) { first, _ in first }
        }
        guard let index = known[keyspace]![name] else { return .unknown }
        if index.state != .disabled && index.generation == generation { return Self.role(of: index.definition) }
        if let previous = index.previous, previous.generation == generation { return Self.role(of: previous.definition) }
        return .garbage
    }

    private static func role(of definition: IndexDefinition) -> Role {
        definition.covering ? .covering(components: definition.components.count) : .uncovered
    }
}
