import Foundation
import StrataEngine
import StrataKeyCodec

/// The change feed as stored (RecordFormat.md, "Change feed"): its settings under
/// `00 enc("changefeed")`, and each committed transaction's record changes in chunks under
/// `00 enc("changes", feed, version, first)`, written by that transaction itself. So the feed
/// holds exactly the committed transactions, in commit order, whatever crashes: a transaction
/// that did not commit left no chunk, and one that did left all of its chunks.
///
/// Versions number the feed's transactions 1, 2, 3…: a writer reads the last chunk's version
/// under the engine's writer lock (writers are serialized, also across processes) and takes the
/// next. Trimming never removes the newest transaction, so its version is always there to read.
@usableFromInline
enum ChangeLog {
    /// The store-wide feature a store with the feed on lists: a build that does not know the feed
    /// would write records without their changes, so it refuses the store.
    static let feature = "changefeed"
    /// The settings' layout version.
    static let layout: UInt32 = 1
    /// A chunk holds changes up to about this many bytes (less when the engine limits values).
    static let chunkBytes = 32 * 1024

    /// What the settings key holds.
    @usableFromInline
    struct Settings: Equatable, Sendable {
        /// This feed's identity, drawn when the feed is turned on: chunks and tokens carry it, so
        /// a feed turned off and on again never mixes with, nor resumes, the one before.
        var feed: Int
        /// Milliseconds a transaction is kept; 0 for no age limit.
        var maxAgeMilliseconds: UInt64
        /// Transactions kept; 0 for no count limit.
        var maxCommits: UInt64

        var retention: ChangeFeedRetention {
            ChangeFeedRetention(maxAge: maxAgeMilliseconds == 0 ? nil : .milliseconds(Int64(clamping: maxAgeMilliseconds)),
                                maxCommits: maxCommits == 0 ? nil : Int(clamping: maxCommits))
        }

        func encoded() -> [UInt8] {
            var w = FieldWriter()
            w.write(ChangeLog.layout)
            w.write(feed)
            w.write(maxAgeMilliseconds)
            w.write(maxCommits)
            return w.bytes
        }

        init(feed: Int, retention: ChangeFeedRetention) {
            self.feed = feed
            maxAgeMilliseconds = retention.maxAge.map { UInt64(max(1, $0.wholeMilliseconds)) } ?? 0
            maxCommits = retention.maxCommits.map { UInt64(max(1, $0)) } ?? 0
        }

        init(decoding bytes: [UInt8]) throws {
            do {
                self = try bytes.withUnsafeBytes { raw throws(FieldDecodingError) in
                    var r = FieldReader(raw)
                    let layout = try r.read(UInt32.self)
                    guard layout == ChangeLog.layout else { throw FieldDecodingError(offset: 0, reason: "layout \(layout); this build reads \(ChangeLog.layout)") }
                    var settings = Settings(feed: try r.read(Int.self), retention: ChangeFeedRetention())
                    settings.maxAgeMilliseconds = try r.read(UInt64.self)
                    settings.maxCommits = try r.read(UInt64.self)
                    try r.finish()
                    return settings
                }
            } catch {
                throw RecordError.corruptChangeFeed(detail: "its settings are unreadable: \(error)")
            }
        }
    }

    /// The feed's settings, or `nil` when it is off.
    static func settings(in tx: any KeyValueReader) throws -> Settings? {
        try tx.get(SystemKey.changeFeed).map(Settings.init(decoding:))
    }

    // MARK: Chunks

    /// Where feed `feed`'s chunks are.
    static func range(feed: Int) -> KeyRange { .components(prefix: SystemKey.changeLog + KeyCodec.encode(feed)) }

    /// Where the chunks of feeds other than `feed` are (of every feed when `nil`).
    static func staleRanges(keeping feed: Int?) -> [KeyRange] {
        let all = KeyRange.components(prefix: SystemKey.changeLog)
        guard let feed else { return [all] }
        let current = SystemKey.changeLog + KeyCodec.encode(feed)  // its chunks are [current, current + FF)
        return [KeyRange(lower: all.lower, upper: .exclusive(current)), KeyRange(lower: .inclusive(current + [0xFF]), upper: all.upper)]
    }

    static func chunkKey(feed: Int, version: UInt64, first: Int) -> [UInt8] {
        SystemKey.changeLog + KeyCodec.encode(feed, Int(version), first)
    }

    /// The version and first change of a chunk key of feed `feed`.
    static func position(ofChunk key: UnsafeRawBufferPointer, feed: Int) throws -> (version: UInt64, first: Int) {
        guard key.starts(with: SystemKey.changeLog) else {
            throw RecordError.corruptChangeFeed(detail: "\(StoredValue.hex(key)) is not a chunk key")
        }
        var reader = KeyReader(UnsafeRawBufferPointer(rebasing: key[SystemKey.changeLog.count...]))
        do {
            guard try reader.read(Int.self) == feed else { throw FieldDecodingError(offset: 0, reason: "another feed's chunk") }
            let version = try reader.read(Int.self), first = try reader.read(Int.self)
            guard version > 0, first >= 0, reader.isAtEnd else { throw FieldDecodingError(offset: reader.offset, reason: "not a chunk position") }
            return (UInt64(version), first)
        } catch {
            throw RecordError.corruptChangeFeed(detail: "a chunk key is unreadable (\(StoredValue.hex(key))): \(error)")
        }
    }

    /// One stored chunk: when its transaction committed, how many changes the transaction made,
    /// and some of them, from its `first`.
    struct Chunk {
        var version: UInt64
        var first: Int
        var committedAt: UInt64
        /// The identity of the ``Store`` instance that wrote it.
        var writer: Int
        var total: Int
        var changes: [RecordChange]
    }

    /// A chunk's value holding `changes` (a transaction's writes go through
    /// ``ChangeLogChunks`` instead, which encodes each change as it is made; this is for tests
    /// and the fuzz targets, which build chunks of their own).
    static func encodeChunk(key: [UInt8], committedAt: UInt64, writer: Int, total: Int, _ changes: ArraySlice<RecordChange>) -> [UInt8] {
        var keyspaces: [String] = []
        var encoded = FieldWriter()
        for change in changes {
            let position = keyspaces.firstIndex(of: change.keyspace) ?? {
                keyspaces.append(change.keyspace)
                return keyspaces.count - 1
            }()
            _ = change.key.bytes.withUnsafeBytes { ChangeLogChunks.encodeChange(into: &encoded, keyspace: position, change.kind, key: $0) }
        }
        return ChangeLogChunks.value(key: key, committedAt: committedAt, writer: writer, total: total, keyspaces: keyspaces,
                                     changes: changes.count, encoded: encoded.bytes[...])
    }

    /// Decodes a chunk (`changesToo: false` stops after its header: trimming needs no more; nor
    /// does a chunk written by `unlessWriter`, whose changes are left out).
    static func decodeChunk(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, feed: Int, changesToo: Bool = true,
                            unlessWriter: Int? = nil) throws -> Chunk {
        let (version, first) = try position(ofChunk: key, feed: feed)
        do {
            let body = try RecordChecksum.body(ofKey: key, value: value)
            var r = FieldReader(body)
            // The transaction's change count, not this chunk's: not bounded by the bytes left (a
            // large transaction's last chunk holds fewer bytes than the transaction has changes; a
            // count read as bounded refused it as damaged: found by the `entries` fuzz target).
            let committedAt = try r.read(UInt64.self), writer = try r.read(Int.self), total = try r.readVarint()
            guard total <= UInt64(Int.max) else { throw FieldDecodingError(offset: r.offset, reason: "a transaction of \(total) changes") }
            var chunk = Chunk(version: version, first: first, committedAt: committedAt, writer: writer, total: Int(total), changes: [])
            guard changesToo && writer != unlessWriter else { return chunk }
            let keyspaces = try r.read([String].self)
            let count = try r.readCount()
            // Compared without adding: a damaged key's `first` can be near Int.max (found by the
            // `entries` fuzz target, as the keyspace position's conversion below).
            guard first <= chunk.total, count <= chunk.total - first else {
                throw FieldDecodingError(offset: r.offset, reason: "\(count) changes from \(first), of \(chunk.total)")
            }
            chunk.changes.reserveCapacity(count)
            for _ in 0..<count {
                let keyspace = try r.readVarint(), kind = RecordChange.Kind(code: try r.read(UInt8.self))
                guard keyspace < UInt64(keyspaces.count), let kind else { throw FieldDecodingError(offset: r.offset, reason: "a change names no keyspace or kind") }
                chunk.changes.append(RecordChange(keyspace: keyspaces[Int(keyspace)], key: EncodedIndexKey(bytes: Array(try r.readBytes())), kind: kind))
            }
            try r.finish()
            return chunk
        } catch let mismatch as RecordChecksum.Mismatch {
            throw RecordError.corruptChangeFeed(detail: "the chunk of version \(version) from change \(first): \(mismatch.detail)")
        } catch {
            throw RecordError.corruptChangeFeed(detail: "the chunk of version \(version) from change \(first) is unreadable: \(error)")
        }
    }

    /// The newest version of feed `feed` (0 when it has none).
    static func lastVersion(feed: Int, in tx: any KeyValueReader) throws -> UInt64 {
        try edgeVersion(feed: feed, newest: true, in: tx) ?? 0
    }

    /// The position of the feed's end (what commits from now on follow), or `nil` when the feed is off.
    static func end(in tx: any KeyValueReader) throws -> ChangeToken? {
        guard let settings = try settings(in: tx) else { return nil }
        return ChangeToken(feed: settings.feed, version: try lastVersion(feed: settings.feed, in: tx) + 1, next: 0)
    }

    /// The oldest version feed `feed` still holds (`nil` when it has none).
    static func firstVersion(feed: Int, in tx: any KeyValueReader) throws -> UInt64? {
        try edgeVersion(feed: feed, newest: false, in: tx)
    }

    /// The version of feed `feed`'s newest or oldest chunk (`nil` when it has none).
    private static func edgeVersion(feed: Int, newest: Bool, in tx: any KeyValueReader) throws -> UInt64? {
        var found: Result<UInt64, any Error>?
        try tx.scan(range(feed: feed), reverse: newest, limit: 1) { key, _ in
            found = Result { try position(ofChunk: key, feed: feed).version }
            return false
        }
        return try found?.get()
    }

    static func milliseconds(_ date: Date) -> UInt64 { UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded(.down))) }

    // MARK: Writing and trimming

    /// How many expired chunks a write transaction looks for as it begins
    /// (``ChangeLogChunks/expired``): what a transaction of one chunk trims (2 × 1 + 16), so
    /// that only larger transactions look again as they end.
    static let expiredAhead = 18

    /// The keys of up to `budget` chunks, oldest first, of transactions the retention no longer
    /// keeps; never the newest transaction's (`newest`).
    static func expired(_ settings: Settings, newest: UInt64, now: UInt64, budget: Int, in tx: any KeyValueReader) throws -> [[UInt8]] {
        guard settings.maxAgeMilliseconds != 0 || settings.maxCommits != 0 else { return [] }
        var expired: [[UInt8]] = []
        var failure: (any Error)?
        try tx.scan(range(feed: settings.feed), reverse: false, limit: nil) { key, value in
            do {
                let (version, _) = try position(ofChunk: key, feed: settings.feed)
                guard version < newest else { return false }
                var old = settings.maxCommits != 0 && newest - version >= settings.maxCommits
                if !old && settings.maxAgeMilliseconds != 0 {
                    // An unreadable chunk is not judged by its age: it is kept, for a reader to
                    // report, rather than stop every write.
                    guard let chunk = try? decodeChunk(key: key, value: value, feed: settings.feed, changesToo: false) else { return false }
                    old = now >= chunk.committedAt && now - chunk.committedAt > settings.maxAgeMilliseconds
                }
                guard old, expired.count < budget else { return false }
                expired.append(Array(key))
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        return expired
    }

    // MARK: Reading

    /// The changes after `token` (from the oldest kept when `nil`), at most `limit` of them;
    /// without the transactions the writer `skipped` made (a store's own), which are stepped over.
    static func read(since token: ChangeToken?, limit: Int, skipping skipped: Int? = nil, in tx: any KeyValueReader) throws -> ChangeFeedPage {
        guard let settings = try settings(in: tx) else { throw RecordError.changeFeedOff }
        let last = try lastVersion(feed: settings.feed, in: tx)
        let first = try firstVersion(feed: settings.feed, in: tx) ?? last + 1
        var position = (version: first, next: 0)
        if let token {
            guard token.layout == ChangeToken.layout else {
                throw RecordError.invalidChangeToken(detail: "it has layout \(token.layout); this build reads \(ChangeToken.layout)")
            }
            guard token.feed == settings.feed else {
                throw RecordError.historyTruncated(detail: "the token was made by another change feed (another store's, or this store's before its feed was turned off)")
            }
            guard token.version >= first else {
                throw RecordError.historyTruncated(detail: "the token resumes at version \(token.version), but the feed keeps versions \(first) to \(last) only")
            }
            guard token.version <= last + 1 else {
                throw RecordError.invalidChangeToken(detail: "it resumes at version \(token.version), after the feed's last, \(last) (a store restored from an older copy?)")
            }
            position = (token.version, token.next)
        }
        var entries: [ChangeFeedEntry] = []
        let wanted = max(1, limit)
        var failure: (any Error)?
        var full = false  // the page filled before the feed's end
        let start = chunkKey(feed: settings.feed, version: position.version, first: 0)
        var range = range(feed: settings.feed)
        range.lower = .inclusive(start)
        try tx.scan(range, reverse: false, limit: nil) { key, value in
            guard entries.count < wanted else {  // a chunk past the page is not read
                full = true
                return false
            }
            do {
                let chunk = try decodeChunk(key: key, value: value, feed: settings.feed, unlessWriter: skipped)
                // A transaction of the writer skipped (a store's own, which its follower passes
                // over) is stepped over whole, its changes not decoded: all its chunks are its.
                if let skipped, chunk.writer == skipped {
                    if chunk.version >= position.version { position = (chunk.version + 1, 0) }
                    return true
                }
                let committed = Date(timeIntervalSince1970: Double(chunk.committedAt) / 1000)
                for (offset, change) in chunk.changes.enumerated() {
                    let index = chunk.first + offset
                    if chunk.version == position.version && index < position.next { continue }
                    guard entries.count < wanted else {
                        full = true
                        return false
                    }
                    entries.append(ChangeFeedEntry(version: chunk.version, committedAt: committed, change: change, writer: chunk.writer))
                    position = index + 1 == chunk.total ? (chunk.version + 1, 0) : (chunk.version, index + 1)
                }
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        return ChangeFeedPage(entries: entries, next: ChangeToken(feed: settings.feed, version: position.version, next: position.next),
                              isAtEnd: !full)
    }
}

extension TransactionContext {
    /// At the first record use of a write transaction: whether the store's change feed is on.
    /// If it is, the transaction encodes its changes (telling inserts from updates) into
    /// ``changeLog`` as it makes them, for ``appendToChangeLog()``.
    ///
    /// The feed's next version and the first expired chunks are read now, before the body's
    /// writes: the writer lock is held until the commit, and the transaction writes no chunk
    /// before its end, so they still hold then; read at the end, they made an engine that buffers
    /// writes (LevelDB) sort the whole transaction's writes to merge them into the two scans.
    /// Marked as done only once its reads succeeded: a body that catches their error cannot then
    /// write records the feed would miss (every later record use fails the same way).
    @usableFromInline
    func checkChangeLog() throws {
        guard let settings = try ChangeLog.settings(in: reader) else {
            changeLogChecked = true
            return
        }
        let version = try ChangeLog.lastVersion(feed: settings.feed, in: reader) + 1
        let expired = try ChangeLog.expired(settings, newest: version, now: ChangeLog.milliseconds(Date()), budget: ChangeLog.expiredAhead, in: reader)
        changeLog = ChangeLogChunks(settings: settings, version: version, expired: expired, maxValueLength: store.engine.limits.maxValueLength)
        changesNeedKinds = true
        changeLogChecked = true
    }

    /// At the end of a write transaction's body: its changes become the feed's next version, and
    /// expired chunks, up to twice as many as it wrote and 16 more, are trimmed in the same transaction (so
    /// the feed keeps its retention without a job, however the writes are sized).
    @usableFromInline
    func appendToChangeLog() throws {
        guard let chunks = changeLog, chunks.count > 0, let writer else { return }
        let now = ChangeLog.milliseconds(Date())
        let values = chunks.values(committedAt: now, writer: store.writerID)
        for (key, value) in values { try writer.put(value, forKey: key) }
        let budget = 2 * values.count + 16
        var expired = chunks.expired
        if expired.count == ChangeLog.expiredAhead && budget > expired.count {  // a large transaction: more may go
            expired = try ChangeLog.expired(chunks.settings, newest: chunks.version, now: now, budget: budget, in: reader)
        }
        for key in expired.prefix(budget) { try writer.delete(key) }
    }
}
