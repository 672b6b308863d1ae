import Foundation
import StrataEngine

/// Checks an existing `data.mdb` before LMDB maps it.
///
/// LMDB maps the data file and reads pages through the map; a page past the end of a truncated
/// file faults with SIGBUS and kills the process. So the meta pages are read with plain `read`
/// first: the file must hold both meta pages, and the root pages of the newest meta's two trees.
///
/// The file may legitimately be shorter than `(last_pgno + 1) * page_size`: pages freed within
/// the transaction that allocated them are never written (LMDB's own comment on `mm_last_pg`),
/// so that is not a test of truncation. Truncation past the roots is caught; a file cut between
/// other pages is not detected here (walking the trees would read the whole file).
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
        for offset in [freeRootOffset, mainRootOffset] {
            let root = newest.loadLE(UInt64.self, at: offset)
            if root == noPage { continue }
            let (end, overflow) = (root &+ 1).multipliedReportingOverflow(by: pageSize)
            guard !overflow, size >= end else {
                throw .corrupt(path: storePath, detail: "data.mdb is \(size) bytes but its tree root is page \(root) (truncated)")
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
