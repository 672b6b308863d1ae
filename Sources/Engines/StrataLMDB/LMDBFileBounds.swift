import CLMDB
import Foundation
import StrataEngine
import Synchronization

/// Keeps values in pages a truncated `data.mdb` no longer holds from being touched.
///
/// LMDB lends a value as a pointer into its map. A value larger than half a page lives in
/// overflow pages that only leaf pages point to, which ``LMDBFileCheck`` does not read (that
/// would read the whole file). If the file was cut inside such pages, touching the value faults
/// with SIGBUS; LMDB itself touches the first overflow page when the value is replaced or
/// deleted (it reads how many pages to free).
///
/// Every page a snapshot references lies below the newest meta page's `mm_last_pg`, so a file
/// holding all those pages cannot fault. A healthy file may be shorter (pages freed in the
/// transaction that allocated them are never written), so shortness alone is no refusal.
/// Instead, when the file is short at open:
/// - every value lent is checked against the end of the file: a value reaching past it throws
///   ``EngineError/corrupt(path:detail:)`` (the size is read again first: writers grow the file);
/// - a write checks the value it replaces or deletes before LMDB reads its overflow pages;
/// - the free list, which LMDB reads by itself when it allocates pages, is checked at open.
///
/// A file of full length pays one comparison per value. The check needs the map's address,
/// read from `/proc/self/maps` (Linux); where that is missing, short files are refused at open.
final class LMDBFileBounds: Sendable {
    /// Whether the file was short at open, so values and writes are checked.
    let active: Bool
    /// The address just past the file's last byte in the map; `UInt.max` when not active.
    private let fileEnd: Atomic<UInt>
    private let mapStart: Atomic<UInt>
    private let mapEnd: Atomic<UInt>
    private let file: String
    private let storePath: String

    /// Bounds for the environment just opened: `active` when `data.mdb` is shorter than the
    /// newest meta page's pages.
    init(env: OpaquePointer, storePath: String) throws(EngineError) {
        self.storePath = storePath
        file = (storePath as NSString).appendingPathComponent("data.mdb")
        var info = MDB_envinfo(), stat = MDB_stat()
        mdb_env_info(env, &info)
        mdb_env_stat(env, &stat)
        // A damaged meta page can count any number of pages (found by the `files` fuzz target).
        let (count, pastEnd) = UInt(bitPattern: info.me_last_pgno).addingReportingOverflow(1)
        let (pages, tooMany) = count.multipliedReportingOverflow(by: UInt(stat.ms_psize))
        guard !pastEnd, !tooMany, pages <= UInt(Int.max / 4) else {  // room for the map-growth arithmetic
            throw .corrupt(path: storePath, detail: "data.mdb's meta page counts \(UInt(bitPattern: info.me_last_pgno)) pages (damaged)")
        }
        let size = Self.fileSize(file)
        active = size < pages
        fileEnd = Atomic(UInt.max)
        mapStart = Atomic(0)
        mapEnd = Atomic(0)
        if active { try locateMap(mapSize: info.me_mapsize) }
    }

    /// No checks: what a storage holds until its environment is open.
    static let none = LMDBFileBounds()

    private init() {
        active = false
        fileEnd = Atomic(UInt.max)
        mapStart = Atomic(0)
        mapEnd = Atomic(0)
        file = ""
        storePath = ""
    }

    /// Throws unless `value` ends inside the file, when it points into the map.
    @inline(__always)
    func requireInFile(_ value: MDB_val) throws(EngineError) {
        let start = UInt(bitPattern: value.mv_data)
        let end = start &+ UInt(value.mv_size)
        if _fastPath(end <= fileEnd.load(ordering: .relaxed)) { return }
        try checkPastKnownEnd(start: start, end: end)
    }

    @inline(never)
    private func checkPastKnownEnd(start: UInt, end: UInt) throws(EngineError) {
        let base = mapStart.load(ordering: .relaxed)
        // Not in the map: a page this write transaction changed lives on the heap.
        guard start >= base, start < mapEnd.load(ordering: .relaxed) else { return }
        let size = Self.fileSize(file)
        fileEnd.store(base + size, ordering: .relaxed)
        if end <= base + size { return }
        throw .corrupt(path: storePath, detail: "a value of \(end - start) bytes at offset \(start - base) of data.mdb reaches past the file's end (\(size) bytes): the file was truncated")
    }

    /// Reads the map's address again after LMDB mapped the file anew (a map size change).
    func remapped(env: OpaquePointer) throws(EngineError) {
        guard active else { return }
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        try locateMap(mapSize: info.me_mapsize)
    }

    /// Checks every free-list record at open: LMDB reads them without Strata's help when a
    /// write allocates pages, and a large free list is stored in overflow pages.
    func checkFreeList(_ env: OpaquePointer) throws(EngineError) {
        guard active else { return }
        // LMDB opens a cursor on the free list (FREE_DBI, 0) in a read-only transaction only.
        var txn: OpaquePointer?, cursor: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "reading the free list", path: storePath)
        defer { mdb_txn_abort(txn) }
        try check(mdb_cursor_open(txn, 0, &cursor), "reading the free list", path: storePath)
        defer { mdb_cursor_close(cursor) }
        var k = MDB_val(), v = MDB_val()
        var rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
        while rc == MDB_SUCCESS {
            try requireInFile(v)
            rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { try check(rc, "reading the free list", path: storePath) }
    }

    private func locateMap(mapSize: Int) throws(EngineError) {
        guard let start = Self.mapAddress(of: file) else {
            throw .corrupt(path: storePath, detail: "data.mdb is shorter than the pages its meta page counts, and its map cannot be located to check values against the file's end (truncated?)")
        }
        mapStart.store(start, ordering: .relaxed)
        mapEnd.store(start + UInt(mapSize), ordering: .relaxed)
        fileEnd.store(start + Self.fileSize(file), ordering: .relaxed)
    }

    private static func fileSize(_ file: String) -> UInt {
        var info = stat()
        return stat(file, &info) == 0 ? UInt(info.st_size) : 0
    }

    /// The start of this process's mapping of `file` at offset 0, from `/proc/self/maps`
    /// ("start-end perms offset dev inode path"), matched by inode.
    ///
    /// Read to its end: `String(contentsOfFile:)` stops after the first read of a file whose size
    /// is 0, as `/proc` files' is, and so saw only the first 4 KiB of the list (about 40
    /// mappings): in a process with more (a ThreadSanitizer build has hundreds), the map was not
    /// found and a short file was refused.
    static func mapAddress(of file: String) -> UInt? {
        var info = stat()
        guard stat(file, &info) == 0, let handle = FileHandle(forReadingAtPath: "/proc/self/maps") else { return nil }
        defer { try? handle.close() }
        guard let bytes = try? handle.readToEnd() else { return nil }
        let maps = String(decoding: bytes, as: UTF8.self)
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, line.hasSuffix("/data.mdb"), UInt64(fields[4]) == UInt64(info.st_ino), UInt64(fields[2], radix: 16) == 0,
                  let range = fields.first?.split(separator: "-").first, let start = UInt(range, radix: 16) else { continue }
            return start
        }
        return nil
    }
}
