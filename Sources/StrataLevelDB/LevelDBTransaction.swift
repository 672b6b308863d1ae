import CLevelDB
import StrataEngine

/// A read or write transaction of a ``LevelDBEngine``: a snapshot, plus for writers a
/// `WriteBatch` and the index of its pending writes. Valid only inside its closure.
final class LevelDBTransaction: KeyValueWriter {
    private unowned let engine: LevelDBEngine
    private let db: OpaquePointer
    private let writable: Bool
    private var snapshot: OpaquePointer?
    private let readOptions: OpaquePointer
    private var batch: OpaquePointer?
    /// The batch's writes by key, for reading them back. Built from the batch on the first read
    /// (a transaction that only writes never pays for it), kept up to date after that.
    private var pending = PendingWrites()
    private var indexed = false
    private var lent = 0
    private var ended = false

    init(engine: LevelDBEngine, db: OpaquePointer, writable: Bool) {
        self.engine = engine
        self.db = db
        self.writable = writable
        snapshot = leveldb_create_snapshot(db)
        readOptions = leveldb_readoptions_create()
        leveldb_readoptions_set_snapshot(readOptions, snapshot)
        if writable { batch = leveldb_writebatch_create() }
    }

    func end() {
        guard !ended else { return }
        ended = true
        leveldb_readoptions_destroy(readOptions)
        leveldb_release_snapshot(db, snapshot)
        if let batch { leveldb_writebatch_destroy(batch) }
    }

    func commit() throws(EngineError) {
        guard !ended else { throw .transactionEnded }
        guard hasWrites else { return }
        var err: UnsafeMutablePointer<CChar>?
        leveldb_write(db, engine.writeOptions, batch, &err)
        try check(err, "committing", path: engine.path)
    }

    // MARK: Reads

    func withValue<R>(forKey key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try KeyLimits.validate(key)
        try live()
        lent += 1
        defer { lent -= 1 }
        if writable { indexPendingWrites() }
        if writable, let own = pending.lookup(key) {
            guard let value = own else { return try body(nil) }
            return try value.withUnsafeBytes { try body($0) }
        }
        var length = 0
        var err: UnsafeMutablePointer<CChar>?
        let value = leveldb_get(db, readOptions, key.chars, key.count, &length, &err)
        try check(err, "reading a key", path: engine.path)
        // The C API copies the value into a malloc'd buffer (an empty value is a non-NULL malloc(0)).
        guard let value else { return try body(nil) }
        defer { leveldb_free(value) }
        return try body(UnsafeRawBufferPointer(start: value, count: length))
    }

    func scan(
        _ range: KeyRange, reverse: Bool, limit: Int?,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try live()
        try KeyLimits.validate(limit: limit)
        guard limit != 0, let range = range.resolved() else { return }
        lent += 1
        defer { lent -= 1 }
        var visited = 0
        try mergedScan(range, reverse: reverse) { key, value in
            guard try visit(key, value) else { return false }
            visited += 1
            return limit.map { visited < $0 } ?? true
        }
    }

    /// Walks the snapshot and this transaction's pending writes together, in order: a pending
    /// write shadows the stored value of its key, a pending delete hides it.
    private func mergedScan(
        _ range: ResolvedRange, reverse: Bool,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let iterator = leveldb_create_iterator(db, readOptions)!
        defer { leveldb_iter_destroy(iterator) }
        if reverse { seekLast(iterator, range) } else { seekFirst(iterator, range) }
        let step: (OpaquePointer) -> Void = reverse ? { leveldb_iter_prev($0) } : { leveldb_iter_next($0) }
        func inRange(_ key: UnsafeRawBufferPointer) -> Bool {
            reverse ? range.isAtOrAboveLower(key) : range.isAtOrBelowUpper(key)
        }

        if writable { indexPendingWrites() }
        let pendingKeys = writable ? pending.sortedKeys() : []
        var index: Int
        if reverse {
            index = range.upper.map { pendingKeys.firstIndex(atOrAbove: $0.key, inclusive: !$0.inclusive) } ?? pendingKeys.count
            index -= 1
        } else {
            index = range.lower.map { pendingKeys.firstIndex(atOrAbove: $0.key, inclusive: $0.inclusive) } ?? 0
        }

        while true {
            var stored: UnsafeRawBufferPointer?
            if leveldb_iter_valid(iterator) != 0 {
                var length = 0
                let key = UnsafeRawBufferPointer(start: leveldb_iter_key(iterator, &length), count: length)
                if inRange(key) { stored = key }
            }
            var own: [UInt8]?
            if pendingKeys.indices.contains(index) {
                let key = pendingKeys[index]
                if key.withUnsafeBytes({ inRange($0) }) { own = key }
            }
            if let ownKey = own {
                // The pending key comes first when nothing is stored ahead, or when it sorts at or
                // before the stored key in the scan's direction.
                let order = stored.map { s in ownKey.withUnsafeBytes { Bytewise.compare($0, s) } }
                if order.map({ (reverse ? -$0 : $0) <= 0 }) ?? true {
                    if order == 0 { step(iterator) }
                    index += reverse ? -1 : 1
                    if let value = pending.value(ownKey) {
                        let more = try ownKey.withUnsafeBytes { k in try value.withUnsafeBytes { try visit(k, $0) } }
                        if !more { return }
                    }
                    continue
                }
            }
            guard let key = stored else { break }
            var length = 0
            let value = UnsafeRawBufferPointer(start: leveldb_iter_value(iterator, &length), count: length)
            if try !visit(key, value) { return }
            step(iterator)
        }
        var err: UnsafeMutablePointer<CChar>?
        leveldb_iter_get_error(iterator, &err)
        try check(err, "scanning", path: engine.path)
    }

    private func seekFirst(_ iterator: OpaquePointer, _ range: ResolvedRange) {
        guard let lower = range.lower else { return leveldb_iter_seek_to_first(iterator) }
        lower.key.withUnsafeBytes { leveldb_iter_seek(iterator, $0.chars, $0.count) }
        if !lower.inclusive, leveldb_iter_valid(iterator) != 0, compareCurrent(iterator, lower.key) == 0 {
            leveldb_iter_next(iterator)
        }
    }

    /// The largest key at or below the upper bound: seek to the bound, step back past it.
    private func seekLast(_ iterator: OpaquePointer, _ range: ResolvedRange) {
        guard let upper = range.upper else { return leveldb_iter_seek_to_last(iterator) }
        upper.key.withUnsafeBytes { leveldb_iter_seek(iterator, $0.chars, $0.count) }
        if leveldb_iter_valid(iterator) == 0 { return leveldb_iter_seek_to_last(iterator) }
        let c = compareCurrent(iterator, upper.key)
        if c > 0 || (c == 0 && !upper.inclusive) { leveldb_iter_prev(iterator) }
    }

    private func compareCurrent(_ iterator: OpaquePointer, _ key: [UInt8]) -> Int {
        var length = 0
        let current = UnsafeRawBufferPointer(start: leveldb_iter_key(iterator, &length), count: length)
        return key.withUnsafeBytes { Bytewise.compare(current, $0) }
    }

    // MARK: Writes

    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
        try KeyLimits.validate(key)
        try writableCheck()
        leveldb_writebatch_put(batch, key.chars, key.count, value.chars, value.count)
        hasWrites = true
        if indexed { pending.set(Array(key), Array(value)) }
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        try KeyLimits.validate(key)
        try writableCheck()
        leveldb_writebatch_delete(batch, key.chars, key.count)
        hasWrites = true
        if indexed { pending.set(Array(key), nil) }
    }

    func clear(_ range: KeyRange) throws -> Int {
        try writableCheck()
        // LevelDB has no range delete: delete every key this transaction can see in the range.
        var doomed: [[UInt8]] = []
        try scan(range, reverse: false, limit: nil) { key, _ in
            doomed.append(Array(key))
            return true
        }
        for key in doomed {
            key.withUnsafeBytes { leveldb_writebatch_delete(batch, $0.chars, $0.count) }
            pending.set(key, nil)  // the scan above built the index
        }
        hasWrites = hasWrites || !doomed.isEmpty
        return doomed.count
    }

    private func live() throws(EngineError) {
        if ended { throw .transactionEnded }
    }

    private var hasWrites = false

    /// Builds the index of pending writes from the batch, once (LevelDB replays the batch's
    /// records in order, so later writes of a key win).
    private func indexPendingWrites() {
        // Nothing written yet: nothing to index, and later writes need not be indexed eagerly
        // (a transaction that reads once first, like the record layer's catalog check, then
        // only writes, never pays for the index).
        guard !indexed, hasWrites, let batch else { return }
        indexed = true
        let state = Unmanaged.passUnretained(self).toOpaque()
        leveldb_writebatch_iterate(batch, state, { state, key, keyLength, value, valueLength in
            let transaction = Unmanaged<LevelDBTransaction>.fromOpaque(state!).takeUnretainedValue()
            transaction.pending.set(Array(UnsafeRawBufferPointer(start: key, count: keyLength)),
                                    Array(UnsafeRawBufferPointer(start: value, count: valueLength)))
        }, { state, key, keyLength in
            let transaction = Unmanaged<LevelDBTransaction>.fromOpaque(state!).takeUnretainedValue()
            transaction.pending.set(Array(UnsafeRawBufferPointer(start: key, count: keyLength)), nil)
        })
    }

    private func writableCheck() throws(EngineError) {
        try live()
        if !writable { throw .readOnly(path: engine.path) }
        if lent > 0 { throw .writeWhileReading }
    }
}
