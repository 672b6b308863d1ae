/// A transaction of a ``CoreEngine``: the contract's checks and bookkeeping around the
/// storage's primitives. Valid only inside the closure it is lent to.
final class CoreTransaction: KeyValueWriter {
    private unowned let core: CoreEngine
    private let reader: any StorageReadTransaction
    private let writer: (any StorageWriteTransaction)?
    private let limits: EngineLimits
    private var ended = false
    /// Closures currently holding bytes borrowed from this transaction.
    private var lent = 0
    /// The storage error that broke this write transaction: it can only roll back now.
    private var failure: Error?
    /// Writes so far, counted against the declared per-transaction limits.
    private var operations = 0
    private var bytes = 0
    /// Pending writes for storage that cannot read its own (`nil` otherwise).
    private var overlay: PendingWrites?
    /// Whether every write goes into `overlay` as it is made. Storage that buffers its writes
    /// (``BufferedStorageWriteTransaction``) starts without: a transaction that writes and never
    /// reads after writing (a bulk load) keeps no second copy of its writes, and a read finds them
    /// by replaying the buffer (``indexOverlay()``). After two such replays reads and writes
    /// interleave, and every write is indexed as it is made, so replays never add up.
    private var overlayIndexed = true
    /// Writes to buffering storage since the overlay was last rebuilt from its buffer.
    private var unindexedWrites = 0
    /// How many times the overlay was rebuilt from the storage's buffer.
    private var replays = 0

    init(core: CoreEngine, reader: any StorageReadTransaction, writer: (any StorageWriteTransaction)?) {
        self.core = core
        self.reader = reader
        self.writer = writer
        limits = core.declaration.limits
        if writer != nil && !core.declaration.readsOwnWrites {
            overlay = PendingWrites()
            overlayIndexed = !(writer is BufferedStorageWriteTransaction)
        }
    }

    /// The keys the overlay holds now (tests: a bulk load after a read keeps no second copy).
    var overlayKeyCount: Int { overlay?.count ?? 0 }

    /// Ends the transaction (rolling back a writer that did not commit). Later use throws.
    func end() {
        guard !ended else { return }
        ended = true
        reader.end()
    }

    func commit() throws {
        if let failure { throw failure }
        guard !ended, let writer else { throw EngineError.transactionEnded }
        try writer.commit()
    }

    // MARK: Reads

    func withValue<R>(forKey key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try checkKey(key)
        try live()
        // Writes are refused while the body runs, also for a missing key, on every engine.
        lent += 1
        defer { lent -= 1 }
        if overlay != nil {
            switch pendingValue(key) {
            case .untouched: break
            case .deleted: return try body(nil)
            case let .value(value): return try body(value)
            }
        }
        // The caller's errors are wrapped on their way through the storage, so that only the
        // storage's own errors break the transaction. (No generic local such as `R?` here: this
        // code runs unspecialized, where such a type costs a metadata lookup per call.)
        do {
            return try reader.get(key) { value in
                do { return try body(value) } catch { throw CallerError(error) }
            }
        } catch let error as CallerError {
            throw error.error
        } catch {
            throw broken(error)
        }
    }

    func scan(
        _ range: KeyRange, reverse: Bool, limit: Int?,
        _ visit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try live()
        if let limit, limit < 0 { throw EngineError.invalidArgument("scan limit \(limit) is negative") }
        guard limit != 0, let range = range.resolved(maxKeyLength: limits.maxKeyLength) else { return }
        lent += 1
        defer { lent -= 1 }
        // A reader hands the caller's visitor to the storage as it is: nothing between them per
        // row. A writer tags the caller's errors on their way through, so that only the storage's
        // own errors break the transaction, and merges its pending writes where the storage
        // cannot read them.
        guard writer != nil else {
            return try reader.scan(range, reverse: reverse, limit: limit, visit)
        }
        do {
            try mergedScan(range, reverse: reverse, limit: limit) { key, value in
                do { return try visit(key, value) } catch { throw CallerError(error) }
            }
        } catch let error as CallerError {
            throw error.error
        } catch {
            throw broken(error)
        }
    }

    // MARK: Writes

    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
        let writer = try checkedPut(value, forKey: key)
        do { try writer.put(value, forKey: key) } catch { throw broken(error) }
        if overlayIndexed { overlay?.set(key, value) } else { unindexedWrites += 1 }
    }

    func putReportingReplaced(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws -> Bool {
        // Storage that cannot read its own writes: the overlay answers, through a read.
        guard overlay == nil else {
            let replaced = try withValue(forKey: key) { $0 != nil }
            try put(value, forKey: key)
            return replaced
        }
        let writer = try checkedPut(value, forKey: key)
        do { return try writer.putReportingReplaced(value, forKey: key) } catch { throw broken(error) }
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        try checkKey(key)
        let writer = try writableCheck()
        try count(bytes: key.count)
        do { try writer.delete(key) } catch { throw broken(error) }
        if overlayIndexed { overlay?.set(key, nil) } else { unindexedWrites += 1 }
    }

    func clear(_ range: KeyRange) throws -> Int {
        let writer = try writableCheck()
        try count(bytes: 0)
        guard let range = range.resolved(maxKeyLength: limits.maxKeyLength) else { return 0 }
        guard overlay != nil else {
            do { return try writer.clear(range) } catch { throw broken(error) }
        }
        // The storage cannot see its pending writes: delete every key this transaction sees.
        var doomed: [[UInt8]] = []
        try scan(KeyRange(range), reverse: false, limit: nil) { key, _ in
            doomed.append(Array(key))
            return true
        }
        for key in doomed {
            try key.withUnsafeBytes { key in
                do { try writer.delete(key) } catch { throw broken(error) }
                overlay?.set(key, nil)  // the scan above indexed the overlay
            }
        }
        return doomed.count
    }

    // MARK: Checks

    @inline(__always)
    private func checkKey(_ key: UnsafeRawBufferPointer) throws(EngineError) {
        if key.count == 0 { throw .emptyKey }
        if key.count > limits.maxKeyLength { throw .keyTooLarge(length: key.count, limit: limits.maxKeyLength) }
    }

    @inline(__always)
    private func live() throws {
        if let failure { throw failure }
        if ended { throw EngineError.transactionEnded }
    }

    @inline(__always)
    private func writableCheck() throws -> any StorageWriteTransaction {
        try live()
        guard let writer else { throw EngineError.readOnly(path: core.path ?? core.declaration.name) }
        if lent > 0 { throw EngineError.writeWhileReading }
        return writer
    }

    /// The checks of a put, in the order every engine reports them: the key, a writable live
    /// transaction, the value's length, then the transaction's limits (counting this put).
    @inline(__always)
    private func checkedPut(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws -> any StorageWriteTransaction {
        try checkKey(key)
        let writer = try writableCheck()
        if let max = limits.maxValueLength, value.count > max { throw EngineError.valueTooLarge(length: value.count, limit: max) }
        try count(bytes: key.count + value.count)
        return writer
    }

    /// Counts one write of `bytes` against the declared per-transaction limits.
    @inline(__always)
    private func count(bytes added: Int) throws(EngineError) {
        if let max = limits.maxOperationsPerTransaction {
            if operations >= max { throw .transactionTooLarge(what: "writes", limit: max) }
        }
        if let max = limits.maxBytesPerTransaction {
            if bytes + added > max { throw .transactionTooLarge(what: "bytes of keys and values", limit: max) }
        }
        operations += 1
        bytes += added
    }

    /// Records a storage error that broke a write transaction and returns it. A read
    /// transaction is not broken by a failed read.
    private func broken(_ error: Error) -> Error {
        if writer != nil { failure = error }
        return error
    }

    // MARK: The overlay of pending writes

    /// What this transaction did to `key`.
    private func pendingValue(_ key: UnsafeRawBufferPointer) -> PendingWrites.Lookup {
        indexOverlay()
        return overlay?.lookup(key) ?? .untouched
    }

    /// Makes the overlay hold every write so far: when writes went only into the storage's buffer
    /// since the last rebuild, rebuilds it from the whole buffer (later writes of a key win). The
    /// second rebuild switches to indexing every write as it is made.
    private func indexOverlay() {
        guard !overlayIndexed, unindexedWrites > 0, let buffered = writer as? BufferedStorageWriteTransaction else { return }
        let rebuilt = PendingWrites()
        buffered.replayBufferedWrites { key, value in rebuilt.set(key, value) }
        overlay = rebuilt
        unindexedWrites = 0
        replays += 1
        if replays == 2 { overlayIndexed = true }
    }

    /// Walks the snapshot and the pending writes together, in order, at most `limit` pairs: a
    /// pending write shadows the stored value of its key, a pending delete hides it. Without
    /// pending writes, the storage's own scan.
    private func mergedScan(
        _ range: ResolvedRange, reverse: Bool, limit: Int?,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        indexOverlay()
        guard let pending = overlay, !pending.isEmpty else {
            return try reader.scan(range, reverse: reverse, limit: limit, visit)
        }
        let slots = pending.sortedSlots()
        // The pending keys inside the range, in the scan's direction.
        let start = range.lower.map { pending.firstIndex(in: slots, atOrAbove: $0.key, inclusive: $0.inclusive) } ?? 0
        let end = range.upper.map { pending.firstIndex(in: slots, atOrAbove: $0.key, inclusive: !$0.inclusive) } ?? slots.count
        let ownKeys = start < end ? slots[start..<end] : []
        var next = reverse ? ownKeys.endIndex - 1 : ownKeys.startIndex
        var stopped = false
        var visited = 0
        let most = limit ?? .max
        /// Visits one pair, counting it against the limit.
        func emit(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws {
            if try !visit(key, value) { stopped = true }
            visited += 1
            if visited >= most { stopped = true }
        }
        /// Visits the pending writes that come before `stored` (all remaining ones when `nil`) in
        /// scan order. A pending key equal to `stored` is visited in its place (`shadowed`).
        func emitOwn(before stored: UnsafeRawBufferPointer?, shadowed: inout Bool) throws {
            while !stopped, ownKeys.indices.contains(next) {
                let slot = Int(ownKeys[next])
                let key = pending.key(slot)
                let order = stored.map { Bytewise.compare(key, $0) }
                if let order, (reverse ? -order : order) > 0 { return }
                if order == 0 { shadowed = true }
                next += reverse ? -1 : 1
                if let value = pending.value(slot) { try emit(key, value) }
                if order == 0 { return }
            }
        }
        try reader.scan(range, reverse: reverse, limit: nil) { key, value in
            var shadowed = false
            try emitOwn(before: key, shadowed: &shadowed)
            if !stopped && !shadowed { try emit(key, value) }
            return !stopped
        }
        var ignored = false
        try emitOwn(before: nil, shadowed: &ignored)
    }
}

/// An error of the caller's closure, on its way through a storage primitive.
private struct CallerError: Error {
    let error: Error
    init(_ error: Error) { self.error = error }
}

extension KeyRange {
    /// The range a resolved range stands for.
    init(_ resolved: ResolvedRange) {
        self.init(
            lower: resolved.lower.map { $0.inclusive ? .inclusive($0.key) : .exclusive($0.key) } ?? .unbounded,
            upper: resolved.upper.map { $0.inclusive ? .inclusive($0.key) : .exclusive($0.key) } ?? .unbounded)
    }
}

@_spi(StrataInternals)
extension CoreTransaction: StartStateReading {
    var readsStartState: Bool { overlay != nil }  // its storage cannot read its own writes: the reader sees the start

    /// A forward scan from the first key not yet answered to the last asked: every key below the
    /// stored key it meets was not held, a key equal to it was. Stored keys between the caller's
    /// are passed over up to ``strayLimit`` in a row; then the walk seeks again, so dense stored
    /// data costs at most a seek per key, and a run of new keys (a fill) costs one seek in all.
    func keysHeld(atStart keys: PackedKeys) throws -> [Bool] {
        try live()
        guard readsStartState else {
            throw EngineError.invalidArgument("this write transaction's storage reads its own writes: ask putReportingReplaced instead")
        }
        return try keys.withBytes { packed in
            let key = { (i: Int) in UnsafeRawBufferPointer(rebasing: packed[keys.range(of: i)]) }
            for i in 0..<keys.count {
                try checkKey(key(i))
                if i > 0 && Bytewise.compare(key(i - 1), key(i)) >= 0 {
                    throw EngineError.invalidArgument("keysHeld(atStart:) needs ascending, distinct keys (key \(i) is not above key \(i - 1))")
                }
            }
            lent += 1
            defer { lent -= 1 }
            var held = [Bool](repeating: false, count: keys.count)
            var next = 0
            while next < keys.count {
                var strays = 0, storeEnded = true
                do {
                    // Up to the last key asked: no stored key beyond it is read (etcd pages its scans).
                    let range = ResolvedRange(lower: .init(key: Array(key(next)), inclusive: true), upper: .init(key: Array(key(keys.count - 1)), inclusive: true))
                    try reader.scan(range, reverse: false, limit: nil) { stored, _ in
                        while next < keys.count, Bytewise.compare(key(next), stored) < 0 {
                            next += 1
                            strays = 0
                        }
                        if next < keys.count {
                            if Bytewise.compare(key(next), stored) == 0 {
                                held[next] = true
                                next += 1
                                strays = 0
                            } else {
                                strays += 1
                            }
                        }
                        guard next < keys.count, strays < Self.strayLimit else {
                            storeEnded = false
                            return false
                        }
                        return true
                    }
                } catch {
                    throw broken(error)
                }
                if storeEnded { break }  // no stored key from the first unanswered to the last asked: none was held
            }
            return held
        }
    }

    /// Stored keys passed over in a row before the walk seeks again: about what a seek costs in
    /// keys stepped over on LevelDB, and half of etcd's first page of a scan (64 pairs), which
    /// one seek fetches anyway.
    static let strayLimit = 32
}
