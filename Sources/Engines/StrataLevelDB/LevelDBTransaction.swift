import CLevelDB
import StrataEngine

/// A read or write transaction of LevelDB storage: a snapshot, plus for writers a `WriteBatch`
/// of pending writes (which the engine core indexes when the transaction reads them back).
final class LevelDBTransaction: BufferedStorageWriteTransaction {
    private unowned let storage: LevelDBStorage
    private let db: OpaquePointer
    private var snapshot: OpaquePointer?
    private let readOptions: OpaquePointer
    private var batch: OpaquePointer?
    private var hasWrites = false
    /// An iterator kept between scans: creating one (a merging iterator over the memtables and
    /// every level's files) cost a one-row scan most of its time. It reads the snapshot, which a
    /// writer's own writes never change (they wait in the batch), so writers keep one too; a scan
    /// inside another scan's visitor creates its own.
    private var spareIterator: OpaquePointer?

    init(storage: LevelDBStorage, db: OpaquePointer, writable: Bool) {
        self.storage = storage
        self.db = db
        snapshot = leveldb_create_snapshot(db)
        readOptions = leveldb_readoptions_create()
        leveldb_readoptions_set_snapshot(readOptions, snapshot)
        if writable { batch = leveldb_writebatch_create() }
    }

    func end() {
        if let spareIterator { leveldb_iter_destroy(spareIterator) }
        spareIterator = nil
        leveldb_readoptions_destroy(readOptions)
        leveldb_release_snapshot(db, snapshot)
        if let batch { leveldb_writebatch_destroy(batch) }
    }

    func commit() throws {
        guard hasWrites else { return }
        var err: UnsafeMutablePointer<CChar>?
        leveldb_write(db, storage.writeOptions, batch, &err)
        do {
            try check(err, "committing", path: storage.path)
        } catch {
            storage.reopenBeforeWriting = true
            throw error
        }
    }

    // MARK: Reads

    func get<R>(_ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        var length = 0
        var err: UnsafeMutablePointer<CChar>?
        let value = leveldb_get(db, readOptions, key.chars, key.count, &length, &err)
        if err != nil { try check(err, "reading a key", path: storage.path) }  // the path only on failure: no retains per read
        // The C API copies the value into a malloc'd buffer (an empty value is a non-NULL malloc(0)).
        guard let value else { return try body(nil) }
        defer { leveldb_free(value) }
        return try body(UnsafeRawBufferPointer(start: value, count: length))
    }

    func scan(
        _ range: ResolvedRange, reverse: Bool, limit: Int?, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let iterator = spareIterator ?? leveldb_create_iterator(db, readOptions)!
        spareIterator = nil
        defer {
            if spareIterator == nil { spareIterator = iterator } else { leveldb_iter_destroy(iterator) }
        }
        if reverse { seekLast(iterator, range) } else { seekFirst(iterator, range) }
        var remaining = limit ?? .max
        while leveldb_iter_valid(iterator) != 0 {
            var keyLength = 0, valueLength = 0
            let key = UnsafeRawBufferPointer(start: leveldb_iter_key(iterator, &keyLength), count: keyLength)
            if reverse ? !range.isAtOrAboveLower(key) : !range.isAtOrBelowUpper(key) { break }
            let value = UnsafeRawBufferPointer(start: leveldb_iter_value(iterator, &valueLength), count: valueLength)
            guard try visit(key, value) else { return }
            remaining -= 1
            if remaining == 0 { return }
            if reverse { leveldb_iter_prev(iterator) } else { leveldb_iter_next(iterator) }
        }
        var err: UnsafeMutablePointer<CChar>?
        leveldb_iter_get_error(iterator, &err)
        try check(err, "scanning", path: storage.path)
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
        leveldb_writebatch_put(batch, key.chars, key.count, value.chars, value.count)
        hasWrites = true
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        leveldb_writebatch_delete(batch, key.chars, key.count)
        hasWrites = true
    }

    /// LevelDB replays a batch's records in order, so later writes of a key win.
    func replayBufferedWrites(_ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer?) -> Void) {
        guard hasWrites, let batch else { return }
        withoutActuallyEscaping(visit) { visit in
            var state = visit
            withUnsafeMutablePointer(to: &state) { pointer in
                leveldb_writebatch_iterate(batch, pointer, { state, key, keyLength, value, valueLength in
                    let visit = state!.assumingMemoryBound(to: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer?) -> Void).self).pointee
                    visit(UnsafeRawBufferPointer(start: key, count: keyLength), UnsafeRawBufferPointer(start: value, count: valueLength))
                }, { state, key, keyLength in
                    let visit = state!.assumingMemoryBound(to: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer?) -> Void).self).pointee
                    visit(UnsafeRawBufferPointer(start: key, count: keyLength), nil)
                })
            }
        }
    }
}
