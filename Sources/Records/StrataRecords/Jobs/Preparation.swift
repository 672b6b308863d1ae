import Foundation
import StrataEngine
import StrataKeyCodec

/// What preparing a record type did (``Store/prepare(_:batchSize:onBatch:)``).
public struct PreparationReport: Sendable, Hashable {
    /// Indexes made readable.
    public var built: [String] = []
    /// Records whose index entries were written by builds (once per index built).
    public var recordsIndexed = 0
    /// Records a build could not read (damaged, or of a version without migration), so without
    /// entries: counted once per index built. Reading them fails either way.
    public var unindexed = 0
    /// Entries of retired generations and disabled indexes removed.
    public var entriesCleared = 0
    /// Records rewritten under the type's current schema version (through its `migrate`).
    public var migrated = 0
    /// Records of another version that could not be converted (no migration for their version,
    /// or damaged bytes): left as found and counted here, never skipped silently.
    public var unconvertible = 0
    /// The first (at most 10) keys of unconvertible records.
    public var firstUnconvertibleKeys: [[UInt8]] = []
    /// Transactions committed.
    public var batches = 0
}

/// A running preparation (``Store/prepare(_:batchSize:onBatch:)``).
public typealias PreparationJob = OnlineJob<PreparationReport>

/// Where a preparation stands (the name it had before key rotations were jobs too).
public typealias PreparationProgress = JobProgress

extension Store {
    /// Starts the online work `R` needs and returns at once: building its write-only indexes,
    /// clearing what retired and disabled indexes left, and rewriting records stored under other
    /// schema versions through `R.migrate` (only when the catalog lists such versions).
    ///
    /// The work runs on a thread of its own in batches (`JobBatch`: at most `batchSize`
    /// records, about 50 ms, within the engine's transaction limits), each a short write
    /// transaction that also stores the job's position. So other writers wait at most one batch,
    /// a crash or close loses nothing (the next `prepare` continues from the stored position),
    /// and two processes preparing at once take turns. Records written meanwhile keep their index
    /// entries themselves. Watch ``OnlineJob/progress``; ``OnlineJob/wait()`` or
    /// ``OnlineJob/report`` give the outcome. It is never started by an ordinary transaction.
    ///
    /// Errors end the job: a unique index that two existing records violate stops its build
    /// with ``RecordError/uniqueViolation(type:index:value:)`` (the index stays write-only; the
    /// next `prepare` continues once one of them is changed).
    @discardableResult
    public func prepare<R: Record>(_: R.Type, batchSize: Int = 1_000,
                                   onBatch: @escaping @Sendable (JobProgress) -> Void = { _ in }) -> PreparationJob {
        PreparationJob.start(JobProgress()) { [self] job in try runPreparation(R.self, batchSize: batchSize, job: job, onBatch: onBatch) }
    }

    static let migrating = "migrating records"

    /// The preparation loop, on the calling thread.
    func runPreparation<R: Record>(_: R.Type, batchSize: Int, job: PreparationJob,
                                   onBatch: (JobProgress) -> Void) throws -> PreparationReport {
        var batching = JobBatch(engine: engine, requested: batchSize)
        var report = PreparationReport()
        let keyspaceRange = KeyRange.components(prefix: KeyCodec.encode(R.recordType.keyspace))
        let plan = try withReadTransaction { ctx in
            (records: try ctx.reader.keys(keyspaceRange).count, passes: try ctx.pendingPasses(R.self))
        }
        job.update { $0.total = plan.records * plan.passes }
        var migrationPassed = false  // one migration pass per preparation
        while !job.isCancelled {
            let before = report
            let step = try JobBatch.run(&batching) { batching in
                report = before  // a batch refused as too large counted work that was rolled back
                return try withTransaction { ctx in
                    try ctx.preparationStep(R.self, batching, migrate: !migrationPassed, report: &report)
                }
            }
            guard let step else { break }
            if step.passEnded && step.phase == Self.migrating { migrationPassed = true }
            report.batches += 1
            let progress = job.update {
                $0.done += step.records
                $0.phase = step.phase
                $0.total = max($0.total, $0.done)
            }
            onBatch(progress)
        }
        let cancelled = job.isCancelled
        job.update { $0.phase = cancelled ? "cancelled" : "done" }
        return report
    }
}

/// A value the compiler cannot prove `Sendable` that is handed to one other thread and used only there.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension TransactionContext {
    /// How many passes over the records the preparation needs: one per write-only index, one to
    /// migrate when the catalog lists versions `R` does not read as current.
    func pendingPasses<R: Record>(_: R.Type) throws -> Int {
        let indexes = try prepare(R.self)
        return indexes.filter { $0.state != .readable }.count + (try needsMigration(R.self) ? 1 : 0)
    }

    /// Whether the catalog lists a schema version whose records `R` cannot read as current.
    func needsMigration<R: Record>(_: R.Type) throws -> Bool {
        guard let bytes = try reader.get(SystemKey.keyspace(R.recordType.keyspace)) else { return false }
        let entry = try CatalogEntry(decoding: bytes, keyspace: R.recordType.keyspace)
        let current = sameFields(R.self)
        return entry.schemas.contains { !R.recordType.isVersion($0.version) && !current.contains($0.version) }
    }

    /// One batch of preparation work for `R`, or `nil` when none is left.
    func preparationStep<R: Record>(_: R.Type, _ batching: JobBatch, migrate: Bool,
                                    report: inout PreparationReport) throws -> (records: Int, phase: String, passEnded: Bool)? {
        let indexes = try prepare(R.self)
        let writer = try writable()
        if let index = indexes.first(where: { $0.state == .writeOnly }) {
            return (try buildBatch(R.self, index, batching, writer: writer, report: &report), "building index \(index.name)", false)
        }
        if let cleared = try clearBatch(R.self, batching, writer: writer, report: &report) { return (0, "clearing index \(cleared)", false) }
        if migrate, try needsMigration(R.self) {
            let (records, ended) = try migrationBatch(R.self, batching, writer: writer, report: &report)
            return (records, Store.migrating, ended)
        }
        return nil
    }

    /// Writes the entries of the next batch of records; the batch that reaches the end makes the
    /// index readable. Returns the records handled.
    private func buildBatch<R: Record>(_: R.Type, _ index: ActiveIndex, _ batching: JobBatch, writer: any KeyValueWriter,
                                       report: inout PreparationReport) throws -> Int {
        let keyspace = R.recordType.keyspace
        let jobKey = SystemKey.indexBuild(keyspace: keyspace, name: index.name, generation: index.generation)
        let keyspacePrefix = prefix(R.self)
        var (batch, exhausted) = try batching.next(in: reader, KeyRange.components(prefix: keyspacePrefix), after: try reader.get(jobKey))
        let declaration = R.indexes[index.position]
        var operations = 0
        var handled = 0
        var totals: [[UInt8]: TotalChange] = [:]  // an index of totals: what the batch adds to each group
        for (key, value) in batch {
            // A record that cannot be read (damaged, or of a version without migration) gets no
            // entry: reading it fails either way. It is counted; the build goes on.
            guard let record = try readable(R.self, key: key, value: value) else {
                report.unindexed += 1
                handled += 1
                continue
            }
            if index.totals {
                let groups = declaration.totalEntries(of: record)
                if let limit = batching.operations, handled > 0, operations + groups.count > limit {
                    exhausted = false
                    break
                }
                for (group, amount) in groups { totals[group, default: TotalChange()].record(amount, joins: true) }
                operations += groups.count
                handled += 1
                continue
            }
            let entries = declaration.entryValues(of: record)
            // Within the engine's operations per transaction: stop before the record that would cross it.
            if let limit = batching.operations, handled > 0, operations + entries.count > limit {
                exhausted = false
                break
            }
            let primary = key[keyspacePrefix.count...]
            for entry in entries {
                let entryKey = try checkedEntryKey(record, declaration, index, entry, primary: primary, isNew: true)
                try writer.put(index.covering ? value : [], forKey: entryKey)
            }
            operations += entries.count
            handled += 1
        }
        try EntryWrites.apply(totals: try totalWrites(R.self, index, adding: totals), to: writer)
        report.recordsIndexed += handled
        if exhausted {
            guard var stored = try IndexCatalog.stored(keyspace: keyspace, in: reader).first(where: { $0.name == index.name })?.index else { return handled }
            stored.state = .readable
            stored.retirePrevious()  // its stand-in is no longer needed: cleared by the next batches
            try writer.put(stored.encoded(), forKey: SystemKey.index(keyspace: keyspace, name: index.name))
            try writer.delete(jobKey)
            report.built.append(index.name)
        } else if handled > 0 {
            try writer.put(batch[handled - 1].key, forKey: jobKey)
        }
        return handled
    }

    /// The record stored as `key` and `value`, or `nil` when it cannot be read as `R` (damaged,
    /// refused by the store's value transform, or of a version `R` cannot migrate).
    private func readable<R: Record>(_: R.Type, key: [UInt8], value: [UInt8]) throws -> R? {
        do {
            return try key.withUnsafeBytes { k in try value.withUnsafeBytes { try decode(R.self, key: k, value: $0) } }
        } catch let error as RecordError where error.isUnreadableRecord {
            return nil
        }
    }

    /// Deletes a batch of what a retired generation or a disabled index left; the name of the
    /// index it worked on, or `nil` when nothing is left.
    private func clearBatch<R: Record>(_: R.Type, _ batching: JobBatch, writer: any KeyValueWriter, report: inout PreparationReport) throws -> String? {
        let keyspace = R.recordType.keyspace
        for (name, stored) in try IndexCatalog.stored(keyspace: keyspace, in: reader) {
            let generations = stored.state == .disabled ? stored.retired + [stored.generation] : stored.retired
            guard let generation = generations.first else { continue }
            let range = KeyRange.components(prefix: IndexCatalog.entriesPrefix(keyspace: keyspace, name: name, generation: generation))
            let keys = try reader.keys(range, limit: batching.size)
            for key in keys { try writer.delete(key) }
            report.entriesCleared += keys.count
            if keys.count < batching.size {
                let definitionKey = SystemKey.index(keyspace: keyspace, name: name)
                if stored.state == .disabled && generations.count == 1 {
                    try writer.delete(definitionKey)
                } else {
                    var next = stored
                    next.retired.removeAll { $0 == generation }
                    try writer.put(next.encoded(), forKey: definitionKey)
                }
            }
            return name
        }
        return nil
    }

    /// Rewrites the next batch's records stored under other versions as current ones (index
    /// entries kept by `insert`); unconvertible ones are counted and left. Returns the records
    /// handled and whether the pass reached the end (its stored position is then deleted).
    private func migrationBatch<R: Record>(_: R.Type, _ batching: JobBatch, writer: any KeyValueWriter,
                                           report: inout PreparationReport) throws -> (Int, Bool) {
        let jobKey = SystemKey.job("migrate/\(R.recordType.keyspace)/\(R.recordType.version)")
        let keyspacePrefix = prefix(R.self)
        let (batch, exhausted) = try batching.next(in: reader, KeyRange.components(prefix: keyspacePrefix), after: try reader.get(jobKey))
        let current = sameFields(R.self)
        for (key, value) in batch {
            if let stored = value.withUnsafeBytes(RecordEnvelope.peekVersion), R.recordType.isVersion(stored) || current.contains(stored) { continue }
            guard let record = try readable(R.self, key: key, value: value) else {
                report.unconvertible += 1
                if report.firstUnconvertibleKeys.count < 10 { report.firstUnconvertibleKeys.append(key) }
                continue
            }
            // A migration rewrites the stored bytes of a record whose value reads the same (it was
            // migrated on read before): not a change observers or the change feed are told of.
            let recorded = (changes, changeLog)
            (changes, changeLog) = (nil, nil)
            defer { (changes, changeLog) = recorded }
            try insert(record)
            report.migrated += 1
        }
        if exhausted {
            try writer.delete(jobKey)
        } else {
            try writer.put(batch.last!.key, forKey: jobKey)
        }
        return (batch.count, exhausted)
    }
}
