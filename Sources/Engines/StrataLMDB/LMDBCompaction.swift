import CLMDB
import Foundation
@_spi(StrataInternals) import StrataEngine

/// LMDB never shrinks `data.mdb`: pages freed by deletes are reused, not returned. A compaction
/// writes every pair into a new file beside it (full pages, in key order), syncs it, checks it,
/// and renames it over `data.mdb`, then reopens.
///
/// A crash before the rename leaves the old file whole (the copy is deleted at the next open); a
/// crash after it leaves the new one, synced before it got its name. Replacing the file is safe
/// only when nobody else has it mapped: the compaction holds the presence lock alone
/// (``LMDBPresenceLock``) and checks LMDB's own lock, so it throws ``EngineError/locked(path:)``
/// while another process (Strata or another program) has the store open; Strata processes that
/// open it meanwhile wait for it. A program that opens the store with LMDB during the compaction
/// (py-lmdb, `mdb_stat`) takes no presence lock and would read the file being replaced.
extension LMDBStorage: CompactingStorage {
    static func compactionCopy(in path: String) -> String { (path as NSString).appendingPathComponent("data.mdb.compact") }

    func compact() throws -> CompactionReport {
        if let unusable { throw unusable }
        guard let presence, let env, let writerLock else { throw EngineError.readOnly(path: path) }
        let before = CompactionReport.filesSize(in: path)
        // Held throughout: other processes' writers wait, and so does another compaction while
        // the presence lock is converted (see LMDBPresenceLock.alone).
        try writerLock.lock()
        defer { writerLock.unlock() }
        try presence.alone {
            let copy = Self.compactionCopy(in: path)
            try writeCompactCopy(env, to: copy)
            try environmentLock.withLock { _ in
                mdb_env_close(env)
                self.env = nil
                var replacing: (any Error)?
                do {
                    try renameSynced(copy, to: (path as NSString).appendingPathComponent("data.mdb"))
                } catch {
                    unlink(copy)  // if the rename failed, the old data.mdb is still in place
                    replacing = error
                }
                do {
                    try open(holdingWriterLock: true)
                } catch {
                    // The store on disk is whole (old or new); this instance has no environment left.
                    let reason = EngineError.engineFailure(engine: "LMDB", code: 0, message: "the store could not be reopened after its compaction; close and reopen it (\(error))", operation: "compacting")
                    unusable = reason
                    throw reason
                }
                if let replacing { throw replacing }
            }
        }
        return CompactionReport(bytesBefore: before, bytesAfter: CompactionReport.filesSize(in: path))
    }

    /// Writes every pair, in key order, into a new environment at `copy` (one file, no lock
    /// file: nobody else knows of it), syncs it and checks it as an open would. LMDB's own
    /// compacting copy (`mdb_env_copyfd2` with `MDB_CP_COMPACT`) only leaves the free pages out:
    /// pages half emptied by deletes stay half empty, so a store with every other record deleted
    /// did not shrink at all. Appending in key order (`MDB_APPEND`) fills every page.
    private func writeCompactCopy(_ env: OpaquePointer, to copy: String) throws {
        unlink(copy)
        let needed = livePagesBytes(env)
        do {
            var target: OpaquePointer?
            try check(mdb_env_create(&target), "creating the compacting copy", path: path)
            defer { mdb_env_close(target) }
            let fileSize = (try? FileManager.default.attributesOfItem(atPath: (path as NSString).appendingPathComponent("data.mdb"))[.size] as? NSNumber)?.intValue ?? 0
            // The pairs fit in the file they come from; the margin is for the pages each batch's commit copies.
            try check(mdb_env_set_mapsize(target, fileSize + fileSize / 8 + (1 << 20)), "sizing the compacting copy", path: path)
            try check(mdb_env_open(target, copy, UInt32(MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC | MDB_NOTLS), 0o644), "creating the compacting copy", path: path)
            var source: OpaquePointer?
            try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &source), "reading the store to compact it", path: path)
            defer { mdb_txn_abort(source) }
            var cursor: OpaquePointer?
            try check(mdb_cursor_open(source, dbi, &cursor), "reading the store to compact it", path: path)
            defer { mdb_cursor_close(cursor) }
            var key = MDB_val(), value = MDB_val()
            var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
            while rc == MDB_SUCCESS {
                // Transactions of a bounded size: a write transaction keeps its dirty pages in memory.
                var txn: OpaquePointer?
                try check(mdb_txn_begin(target, nil, 0, &txn), "writing the compacting copy", path: path)
                var targetDBI: MDB_dbi = 0
                var written = 0
                do {
                    try check(mdb_dbi_open(txn, nil, 0, &targetDBI), "writing the compacting copy", path: path)
                    while rc == MDB_SUCCESS && written < Self.compactionBatch {
                        try check(mdb_put(txn, targetDBI, &key, &value, UInt32(MDB_APPEND)), "writing the compacting copy", path: path)
                        written += 1
                        rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
                    }
                } catch {
                    mdb_txn_abort(txn)
                    throw error
                }
                try check(mdb_txn_commit(txn), "writing the compacting copy", path: path)
            }
            if rc != MDB_NOTFOUND { try check(rc, "reading the store to compact it", path: path) }
            try check(mdb_env_sync(target, 1), "syncing the compacting copy", path: path)
        } catch {
            unlink(copy)
            // LMDB reports a short write as EIO: on a disk without room for the copy, say so.
            if let needed, let free = freeBytes(), free < needed { throw EngineError.diskFull(path: path) }
            throw error
        }
        do {
            try LMDBFileCheck.validate(copy, storePath: path)
        } catch {
            unlink(copy)
            throw error
        }
    }

    /// The bytes of the pages the main database uses (an upper bound of the copy's size).
    private func livePagesBytes(_ env: OpaquePointer) -> Int? {
        var txn: OpaquePointer?
        guard mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn) == MDB_SUCCESS else { return nil }
        defer { mdb_txn_abort(txn) }
        var stat = MDB_stat()
        guard mdb_stat(txn, dbi, &stat) == MDB_SUCCESS else { return nil }
        return (stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages + 2) * Int(stat.ms_psize)
    }

    /// The bytes an unprivileged process may still write on the store's file system.
    private func freeBytes() -> Int? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// Pairs per write transaction of the compacting copy.
    static let compactionBatch = 50_000

    /// Renames `copy` over `target` and syncs the directory, so the new name survives a power loss.
    private func renameSynced(_ copy: String, to target: String) throws {
        if rename(copy, target) != 0 { throw systemFailure("renaming the compacting copy over data.mdb") }
        let directory = Foundation.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory < 0 { throw systemFailure("opening the store's directory") }
        defer { Foundation.close(directory) }
        if fsync(directory) != 0 { throw systemFailure("syncing the store's directory") }
    }

    private func systemFailure(_ operation: String) -> EngineError {
        let code = errno
        if code == ENOSPC || code == EDQUOT { return .diskFull(path: path) }
        return .engineFailure(engine: "LMDB", code: Int(code), message: String(cString: strerror(code)), operation: operation)
    }
}
