import StrataEngine
import StrataKeyCodec

/// What ``Store/buildIndexes(_:batchSize:onBatch:)`` did.
public struct IndexBuildReport: Sendable, Hashable {
    /// Indexes made readable.
    public var built: [String] = []
    /// Records whose entries were written.
    public var recordsIndexed = 0
    /// Entries of retired generations and disabled indexes removed.
    public var entriesCleared = 0
    /// Transactions committed.
    public var batches = 0
}

extension Store {
    /// Builds `R`'s write-only indexes online and clears what retired or disabled indexes left.
    ///
    /// Works in batches of at most `batchSize` records (or entries to clear), each its own short
    /// write transaction, so other writers wait at most one batch and no snapshot is held across
    /// batches. The build's position is stored in the store with each batch (RecordFormat.md,
    /// "Indexes"), so a build interrupted by a crash or a close continues where it stopped, and
    /// two processes building at once take turns without repeating or corrupting work. Records
    /// written meanwhile keep their entries themselves (a write-only index is maintained). An index
    /// becomes readable in the batch that reaches the end of the keyspace.
    ///
    /// Two existing records with the same values in a unique index stop the build with
    /// ``RecordError/uniqueViolation(type:index:value:)``: the index stays write-only, and the
    /// build continues from there once one of them is changed.
    @discardableResult
    public func buildIndexes<R: Record>(_: R.Type, batchSize: Int = 1_000, onBatch: (IndexBuildReport) -> Void = { _ in }) throws -> IndexBuildReport {
        precondition(batchSize > 0, "batchSize must be positive")
        var report = IndexBuildReport()
        while try withTransaction({ ctx in try ctx.buildStep(R.self, batchSize: batchSize, report: &report) }) {
            report.batches += 1
            onBatch(report)
        }
        return report
    }
}

extension TransactionContext {
    /// One batch of index work for `R`; returns `false` when there was none left.
    func buildStep<R: Record>(_: R.Type, batchSize: Int, report: inout IndexBuildReport) throws -> Bool {
        let indexes = try prepare(R.self)
        let writer = try writable()
        let keyspace = R.recordType.keyspace
        if let index = indexes.first(where: { $0.state == .writeOnly }) {
            try buildBatch(R.self, index, batchSize: batchSize, writer: writer, report: &report)
            return true
        }
        // Clear what older generations and disabled indexes left, one batch at a time.
        for (name, stored) in try IndexCatalog.stored(keyspace: keyspace, in: reader) {
            let generations = stored.state == .disabled ? stored.retired + [stored.generation] : stored.retired
            guard let generation = generations.first else { continue }
            let range = KeyRange.components(prefix: IndexCatalog.entriesPrefix(keyspace: keyspace, name: name, generation: generation))
            let keys = try reader.keys(range, limit: batchSize)
            for key in keys { try writer.delete(key) }
            report.entriesCleared += keys.count
            if keys.count < batchSize {
                let definitionKey = SystemKey.index(keyspace: keyspace, name: name)
                if stored.state == .disabled && generations.count == 1 {
                    try writer.delete(definitionKey)
                } else {
                    var next = stored
                    next.retired.removeAll { $0 == generation }
                    try writer.put(next.encoded(), forKey: definitionKey)
                }
            }
            return true
        }
        return false
    }

    private func buildBatch<R: Record>(_: R.Type, _ index: ActiveIndex, batchSize: Int, writer: any KeyValueWriter,
                                       report: inout IndexBuildReport) throws {
        let keyspace = R.recordType.keyspace
        let jobKey = SystemKey.indexBuild(keyspace: keyspace, name: index.name, generation: index.generation)
        let keyspacePrefix = prefix(R.self)
        var range = KeyRange.components(prefix: keyspacePrefix)
        if let progress = try reader.get(jobKey) { range = range.above(progress) }
        var batch: [(key: [UInt8], value: [UInt8], record: R)] = []
        try reader.scan(range, reverse: false, limit: batchSize) { key, value in
            batch.append((Array(key), Array(value), try decode(R.self, key: key, value: value)))
            return true
        }
        let declaration = R.indexes[index.position]
        for (key, value, record) in batch {
            let primary = key[keyspacePrefix.count...]
            for entry in declaration.entryValues(of: record) {
                let entryKey = index.prefix + entry.bytes + primary
                guard entryKey.count <= KeyLimits.maxKeyLength else {
                    throw RecordError.indexKeyTooLarge(type: "\(R.self)", index: index.name, length: entryKey.count, limit: KeyLimits.maxKeyLength)
                }
                if index.unique && !entry.isNil {
                    try checkUnique(R.self, index, values: entry.bytes, primary: primary) { declaration.describe(record, entry: entry.bytes) }
                }
                try writer.put(index.covering ? value : [], forKey: entryKey)
            }
        }
        report.recordsIndexed += batch.count
        if batch.count < batchSize {
            guard var stored = try IndexCatalog.stored(keyspace: keyspace, in: reader).first(where: { $0.name == index.name })?.index else { return }
            stored.state = .readable
            try writer.put(stored.encoded(), forKey: SystemKey.index(keyspace: keyspace, name: index.name))
            try writer.delete(jobKey)
            report.built.append(index.name)
        } else if let last = batch.last {
            try writer.put(last.key, forKey: jobKey)
        }
    }
}

/// What ``TransactionContext/verifyIndexes(_:)`` found in one index.
public struct IndexVerification: Sendable, Hashable {
    /// The index's name.
    public let index: String
    /// How many entries the records call for.
    public var expected = 0
    /// Entry keys the records call for that are not stored (at most 10 listed), and how many.
    public var missing: [[UInt8]] = []
    public var missingCount = 0
    /// Stored entry keys no record calls for, or covering entries whose value is not the
    /// record's (at most 10 listed), and how many.
    public var stale: [[UInt8]] = []
    public var staleCount = 0
    /// Whether the index equals a recomputation from the records.
    public var isExact: Bool { missingCount == 0 && staleCount == 0 }
}

extension TransactionContext {
    /// Recomputes each readable index of `R` from the records and compares it with the stored
    /// entries: missing and stale entries (what `strata verify` reports, and what the tests
    /// check after every random log). Reads every record and entry: O(records + entries).
    public func verifyIndexes<R: Record>(_: R.Type) throws -> [IndexVerification] {
        let indexes = try prepare(R.self)
        let keyspacePrefix = prefix(R.self)
        var results: [IndexVerification] = []
        for index in indexes where index.state == .readable {
            let declaration = R.indexes[index.position]
            var expected: [[UInt8]: [UInt8]] = [:]
            try reader.scan(KeyRange.components(prefix: keyspacePrefix), reverse: false, limit: nil) { key, value in
                let record = try decode(R.self, key: key, value: value)
                for entry in declaration.entryValues(of: record) {
                    expected[index.prefix + entry.bytes + key[keyspacePrefix.count...]] = index.covering ? Array(value) : []
                }
                return true
            }
            var result = IndexVerification(index: index.name, expected: expected.count)
            try reader.scan(KeyRange.components(prefix: index.prefix), reverse: false, limit: nil) { key, value in
                let stored = Array(key)
                if let want = expected.removeValue(forKey: stored), want.elementsEqual(value) { return true }
                result.staleCount += 1
                if result.stale.count < 10 { result.stale.append(stored) }
                return true
            }
            result.missingCount = expected.count
            result.missing = Array(expected.keys.sorted { $0.lexicographicallyPrecedes($1) }.prefix(10))
            results.append(result)
        }
        return results
    }
}
