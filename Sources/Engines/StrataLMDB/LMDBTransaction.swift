import CLMDB
import Foundation
import StrataEngine

/// A read or write transaction of LMDB storage.
final class LMDBTransaction: StorageWriteTransaction {
    private unowned let storage: LMDBStorage
    // Unchecked exclusivity: a transaction is used by one thread, and no access to these
    // overlaps another (a runtime check per access cost five per write; callgrind).
    @exclusivity(unchecked) private var txn: OpaquePointer?
    /// The writes to replay after growing a full map: kept only once the transaction nears the
    /// map's end (``LMDBMapRoom``), then holding every change since it began.
    @exclusivity(unchecked) private var log: WriteLog?
    /// Where the map ends, for a write transaction.
    private let room: LMDBMapRoom?
    /// A write transaction's cross-process writer lock, held until it ends; `nil` once released.
    @exclusivity(unchecked) private var writerLock: LMDBWriterLock?
    /// The LMDB transaction id the body's reads belong to.
    private let txnID: Int
    /// The storage's main database and file bounds, fixed once it is open: held here so that a
    /// read does not reach them through the unowned `storage` (a retain and release per value).
    private let dbi: MDB_dbi
    private let bounds: LMDBFileBounds
    /// A read transaction's cursor between scans: opening one per scan (a malloc, a free and its
    /// setup) cost a short scan of 100 rows about a tenth of its time. Writers open theirs per
    /// scan: an open cursor of a write transaction is fixed up by every later write.
    @exclusivity(unchecked) private var spareCursor: OpaquePointer?

    /// A read transaction (`room` nil), or a write transaction with the map's room and the
    /// writer lock it holds.
    init(storage: LMDBStorage, txn: OpaquePointer, room: LMDBMapRoom? = nil, writerLock: LMDBWriterLock? = nil) {
        self.storage = storage
        self.txn = txn
        self.room = room
        self.writerLock = writerLock
        txnID = mdb_txn_id(txn)
        dbi = storage.dbi
        bounds = storage.bounds
        // An unknown MDB_txn layout, or a map already near its end: log from the first write.
        if let room, !room.readable || room.isNearEnd(txn, writing: 0) {
            log = WriteLog()
            storage.writeLogStarts.fromBegin += 1
        }
    }

    // MARK: Reads

    func get<R>(_ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        var k = MDB_val(key), v = MDB_val()
        let rc = mdb_get(txn, dbi, &k, &v)
        if rc == MDB_NOTFOUND { return try body(nil) }
        if rc != MDB_SUCCESS { try check(rc, "reading a key", path: storage.path) }  // the path only on failure: no retains per read
        return try body(lend(v, key: key))
    }

    /// A value LMDB returned, once it is known to be one: not a named sub-database's record,
    /// and inside the file (see ``LMDBFileBounds``).
    @inline(__always)
    private func lend(_ value: MDB_val, key: UnsafeRawBufferPointer) throws(EngineError) -> UnsafeRawBufferPointer {
        if _slowPath(value.mv_size == LMDBStorage.subDatabaseRecordSize) { try storage.refuseSubDatabase(value, key: key) }
        try bounds.requireInFile(value)
        return value.buffer
    }

    func scan(
        _ range: ResolvedRange, reverse: Bool, limit: Int?, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let cursor = try takeCursor()
        defer { giveBack(cursor) }
        var k = MDB_val(), v = MDB_val()
        var rc = reverse ? seekLast(cursor, range, &k, &v) : seekFirst(cursor, range, &k, &v)
        var remaining = limit ?? .max
        while rc == MDB_SUCCESS {
            if reverse ? !range.isAtOrAboveLower(k.buffer) : !range.isAtOrBelowUpper(k.buffer) { return }
            guard try visit(k.buffer, lend(v, key: k.buffer)) else { return }
            remaining -= 1
            if remaining == 0 { return }
            rc = mdb_cursor_get(cursor, &k, &v, reverse ? MDB_PREV : MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { try check(rc, "scanning", path: storage.path) }
    }

    /// Positions on the first key at or above the range's lower bound.
    private func seekFirst(_ cursor: OpaquePointer, _ range: ResolvedRange, _ k: inout MDB_val, _ v: inout MDB_val) -> Int32 {
        guard let lower = range.lower else { return mdb_cursor_get(cursor, &k, &v, MDB_FIRST) }
        var rc = lower.key.withUnsafeBytes { bound in
            k = MDB_val(bound)
            return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
        }
        if rc == MDB_SUCCESS && !lower.inclusive && lower.key.withUnsafeBytes({ Bytewise.compare(k.buffer, $0) }) == 0 {
            rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        return rc
    }

    /// Positions on the last key at or below the range's upper bound: the largest key below
    /// the bound, found by seeking to the bound and stepping back.
    private func seekLast(_ cursor: OpaquePointer, _ range: ResolvedRange, _ k: inout MDB_val, _ v: inout MDB_val) -> Int32 {
        guard let upper = range.upper else { return mdb_cursor_get(cursor, &k, &v, MDB_LAST) }
        let rc = upper.key.withUnsafeBytes { bound in
            k = MDB_val(bound)
            return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
        }
        if rc == MDB_NOTFOUND { return mdb_cursor_get(cursor, &k, &v, MDB_LAST) }
        if rc != MDB_SUCCESS { return rc }
        let atBound = upper.key.withUnsafeBytes { Bytewise.compare(k.buffer, $0) } == 0
        if atBound && upper.inclusive { return rc }
        return mdb_cursor_get(cursor, &k, &v, MDB_PREV)
    }

    /// A cursor for a scan: a read transaction's spare one when it has it (a scan inside another
    /// scan's visitor opens its own).
    private func takeCursor() throws(EngineError) -> OpaquePointer {
        if let cursor = spareCursor {
            spareCursor = nil
            return cursor
        }
        return try openCursor()
    }

    /// Keeps a read transaction's cursor for its next scan; closes any other. A write
    /// transaction's cursor is freed by LMDB when the transaction ends, so it is closed only while
    /// the transaction lives (a read transaction's, before or after: LMDB leaves those to us).
    private func giveBack(_ cursor: OpaquePointer) {
        if room == nil && spareCursor == nil && txn != nil { spareCursor = cursor }
        else if room == nil || txn != nil { mdb_cursor_close(cursor) }
    }

    private func openCursor(in transaction: OpaquePointer? = nil) throws(EngineError) -> OpaquePointer {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(transaction ?? txn, dbi, &cursor), "opening a cursor", path: storage.path)
        return cursor!
    }

    // MARK: Writes

    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
        try logIfNearEnd(writing: key.count + value.count)
        log?.recordPut(key, value)
        _ = try run(.put(key: key, value: value))
    }

    /// LMDB tells as it writes: `MDB_NOOVERWRITE` stores a new key in one descent and refuses an
    /// existing one (`MDB_KEYEXIST`), which a plain put then replaces.
    func putReportingReplaced(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws -> Bool {
        try logIfNearEnd(writing: key.count + value.count)
        log?.recordPut(key, value)
        try checkReplaced(key)
        var k = MDB_val(key), v = MDB_val(value)
        let rc = mdb_put(txn, dbi, &k, &v, UInt32(MDB_NOOVERWRITE))
        switch rc {
        case MDB_SUCCESS:
            return false
        case MDB_KEYEXIST:
            _ = try run(.put(key: key, value: value))
            return true
        case MDB_MAP_FULL:  // only a new key needs room: the replay of the log (which holds this put) stores it
            _ = try growAndReplay()
            return false
        default:
            try fail(writeError(rc, .put(key: key, value: value)))
        }
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        try logIfNearEnd(writing: key.count)
        log?.recordDelete(key)
        _ = try run(.delete(key: key))
    }

    func clear(_ range: ResolvedRange) throws -> Int {
        try logIfNearEnd(writing: nil)
        log?.recordClear(range)
        return try run(.clear(range))
    }

    /// Starts the log when the next write (`bytes` of key and value; nil: a range clear) could
    /// find the map full: one comparison per write until then.
    @inline(__always)
    private func logIfNearEnd(writing bytes: Int?) throws(EngineError) {
        guard log == nil, let room, let txn, room.isNearEnd(txn, writing: bytes) else { return }
        log = try changesSoFar()
        storage.writeLogStarts.midway += 1
    }

    /// The transaction's changes so far, as a log of puts and deletes: its keys and values walked
    /// beside a read snapshot of the commit it began from (the writer lock keeps that commit the
    /// newest). Replayed into a new transaction on that commit, they leave what this one holds.
    private func changesSoFar() throws(EngineError) -> WriteLog {
        let snapshot: OpaquePointer
        do { snapshot = try storage.beginTransaction(readOnly: true) } catch {
            try fail(error as? EngineError ?? lmdbError(MDB_MAP_RESIZED, "reading the snapshot before logging writes", path: storage.path))
        }
        defer { mdb_txn_abort(snapshot) }
        guard mdb_txn_id(snapshot) == txnID - 1 else {
            try fail(.mustRetry(reason: "another process committed during an LMDB write transaction"))
        }
        let log = WriteLog()
        // Both cursors are closed before a failure ends the transaction (which frees `mine`).
        let mine = try openCursor(), theirs: OpaquePointer
        do { theirs = try openCursor(in: snapshot) } catch {
            mdb_cursor_close(mine)
            throw error
        }
        var mk = MDB_val(), mv = MDB_val(), tk = MDB_val(), tv = MDB_val()
        var mrc = mdb_cursor_get(mine, &mk, &mv, MDB_FIRST), trc = mdb_cursor_get(theirs, &tk, &tv, MDB_FIRST)
        while mrc == MDB_SUCCESS || trc == MDB_SUCCESS {
            let order = mrc != MDB_SUCCESS ? 1 : trc != MDB_SUCCESS ? -1 : Bytewise.compare(mk.buffer, tk.buffer)
            // The transaction's own values are in its dirty pages or pages it wrote; an unchanged
            // value is the same bytes in the map (same address), compared only when that differs.
            if order < 0 || (order == 0 && !Self.sameValue(mv, tv, bounds: bounds)) { log.recordPut(mk.buffer, mv.buffer) }
            if order > 0 { log.recordDelete(tk.buffer) }
            if order <= 0 { mrc = mdb_cursor_get(mine, &mk, &mv, MDB_NEXT) }
            if order >= 0 { trc = mdb_cursor_get(theirs, &tk, &tv, MDB_NEXT) }
        }
        mdb_cursor_close(mine)
        mdb_cursor_close(theirs)
        for rc in [mrc, trc] where rc != MDB_NOTFOUND { try fail(lmdbError(rc, "reading the changes before logging writes", path: storage.path)) }
        return log
    }

    private static func sameValue(_ mine: MDB_val, _ theirs: MDB_val, bounds: LMDBFileBounds) -> Bool {
        guard mine.mv_size == theirs.mv_size else { return false }
        if mine.mv_data == theirs.mv_data { return true }
        // The snapshot's value may lie past the end of a short file: then it differs (ours is logged).
        guard (try? bounds.requireInFile(theirs)) != nil else { return false }
        return memcmp(mine.mv_data, theirs.mv_data, mine.mv_size) == 0
    }

    /// Applies one write; when the map is full, grows it and replays the whole log (which
    /// already holds this write) into a new transaction. Returns the number of keys removed.
    private func run(_ entry: WriteLog.Entry) throws(EngineError) -> Int {
        let (rc, removed) = try apply(entry)
        if rc == MDB_MAP_FULL { return try growAndReplay() }
        if rc != MDB_SUCCESS { try fail(writeError(rc, entry)) }
        return removed
    }

    private func writeError(_ rc: Int32, _ entry: WriteLog.Entry) -> EngineError {
        // The main database's flags were checked at open: LMDB refuses a plain write only to a
        // named sub-database's record.
        switch entry {
        case let .put(key, _) where rc == MDB_INCOMPATIBLE, let .delete(key) where rc == MDB_INCOMPATIBLE:
            return storage.subDatabaseRefusal(name: key)
        default:
            return lmdbError(rc, "writing", path: storage.path)
        }
    }

    private func apply(_ entry: WriteLog.Entry) throws(EngineError) -> (rc: Int32, removed: Int) {
        switch entry {
        case let .put(key, value):
            try checkReplaced(key)
            var k = MDB_val(key), v = MDB_val(value)
            return (mdb_put(txn, dbi, &k, &v, 0), 0)
        case let .delete(key):
            try checkReplaced(key)
            var k = MDB_val(key)
            let rc = mdb_del(txn, dbi, &k, nil)
            return (rc == MDB_NOTFOUND ? MDB_SUCCESS : rc, 0)
        case let .clear(range):
            return try clearNow(range)
        }
    }

    /// Before LMDB replaces or deletes the value under `key` in a short file (``LMDBFileBounds``;
    /// a lookup): LMDB reads the header of a large value's first overflow page, which holds the
    /// value's first byte, so that byte must be inside the file. The rest of a cut value may be
    /// missing: replacing or deleting it is how a user repairs the store.
    @inline(__always)
    private func checkReplaced(_ key: UnsafeRawBufferPointer) throws(EngineError) {
        guard _slowPath(bounds.active) else { return }
        var k = MDB_val(key), v = MDB_val()
        guard mdb_get(txn, dbi, &k, &v) == MDB_SUCCESS else { return }
        try checkFirstPage(v)
    }

    @inline(__always)
    private func checkFirstPage(_ value: MDB_val) throws(EngineError) {
        if let refusal = firstPageRefusal(value) { try fail(refusal) }
    }

    /// Why LMDB must not touch `value` (its first page lies past the end of a short file), if so.
    @inline(__always)
    private func firstPageRefusal(_ value: MDB_val) -> EngineError? {
        do { try bounds.requireInFile(MDB_val(mv_size: min(value.mv_size, 1), mv_data: value.mv_data)) } catch { return error }
        return nil
    }

    /// Deletes the keys of `range` through one cursor. The cursor is closed before a refusal ends
    /// the transaction: LMDB frees a write transaction's cursors when it ends, so closing it after
    /// `fail` would free it twice.
    private func clearNow(_ range: ResolvedRange) throws(EngineError) -> (rc: Int32, removed: Int) {
        var opened: OpaquePointer?
        var rc = mdb_cursor_open(txn, dbi, &opened)
        guard rc == MDB_SUCCESS, let cursor = opened else { return (rc, 0) }
        var k = MDB_val(), v = MDB_val()
        var removed = 0
        var refusal: EngineError?
        rc = seekFirst(cursor, range, &k, &v)
        while rc == MDB_SUCCESS && range.isAtOrBelowUpper(k.buffer) {
            refusal = firstPageRefusal(v)
            if refusal != nil { break }
            rc = mdb_cursor_del(cursor, 0)
            if rc == MDB_INCOMPATIBLE {
                refusal = storage.subDatabaseRefusal(name: k.buffer)
                break
            }
            guard rc == MDB_SUCCESS else { break }
            removed += 1
            // After a delete the cursor rests on the following key, and MDB_NEXT returns that
            // key without moving (LMDB marks the cursor C_DEL for this).
            rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        mdb_cursor_close(cursor)
        if let refusal { try fail(refusal) }
        return (rc == MDB_NOTFOUND ? MDB_SUCCESS : rc, removed)
    }

    /// Aborts the full transaction, grows the map and replays every logged write into a new
    /// transaction, as often as needed. Returns what the last replayed write returned.
    private func growAndReplay() throws(EngineError) -> Int {
        guard let log else {
            // LMDBMapRoom's bound on the pages a write takes was wrong: nothing to replay from.
            try fail(lmdbError(MDB_MAP_FULL, "writing, before the transaction's writes were logged", path: storage.path))
        }
        while true {
            // Aborting releases LMDB's writer lock; another process may commit before we begin
            // again. The replay is only sound on the snapshot the body read: the new transaction
            // must get the same id, or the body's reads are stale and it must run again.
            let expectedID = txnID
            if let txn { mdb_txn_abort(txn) }
            txn = nil
            do {
                try storage.growMap(toAtLeast: storage.currentMapSize + 2 * log.byteCount)
                txn = try storage.beginTransaction(readOnly: false)
            } catch {
                try fail(error as? EngineError ?? .engineFailure(engine: "LMDB", code: 0, message: "\(error)", operation: "growing the map"))
            }
            if mdb_txn_id(txn) != expectedID {
                try fail(.mustRetry(reason: "another process committed while the LMDB map was being grown"))
            }
            var last: (rc: Int32, removed: Int) = (MDB_SUCCESS, 0)
            var thrown: EngineError?
            log.replay { entry in
                guard last.rc == MDB_SUCCESS, thrown == nil else { return }
                do throws(EngineError) { last = try apply(entry) } catch { thrown = error }
            }
            if let thrown { try fail(thrown) }
            if last.rc == MDB_SUCCESS { return last.removed }
            if last.rc != MDB_MAP_FULL { try fail(lmdbError(last.rc, "replaying writes after growing the map", path: storage.path)) }
        }
    }

    // MARK: Ending

    /// Commits, growing the map and replaying when the commit itself finds the map full.
    func commit() throws {
        try logIfNearEnd(writing: 0)
        while true {
            let rc = mdb_txn_commit(txn)
            txn = nil  // commit frees the transaction, whatever it returns
            if rc == MDB_SUCCESS { return }
            if rc == EIO && storage.diskIsFull() { throw EngineError.diskFull(path: storage.path) }
            if rc != MDB_MAP_FULL { throw lmdbError(rc, "committing", path: storage.path) }
            _ = try growAndReplay()
        }
    }

    /// Ends the transaction: a reader's snapshot is released, an uncommitted writer rolls back.
    func end() {
        if let spareCursor { mdb_cursor_close(spareCursor) }  // a read-only cursor is never freed by its transaction
        spareCursor = nil
        if let txn { mdb_txn_abort(txn) }
        txn = nil
        writerLock?.unlock()
        writerLock = nil
    }

    /// Aborts the transaction after a failure that broke it, and throws that failure (the core
    /// refuses every later use of the transaction).
    private func fail(_ error: EngineError) throws(EngineError) -> Never {
        end()
        throw error
    }
}
