import Foundation
import StrataEngine
import StrataKeyCodec

/// What an import did (``Store/importRecords(_:job:batchSize:progress:)``).
public struct ImportReport: Sendable, Hashable {
    /// Records this call wrote (a record given twice is written once, as given last).
    public var imported = 0
    /// Of those, records that replaced a stored record with the same key.
    public var replaced = 0
    /// Elements of the sequence passed over at the start: an earlier run of the same job
    /// committed them before it was stopped (a crash, a kill, an error).
    public var resumedAfter = 0
    /// Write transactions committed.
    public var batches = 0

    /// An empty report.
    public init() {}
}

extension Store {
    /// Writes every record of `records` in batches of sorted keys: the fast way to load a data
    /// set into an empty or an existing keyspace, with every index kept exact.
    ///
    /// Each batch is one write transaction: its records sorted by key (a record given twice in
    /// one batch is written once, as given last; given in two batches, it is written twice), the
    /// keys it would replace found with one walk of the batch's key range instead of a read per
    /// record, the new records' index entries written without reading an old record (there is
    /// none), the replaced ones through the ordinary write (old entries removed). Records are
    /// written in key order within a batch, not in the sequence's: two records of one batch that
    /// exchange a unique value can be refused where writing them in the given order would pass.
    /// Unique indexes are checked as on every write: a violation ends the import with
    /// ``RecordError/uniqueViolation(type:index:value:)``, its batch rolled back and the ones
    /// before it kept. Observers and the change feed see each batch as a transaction of inserts
    /// and updates.
    ///
    /// **Resumable.** Each batch stores, in the same transaction, how many elements of the
    /// sequence the job `job` has consumed and the key of the last one; the last batch removes
    /// that position. Called again with the same job name and the same sequence after a crash, a
    /// kill or an error, the import passes over the elements already committed
    /// (``ImportReport/resumedAfter``) and goes on: no record is lost or written twice. A sequence
    /// whose element at that place has another key is refused with
    /// ``RecordError/importMismatch(type:job:detail:)`` before anything is written (another data
    /// set under the same job name: name it otherwise, or ``discardImport(_:job:)``), and so is a
    /// second import of the same job while one runs. Jobs of different names (or types) are separate.
    ///
    /// Batches hold at most `batchSize` records, within the engine's per-transaction limits (a
    /// batch the engine refuses as too large is split). `progress` is called after each batch
    /// (``JobProgress/total`` is the sequence's `underestimatedCount` until it is passed).
    @discardableResult
    public func importRecords<S: Sequence>(_ records: S, job: String = "import", batchSize: Int = 5_000,
                                           progress: (JobProgress) -> Void = { _ in }) throws -> ImportReport where S.Element: Record {
        typealias R = S.Element
        let jobKey = Self.importJobKey(R.self, job: job)
        let mismatch = { (detail: String) in RecordError.importMismatch(type: "\(R.self)", job: job, detail: detail) }
        var report = ImportReport()
        let stored = try withReadTransaction { ctx in try ctx.reader.get(jobKey).map { try ImportPosition(decoding: $0, type: R.self, job: job) } }
        var iterator = records.makeIterator()
        if let stored {
            var lastKey: [UInt8]?
            while report.resumedAfter < stored.consumed, let element = iterator.next() {
                report.resumedAfter += 1
                if report.resumedAfter == stored.consumed { lastKey = try withReadTransaction { ctx in try ctx.encodeKey(element) } }
            }
            guard lastKey == stored.lastKey else {
                throw mismatch(report.resumedAfter < stored.consumed
                    ? "it stopped after \(stored.consumed) elements and this sequence has \(report.resumedAfter): not the same data"
                    : "it stopped after \(stored.consumed) elements, and element \(stored.consumed) of this sequence has another key: not the same data")
            }
        }
        var position = stored
        var consumed = report.resumedAfter
        var status = JobProgress()
        status.phase = "importing \(R.recordType.keyspace)"
        status.done = report.resumedAfter
        status.total = max(status.done, records.underestimatedCount)
        // Each record writes itself and at least an entry per index: on an engine that limits
        // the operations of a transaction, a batch starts small enough for that.
        let perRecord = 1 + R.indexes.count
        let requested = engine.limits.maxOperationsPerTransaction.map { min(batchSize, max(1, ($0 - 2) / perRecord)) } ?? batchSize
        var batching = JobBatch(engine: engine, requested: requested)
        var chunk: [R] = []
        chunk.reserveCapacity(batching.size)
        var finished = false
        while !finished {
            chunk.removeAll(keepingCapacity: true)
            while chunk.count < batching.size, let next = iterator.next() { chunk.append(next) }
            finished = chunk.count < batching.size
            // Nothing to write and no position to remove: an empty import writes nothing.
            if chunk.isEmpty && position == nil { break }
            // A batch refused as too large is written in halves, each with its own position.
            var pending: [Range<Int>] = [chunk.indices]
            while let range = pending.first {
                let last = finished && range.upperBound == chunk.count
                do {
                    let (written, next) = try withTransaction { ctx in
                        // The position this import left: another run of the job moved it otherwise.
                        let found = try ctx.reader.get(jobKey).map { try ImportPosition(decoding: $0, type: R.self, job: job) }
                        guard found == position else { throw mismatch("another import of this job is running") }
                        let written = try ctx.importBatch(chunk[range])
                        var next: ImportPosition?
                        if last {
                            try ctx.writable().delete(jobKey)
                        } else {
                            let moved = ImportPosition(consumed: consumed + range.count,
                                                       lastKey: range.isEmpty ? position?.lastKey : try ctx.encodeKey(chunk[range.upperBound - 1]))
                            try ctx.writable().put(moved.encoded, forKey: jobKey)
                            next = moved
                        }
                        return (written, next)
                    }
                    pending.removeFirst()
                    position = next
                    consumed += range.count
                    report.imported += written.imported
                    report.replaced += written.replaced
                    report.batches += 1
                } catch EngineError.transactionTooLarge(let what, let limit) {
                    guard range.count > 1 else { throw EngineError.transactionTooLarge(what: what, limit: limit) }
                    batching = batching.halved() ?? batching
                    let middle = range.lowerBound + range.count / 2
                    pending.replaceSubrange(0..<1, with: [range.lowerBound..<middle, middle..<range.upperBound])
                }
            }
            status.done = consumed
            status.total = max(status.total, status.done)
            if finished { status.phase = "done" }
            progress(status)
        }
        return report
    }

    /// Forgets the stored position of the import job `job` of `R` (one that failed and will not
    /// be resumed), so that the next import under that name starts from its first element.
    /// Returns whether there was one.
    @discardableResult
    public func discardImport<R: Record>(_: R.Type, job: String = "import") throws -> Bool {
        try withTransaction { ctx in
            let key = Self.importJobKey(R.self, job: job)
            guard try ctx.reader.exists(key) else { return false }
            try ctx.writable().delete(key)
            return true
        }
    }

    static func importJobKey<R: Record>(_: R.Type, job: String) -> [UInt8] {
        SystemKey.job("import/\(R.recordType.keyspace)/\(job)")
    }
}

/// Where an import job stands: elements of its sequence consumed, and the key of the last one
/// (RecordFormat.md, "Jobs"): 8 bytes of count, little-endian, then the key.
struct ImportPosition: Equatable {
    var consumed: Int
    var lastKey: [UInt8]?

    init(consumed: Int, lastKey: [UInt8]?) {
        self.consumed = consumed
        self.lastKey = lastKey
    }

    init<R: Record>(decoding bytes: [UInt8], type: R.Type, job: String) throws {
        guard bytes.count >= 8 else {
            throw RecordError.importMismatch(type: "\(R.self)", job: job, detail: "its stored position is \(bytes.count) bytes, not at least 8 (damaged)")
        }
        let count = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }.littleEndian
        guard count > 0, count <= UInt64(Int.max) else {
            throw RecordError.importMismatch(type: "\(R.self)", job: job, detail: "its stored position counts \(count) elements (damaged)")
        }
        consumed = Int(count)
        lastKey = bytes.count > 8 ? Array(bytes[8...]) : nil
    }

    var encoded: [UInt8] { withUnsafeBytes(of: UInt64(consumed).littleEndian) { Array($0) } + (lastKey ?? []) }
}

extension TransactionContext {
    /// Writes one import batch (see ``Store/importRecords(_:job:batchSize:progress:)``); returns
    /// the records written and how many of them replaced a stored one.
    func importBatch<R: Record>(_ records: ArraySlice<R>) throws -> (imported: Int, replaced: Int) {
        let writer = try writable()
        let indexes = try prepare(R.self)
        // Each record's key and value, encoded once, back to back.
        var encoded: [(bytes: [UInt8], keyLength: Int, position: Int)] = []
        encoded.reserveCapacity(records.count)
        var buffer = FieldWriter()
        var prefixOf: ObjectIdentifier?
        for (position, record) in zip(records.indices, records) {
            let keyLength = try encodeRecord(record, into: &buffer, prefixOf: &prefixOf)
            encoded.append((buffer.bytes, keyLength, position))
        }
        func key(_ i: Int) -> ArraySlice<UInt8> { encoded[i].bytes[..<encoded[i].keyLength] }
        func compareKeys(_ a: Int, _ b: Int) -> Int {
            encoded[a].bytes.withUnsafeBytes { x in
                encoded[b].bytes.withUnsafeBytes { y in
                    Bytewise.compare(UnsafeRawBufferPointer(rebasing: x[..<encoded[a].keyLength]), UnsafeRawBufferPointer(rebasing: y[..<encoded[b].keyLength]))
                }
            }
        }
        // Sorted by key, a key given twice kept as given last.
        var order = Array(encoded.indices)
        order.sort { a, b in
            let c = compareKeys(a, b)
            return c != 0 ? c < 0 : encoded[a].position < encoded[b].position
        }
        order = order.indices.filter { $0 + 1 == order.count || compareKeys(order[$0], order[$0 + 1]) != 0 }.map { order[$0] }
        let stored = try storedKeys(order.map { Array(key($0)) })
        var replaced = 0
        for (n, i) in order.enumerated() {
            let record = records[encoded[i].position]
            if stored[n] {
                try insert(record)
                replaced += 1
            } else if indexes.isEmpty {
                try encoded[i].bytes.withUnsafeBytes { bytes in
                    try writer.put(UnsafeRawBufferPointer(rebasing: bytes[encoded[i].keyLength...]),
                                   forKey: UnsafeRawBufferPointer(rebasing: bytes[..<encoded[i].keyLength]))
                }
                if recordsChanges { recordChange(R.self, key: key(i), .insert, record: record) }
            } else {
                try insertIndexed(record, key: key(i), value: encoded[i].bytes[encoded[i].keyLength...], indexes: indexes, writer: writer, absent: true)
            }
        }
        return (order.count, replaced)
    }

    /// Which of `keys` (sorted, distinct) are stored: a walk of the stored keys from the first,
    /// which reads a dense run of stored keys in one pass and seeks again (a fresh scan from the
    /// next key looked for) once it has passed 8 stored keys without deciding one: a batch spread
    /// over a large keyspace then costs about one seek per key, as many point reads would.
    func storedKeys(_ keys: [[UInt8]]) throws -> [Bool] {
        var found = [Bool](repeating: false, count: keys.count)
        guard let last = keys.last else { return found }
        var next = 0  // the first key not yet decided
        while next < keys.count {
            var passed = 0
            var reseek = false
            try reader.scan(.closed(keys[next], last), reverse: false, limit: nil) { stored, _ in
                while next < keys.count, keys[next].withUnsafeBytes({ Bytewise.compare($0, stored) }) < 0 {
                    next += 1
                    passed = 0
                }
                guard next < keys.count else { return false }
                if keys[next].withUnsafeBytes({ Bytewise.compare($0, stored) }) == 0 {
                    found[next] = true
                    next += 1
                    passed = 0
                    return next < keys.count
                }
                passed += 1
                if passed > 8 {
                    reseek = true
                    return false
                }
                return true
            }
            if !reseek { break }  // the range ended: the keys left are not stored
        }
        return found
    }
}
