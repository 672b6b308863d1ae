import Foundation
import StrataEngine

/// Checks an existing `data.mdb` before LMDB maps it.
///
/// LMDB maps the data file and reads pages through the map; a page past the end of a truncated
/// file faults with SIGBUS and kills the process. So the meta pages are read with plain `read`
/// first: the file must be a whole number of pages holding both meta pages, and every page that
/// the branch pages of the newest meta's two trees point to.
///
/// The file may legitimately be shorter than `(last_pgno + 1) * page_size`: pages freed within
/// the transaction that allocated them are never written (LMDB's own comment on `mm_last_pg`),
/// so that is not a test of truncation. Not checked: the overflow pages of values larger than a
/// page, which only leaf pages point to (reading every leaf would read the whole file).
enum LMDBFileCheck {
    // Offsets inside a meta page (64-bit LMDB 0.9): a 16-byte page header, then MDB_meta with
    // mm_magic, mm_version, mm_address, mm_mapsize, mm_dbs[2] (48 bytes each), mm_last_pg, mm_txnid.
    private static let magicOffset = 16          // mm_magic, 0xBEEFC0DE
    private static let pageSizeOffset = 40       // mm_dbs[FREE_DBI].md_pad holds the page size
    private static let freeRootOffset = 80       // mm_dbs[FREE_DBI].md_root
    private static let mainRootOffset = 128      // mm_dbs[MAIN_DBI].md_root
    private static let txnIDOffset = 144         // mm_txnid
    private static let magic: UInt32 = 0xBEEF_C0DE
    private static let noPage = UInt64.max       // P_INVALID: an empty tree

    static func validate(_ file: String, storePath: String) throws(EngineError) {
        guard let handle = FileHandle(forReadingAtPath: file) else {
            throw .permissionDenied(path: storePath, detail: "cannot read \(file)")
        }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        try? handle.seek(toOffset: 0)
        guard let first = try? handle.read(upToCount: 152), first.count == 152 else {
            throw .notAStore(path: storePath, reason: "data.mdb is \(size) bytes, too short for an LMDB meta page")
        }
        guard first.loadLE(UInt32.self, at: magicOffset) == magic else {
            throw .notAStore(path: storePath, reason: "data.mdb does not start with an LMDB meta page")
        }
        let pageSize = UInt64(first.loadLE(UInt32.self, at: pageSizeOffset))
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            throw .corrupt(path: storePath, detail: "data.mdb declares a page size of \(pageSize)")
        }
        guard size >= 2 * pageSize else {
            throw .corrupt(path: storePath, detail: "data.mdb is \(size) bytes, shorter than its two meta pages (truncated?)")
        }
        try? handle.seek(toOffset: pageSize)
        guard let second = try? handle.read(upToCount: 152), second.count == 152 else {
            throw .corrupt(path: storePath, detail: "cannot read the second meta page")
        }
        // LMDB uses the meta page with the newer transaction id.
        let newest = second.loadLE(UInt64.self, at: txnIDOffset) > first.loadLE(UInt64.self, at: txnIDOffset) ? second : first
        // LMDB writes whole pages: a size that is not a multiple of the page size was cut.
        guard size % pageSize == 0 else {
            throw .corrupt(path: storePath, detail: "data.mdb is \(size) bytes, not a whole number of \(pageSize)-byte pages (truncated)")
        }
        let pages = size / pageSize
        for offset in [freeRootOffset, mainRootOffset] {
            let root = newest.loadLE(UInt64.self, at: offset)
            if root == noPage { continue }
            try walkBranches(from: root, pages: pages, pageSize: pageSize, handle: handle, storePath: storePath)
        }
    }
}

extension LMDBFileCheck {
    // Page layout (LMDB 0.9, 64-bit): a 16-byte header (mp_pgno, mp_pad, mp_flags, mp_lower,
    // mp_upper), then mp_ptrs: 2-byte offsets of the nodes. A branch node starts with its child
    // page number in 48 bits (mn_lo, mn_hi, mn_flags).
    private static let branchFlag: UInt16 = 0x01
    private static let headerSize = 16

    /// Visits every branch page reachable from `root` and checks that each page it points to
    /// (branches and leaves) lies inside the file. Leaves are not read: large values' overflow
    /// pages are not checked, which keeps the cost at about one page in a hundred.
    fileprivate static func walkBranches(from root: UInt64, pages: UInt64, pageSize: UInt64, handle: FileHandle, storePath: String) throws(EngineError) {
        var pending = [root]
        var visited = 0
        while let page = pending.popLast() {
            guard page < pages else {
                throw .corrupt(path: storePath, detail: "data.mdb is \(pages) pages long but its trees reach page \(page) (truncated)")
            }
            visited += 1
            if visited > Int(pages) { throw .corrupt(path: storePath, detail: "data.mdb's trees contain a cycle") }
            try? handle.seek(toOffset: page * pageSize)
            guard let data = try? handle.read(upToCount: Int(pageSize)), data.count == Int(pageSize) else {
                throw .corrupt(path: storePath, detail: "cannot read page \(page) of data.mdb")
            }
            let flags = data.loadLE(UInt16.self, at: 10)
            guard flags & branchFlag != 0 else { continue }  // a leaf: inside the file, not read further
            let lower = Int(data.loadLE(UInt16.self, at: 12))
            guard lower >= headerSize, lower <= Int(pageSize) else {
                throw .corrupt(path: storePath, detail: "page \(page) of data.mdb has a bad header")
            }
            for slot in 0..<((lower - headerSize) / 2) {
                let node = Int(data.loadLE(UInt16.self, at: headerSize + 2 * slot))
                guard node + 6 <= Int(pageSize) else { throw .corrupt(path: storePath, detail: "page \(page) of data.mdb has a bad node") }
                let child = UInt64(data.loadLE(UInt16.self, at: node)) | UInt64(data.loadLE(UInt16.self, at: node + 2)) << 16
                    | UInt64(data.loadLE(UInt16.self, at: node + 4)) << 32
                pending.append(child)
            }
        }
    }
}

extension Data {
    fileprivate func loadLE<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        var value: T = 0
        Swift.withUnsafeMutableBytes(of: &value) { dest in
            self.copyBytes(to: dest.bindMemory(to: UInt8.self), from: (startIndex + offset)..<(startIndex + offset + MemoryLayout<T>.size))
        }
        return T(littleEndian: value)
    }
}
