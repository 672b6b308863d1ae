import CLMDB

/// Whether a write transaction's next write could find the map full.
///
/// `MDB_MAP_FULL` leaves a transaction fit only for abort. To finish it anyway the adapter grows
/// the map and replays the transaction's writes into a new one, so those writes must be known
/// (``WriteLog``). Copying every write costs a copy per write that is almost never used, so the log
/// is kept only near the map's end:
///
/// - LMDB takes a page past the used ones only in `mdb_page_alloc`, which fails when the
///   transaction's next page plus the pages wanted reach the map's end (`me_maxpg`). So a write
///   cannot fail that way while the next page is further from the end than the most that write and
///   the commit could take (``isNearEnd(_:writing:)``): then nothing is logged.
/// - Before a write transaction begins, the map is grown (readers of this process drained) when the
///   room left is less than the pages used: a transaction must write about as much as the whole
///   store before it nears the end.
/// - When one does, ``LMDBTransaction`` captures its changes so far (a pass over the store beside
///   the snapshot it started from: paid at most once, by a transaction that large) and logs every
///   later write.
///
/// The transaction's next page is read from LMDB's `MDB_txn` (`mt_next_pgno`, the third field in
/// every 0.9 release). Each transaction first checks that layout by finding its own id in the
/// fourth field (`mt_txnid`); where it does not, every write is logged, as before this type.
struct LMDBMapRoom {
    /// The map's end, in pages (`me_maxpg`).
    let maxPages: Int
    let pageSize: Int
    /// Whether `mt_next_pgno` can be read from this transaction.
    let readable: Bool

    private static let nextPageOffset = 16  // mt_parent, mt_child, then mt_next_pgno
    private static let txnIDOffset = 24     // then mt_txnid
    /// The most pages one put or delete can take besides its value's overflow pages: a copy of every
    /// page on its path (LMDB trees are at most 32 deep, its cursor stack), a split at each level
    /// and a new root, with room to spare.
    private static let pagesPerWrite = 128

    init(txn: OpaquePointer, mapSize: Int, pageSize: Int) {
        self.maxPages = mapSize / pageSize
        self.pageSize = pageSize
        let fields = UnsafeRawPointer(txn)
        readable = fields.load(fromByteOffset: Self.txnIDOffset, as: Int.self) == mdb_txn_id(txn)
            && (1..<maxPages).contains(fields.load(fromByteOffset: Self.nextPageOffset, as: Int.self))
    }

    /// The transaction's next unallocated page.
    @inline(__always)
    static func nextPage(_ txn: OpaquePointer) -> Int {
        UnsafeRawPointer(txn).load(fromByteOffset: nextPageOffset, as: Int.self)
    }

    /// Pages the commit may take: LMDB saves the free list (8 bytes per freed page, at most one per
    /// page in the file) into its own tree.
    @inline(__always)
    static func commitPages(nextPage: Int) -> Int { 256 + nextPage / 256 }

    /// Whether a write of `bytes` (key and value; `nil`: a range clear, which may copy every page)
    /// could reach the map's end before the transaction commits.
    @inline(__always)
    func isNearEnd(_ txn: OpaquePointer, writing bytes: Int?) -> Bool {
        let next = Self.nextPage(txn)
        let write = bytes.map { Self.pagesPerWrite + $0 / (pageSize - 16) + 2 } ?? Self.pagesPerWrite + next
        return next + write + Self.commitPages(nextPage: next) >= maxPages
    }

    /// The smallest map, in bytes, a store of `usedPages` should have before a write begins: twice
    /// the pages used plus what one write and the commit take.
    static func minimumMapSize(pageSize: Int, usedPages: Int) -> Int {
        (2 * usedPages + pagesPerWrite + commitPages(nextPage: usedPages)) * pageSize
    }
}
