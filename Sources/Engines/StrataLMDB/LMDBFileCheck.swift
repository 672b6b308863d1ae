import Foundation
import StrataEngine

/// Checks an existing `data.mdb` before LMDB maps it.
///
/// LMDB maps the data file and reads pages through the map; a page past the end of a truncated
/// file faults with SIGBUS and kills the process. So the meta pages are read with plain `read`
/// first: the file must be a whole number of pages holding both meta pages, the newest meta must
/// sit on the page LMDB reads it from, and every page that the branch pages of its two trees
/// point to must be in the file (none of them a meta page).
///
/// The file may legitimately be shorter than `(last_pgno + 1) * page_size`: pages freed within
/// the transaction that allocated them are never written (LMDB's own comment on `mm_last_pg`),
/// so that is not a test of truncation. Not checked: the overflow pages of values larger than a
/// page, which only leaf pages point to (reading every leaf would read the whole file).
enum LMDBFileCheck {
    // Offsets inside a meta page (64-bit LMDB 0.9): a 16-byte page header, then MDB_meta with
    // mm_magic, mm_version, mm_address, mm_mapsize, mm_dbs[2] (48 bytes each), mm_last_pg, mm_txnid.
    private static let magicOffset = 16          // mm_magic, 0xBEEFC0DE
    private static let versionOffset = 20        // mm_version
    private static let pageSizeOffset = 40       // mm_dbs[FREE_DBI].md_pad holds the page size
    private static let freeDepthOffset = 46      // mm_dbs[FREE_DBI].md_depth
    private static let mainDepthOffset = 94      // mm_dbs[MAIN_DBI].md_depth
    private static let freeRootOffset = 80       // mm_dbs[FREE_DBI].md_root
    private static let mainRootOffset = 128      // mm_dbs[MAIN_DBI].md_root
    private static let txnIDOffset = 144         // mm_txnid
    private static let magic: UInt32 = 0xBEEF_C0DE
    private static let noPage = UInt64.max       // P_INVALID: an empty tree

    static func validate(_ file: String, storePath: String) throws(EngineError) {
        // Another process may commit while this reads (LMDB stores are shared): a problem counts
        // only if the newest meta page did not change while it was found.
        var attempt = 0
        while true {
            attempt += 1
            let (problem, txnID) = try inspect(file, storePath: storePath)
            guard let problem else { return }
            if attempt >= 3 || (try? inspect(file, storePath: storePath))?.1 == txnID { throw problem }
        }
    }

    /// One look at the file: the problem found, if any, and the newest meta's transaction id.
    private static func inspect(_ file: String, storePath: String) throws(EngineError) -> (EngineError?, UInt64) {
        guard let handle = FileHandle(forReadingAtPath: file) else {
            throw .permissionDenied(path: storePath, detail: "cannot read \(file)")
        }
        defer { try? handle.close() }
        guard let first = try? handle.read(upToCount: 152), first.count == 152 else {
            return (.notAStore(path: storePath, reason: "data.mdb is too short for an LMDB meta page"), 0)
        }
        guard first.loadLE(UInt32.self, at: magicOffset) == magic else {
            return (.notAStore(path: storePath, reason: "data.mdb does not start with an LMDB meta page"), 0)
        }
        let pageSize = UInt64(first.loadLE(UInt32.self, at: pageSizeOffset))
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            return (.corrupt(path: storePath, detail: "data.mdb declares a page size of \(pageSize)"), 0)
        }
        try? handle.seek(toOffset: pageSize)
        guard let second = try? handle.read(upToCount: 152), second.count == 152 else {
            return (.corrupt(path: storePath, detail: "data.mdb is shorter than its two meta pages (truncated?)"), 0)
        }
        // LMDB takes the page size from the newer meta page and finds the other one by it: both
        // must be meta pages declaring the same size (a damaged second meta made LMDB read past
        // the file and die of SIGBUS inside mdb_env_open; found by the `files` fuzz target).
        guard second.loadLE(UInt32.self, at: magicOffset) == magic,
              second.loadLE(UInt32.self, at: versionOffset) == first.loadLE(UInt32.self, at: versionOffset),
              UInt64(second.loadLE(UInt32.self, at: pageSizeOffset)) == pageSize
        else {
            return (.corrupt(path: storePath, detail: "data.mdb's second meta page is damaged (its magic, version or page size)"), 0)
        }
        // LMDB opens with the meta page holding the newer transaction id, but its transactions
        // read the trees of meta page `id & 1` (commits alternate between the two; both start at
        // 0). A damaged id of the other parity made this check walk one meta's trees while LMDB
        // read the other's, past the end of a cut file (SIGBUS; found by the `files` fuzz target).
        let secondIsNewer = second.loadLE(UInt64.self, at: txnIDOffset) > first.loadLE(UInt64.self, at: txnIDOffset)
        let newest = secondIsNewer ? second : first
        let txnID = newest.loadLE(UInt64.self, at: txnIDOffset)
        guard txnID == 0 || (txnID & 1 == 1) == secondIsNewer else {
            return (.corrupt(path: storePath, detail: "data.mdb's meta page \(secondIsNewer ? 1 : 0) holds transaction \(txnID), which LMDB reads from meta page \(txnID & 1) (damaged)"), txnID)
        }
        // The size after the metas: pages a writer appended before its meta are then counted.
        let size = (try? handle.seekToEnd()) ?? 0
        // LMDB writes whole pages: a size that is not a multiple of the page size was cut.
        guard size % pageSize == 0 else {
            return (.corrupt(path: storePath, detail: "data.mdb is \(size) bytes, not a whole number of \(pageSize)-byte pages (truncated)"), txnID)
        }
        for (rootOffset, depthOffset) in [(freeRootOffset, freeDepthOffset), (mainRootOffset, mainDepthOffset)] {
            let root = newest.loadLE(UInt64.self, at: rootOffset)
            if root == noPage { continue }
            do {
                try walkBranches(from: root, depth: Int(newest.loadLE(UInt16.self, at: depthOffset)), pages: size / pageSize,
                                 pageSize: pageSize, handle: handle, storePath: storePath)
            } catch {
                return (error, txnID)
            }
        }
        return (nil, txnID)
    }
}

extension LMDBFileCheck {
    // Page layout (LMDB 0.9, 64-bit): a 16-byte header (mp_pgno, mp_pad, mp_flags, mp_lower,
    // mp_upper), then mp_ptrs: 2-byte offsets of the nodes. A branch node starts with its child
    // page number in 48 bits (mn_lo, mn_hi, mn_flags).
    private static let branchFlag: UInt16 = 0x01  // P_BRANCH
    private static let leafFlag: UInt16 = 0x02    // P_LEAF
    private static let headerSize = 16

    /// Reads every branch page of a tree of `depth` levels and checks that each page it points to
    /// lies inside the file. Leaves (the last level) are bound-checked, and only one is read:
    /// large values' overflow pages are not checked, which keeps the cost at about one page in a
    /// hundred.
    ///
    /// LMDB descends by the pages' flags, not by the meta's depth: a depth that is too small
    /// would leave branch pages unread here that LMDB follows (SIGBUS past a cut file; found by
    /// the `files` fuzz target). Every leaf of a well-formed LMDB tree is at the same depth, so
    /// reading one leaf, and every page above the leaves, checks the depth: a leaf above it or a
    /// branch at it is refused. (A damaged root pointing at an old page whose subtree was partly
    /// reused could still pass: only reading every leaf would tell.)
    fileprivate static func walkBranches(from root: UInt64, depth: Int, pages: UInt64, pageSize: UInt64,
                                         handle: FileHandle, storePath: String) throws(EngineError) {
        guard depth >= 1 else {
            throw .corrupt(path: storePath, detail: "data.mdb's meta page gives a tree a root page but a depth of 0 (damaged)")
        }
        var pending = [(page: root, level: 1)]
        var visited = 0
        var leafRead = false
        while let (page, level) = pending.popLast() {
            guard page < pages else {
                throw .corrupt(path: storePath, detail: "data.mdb is \(pages) pages long but its trees reach page \(page) (truncated)")
            }
            // Pages 0 and 1 are the meta pages: a tree reaching one is damaged (LMDB would stop
            // the process on an assertion; found by the `files` fuzz target).
            guard page >= 2 else {
                throw .corrupt(path: storePath, detail: "data.mdb's trees reach page \(page), a meta page (damaged)")
            }
            if level >= depth {  // a leaf: inside the file, and only the first one read
                if leafRead { continue }
                leafRead = true
                guard try read(page: page, pageSize: pageSize, handle: handle, storePath: storePath).loadLE(UInt16.self, at: 10) & leafFlag != 0 else {
                    throw .corrupt(path: storePath, detail: "page \(page) of data.mdb should be a leaf page: its tree is deeper than its meta page says (damaged)")
                }
                continue
            }
            visited += 1
            if visited > Int(pages) { throw .corrupt(path: storePath, detail: "data.mdb's trees contain a cycle") }
            let data = try read(page: page, pageSize: pageSize, handle: handle, storePath: storePath)
            guard data.loadLE(UInt16.self, at: 10) & branchFlag != 0 else {
                throw .corrupt(path: storePath, detail: "page \(page) of data.mdb should be a branch page")
            }
            let lower = Int(data.loadLE(UInt16.self, at: 12))
            guard lower >= headerSize, lower <= Int(pageSize) else {
                throw .corrupt(path: storePath, detail: "page \(page) of data.mdb has a bad header")
            }
            for slot in 0..<((lower - headerSize) / 2) {
                let node = Int(data.loadLE(UInt16.self, at: headerSize + 2 * slot))
                guard node + 6 <= Int(pageSize) else { throw .corrupt(path: storePath, detail: "page \(page) of data.mdb has a bad node") }
                let child = UInt64(data.loadLE(UInt16.self, at: node)) | UInt64(data.loadLE(UInt16.self, at: node + 2)) << 16
                    | UInt64(data.loadLE(UInt16.self, at: node + 4)) << 32
                pending.append((child, level + 1))
            }
        }
    }

    private static func read(page: UInt64, pageSize: UInt64, handle: FileHandle, storePath: String) throws(EngineError) -> Data {
        try? handle.seek(toOffset: page * pageSize)
        guard let data = try? handle.read(upToCount: Int(pageSize)), data.count == Int(pageSize) else {
            throw .corrupt(path: storePath, detail: "cannot read page \(page) of data.mdb")
        }
        return data
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
