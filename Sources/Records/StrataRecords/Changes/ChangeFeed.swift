import Foundation
import StrataEngine

/// How long a store's change feed keeps committed transactions (``Store/enableChangeFeed(retention:)``).
///
/// A transaction is kept while it is within every limit set; the newest transaction is always
/// kept. With no limit, the feed keeps everything.
public struct ChangeFeedRetention: Sendable, Hashable {
    /// Transactions older than this (by their commit's wall-clock time) are trimmed; `nil` for no
    /// age limit. Kept to the millisecond.
    public var maxAge: Duration?
    /// At most this many transactions are kept; `nil` for no count limit.
    public var maxCommits: Int?

    /// A retention of at most `maxAge` and at most `maxCommits` transactions (`nil`: no such limit).
    public init(maxAge: Duration? = nil, maxCommits: Int? = nil) {
        self.maxAge = maxAge
        self.maxCommits = maxCommits
    }

    /// Keeps the last `count` transactions (at least 1).
    public static func commits(_ count: Int) -> ChangeFeedRetention { ChangeFeedRetention(maxCommits: count) }

    /// Keeps transactions committed within `age` (the newest one always).
    public static func age(_ age: Duration) -> ChangeFeedRetention { ChangeFeedRetention(maxAge: age) }

    /// Keeps every transaction.
    public static let forever = ChangeFeedRetention()
}

/// One record change in a store's change feed (``Store/changes(since:limit:)``).
public struct ChangeFeedEntry: Sendable, Hashable {
    /// The feed's number for the transaction that made the change: 1 for the first transaction
    /// after the feed was turned on, then one more for each transaction that changed records, in
    /// commit order (also across processes).
    public let version: UInt64
    /// When the transaction committed, by the writer's clock (to the millisecond).
    public let committedAt: Date
    /// The record's type (its keyspace), key, and whether it was inserted, replaced or deleted.
    public let change: RecordChange
    /// The identity of the ``Store`` instance that wrote it: how a store tells its own commits
    /// from other processes'.
    let writer: Int
}

/// A page of a store's change feed.
public struct ChangeFeedPage: Sendable {
    /// The changes, in commit order, and within a transaction in the order its body made them.
    public let entries: [ChangeFeedEntry]
    /// Where the next page starts: store it with what you did with this page, and pass it to
    /// ``Store/changes(since:limit:)`` to go on (in this process or another, now or later).
    public let next: ChangeToken
    /// Whether the page reached the feed's end (the next page is empty until another
    /// transaction commits).
    public let isAtEnd: Bool
}

/// A position in a store's change feed: every change before it has been read.
///
/// Opaque, versioned and `Codable`, so a consumer can keep it with its own state. A token is
/// bound to one feed: turning the feed off and on again, or asking another store, ends it with
/// ``RecordError/historyTruncated(detail:)``, as does a token older than the retention keeps.
public struct ChangeToken: Codable, Sendable, Hashable, CustomStringConvertible {
    /// Token layouts this build reads.
    static let layout = 1

    let layout: Int
    let feed: Int
    /// The transaction the token resumes in.
    public let version: UInt64
    /// The first change of `version` not read yet (0: the transaction is unread).
    let next: Int

    init(feed: Int, version: UInt64, next: Int) {
        layout = Self.layout
        self.feed = feed
        self.version = version
        self.next = next
    }

    /// `version 12` (or `version 12, change 1000` inside a large transaction).
    public var description: String { next == 0 ? "version \(version)" : "version \(version), change \(next)" }
}

extension Store {
    /// Turns on the store's change feed, or changes its retention when it is on.
    ///
    /// From the next transaction on, every write transaction that changes records also writes
    /// its changes to the feed (a reserved part of the store), in the same transaction, and
    /// trims what the retention no longer keeps; read them with ``changes(since:limit:)``.
    /// The setting is kept in the store: every process and every later open writes the feed
    /// until ``disableChangeFeed()``. A Strata build that predates the feed refuses the store
    /// (``RecordError/unsupportedFeature(feature:scope:)``) rather than write without it.
    ///
    /// A shorter retention takes effect at once: what it no longer keeps is trimmed before this
    /// returns, in batches (``trimChangeFeed(onBatch:)``).
    public func enableChangeFeed(retention: ChangeFeedRetention = .commits(100_000)) throws {
        if let commits = retention.maxCommits, commits < 1 {
            throw RecordError.invalidChangeFeedSettings(detail: "maxCommits is \(commits); the feed keeps at least 1 transaction")
        }
        if let age = retention.maxAge, age <= .zero {
            throw RecordError.invalidChangeFeedSettings(detail: "maxAge is \(age); give a positive age")
        }
        try withTransaction { ctx in
            let writer = try ctx.writable()
            var settings = ChangeLog.Settings(feed: Int.random(in: 1...Int.max), retention: retention)
            if let current = try ChangeLog.settings(in: ctx.reader) { settings.feed = current.feed }
            try writer.put(settings.encoded(), forKey: SystemKey.changeFeed)
            try Manifest.setStoreFeature(ChangeLog.feature, listed: true, in: ctx.reader, writer: writer)
        }
        try trimChangeFeed()
    }

    /// Turns the store's change feed off and deletes it. Tokens of the feed are refused from
    /// now on (``RecordError/historyTruncated(detail:)``), also once the feed is turned on again.
    ///
    /// Writers stop writing the feed at once; its chunks are deleted after that, in batches.
    public func disableChangeFeed() throws {
        try withTransaction { ctx in
            let writer = try ctx.writable()
            try writer.delete(SystemKey.changeFeed)
            try Manifest.setStoreFeature(ChangeLog.feature, listed: false, in: ctx.reader, writer: writer)
        }
        try trimChangeFeed()
    }

    /// The change feed's retention, or `nil` when the feed is off.
    public func changeFeedRetention() throws -> ChangeFeedRetention? {
        try engine.read { tx in try ChangeLog.settings(in: tx)?.retention }
    }

    /// Up to `limit` changes of the store's change feed after `token` (from the oldest the feed
    /// keeps when `nil`), in commit order, with the token to go on from.
    ///
    /// Only committed transactions are in the feed, each whole: a transaction that changed
    /// records is in it exactly when it committed. A token older than what the feed keeps throws
    /// ``RecordError/historyTruncated(detail:)``, never skips ahead; a feed that is off throws
    /// ``RecordError/changeFeedOff``.
    public func changes(since token: ChangeToken?, limit: Int = 1_000) throws -> ChangeFeedPage {
        try withReadTransaction { ctx in try ctx.changeFeed(since: token, limit: limit) }
    }

    /// The token of the feed's end: the changes of transactions that commit from now on follow
    /// it (for a consumer that starts from the present rather than from the oldest kept).
    public func changeFeedEnd() throws -> ChangeToken {
        try engine.read { tx in
            guard let end = try ChangeLog.end(in: tx) else { throw RecordError.changeFeedOff }
            return end
        }
    }

    /// Trims the change feed to its retention now, and deletes what a turned-off or earlier feed
    /// left, in short transactions (writers go on between them); calls `onBatch` with the
    /// chunks deleted so far after each. Returns how many chunks were deleted.
    ///
    /// Writers trim the feed as they go (each by up to twice the chunks it wrote and 16 more), so this is needed
    /// only after a retention change or an idle period with an age limit; ``enableChangeFeed(retention:)``
    /// and ``disableChangeFeed()`` call it.
    @discardableResult
    public func trimChangeFeed(onBatch: (Int) -> Void = { _ in }) throws -> Int {
        var deleted = 0
        var batching = JobBatch(engine: engine)
        var firstDeleted: [UInt8]?
        while true {
            let removed = try JobBatch.run(&batching) { batch in
                try engine.write { tx -> Int in
                    // Each batch deletes what the one before left; finding its first key again
                    // means the engine did not delete it (this would loop forever).
                    var first: [UInt8]?
                    defer { firstDeleted = first }
                    func deleting(_ key: [UInt8]) throws {
                        if first == nil {
                            if key == firstDeleted {
                                throw RecordError.corruptChangeFeed(detail: "the chunk \(StoredValue.hex(key)) is still there after it was deleted")
                            }
                            first = key
                        }
                        try tx.delete(key)
                    }
                    let settings = try ChangeLog.settings(in: tx)
                    // Chunks of other feeds first: a feed turned off (and perhaps on again) left them.
                    var stale: [[UInt8]] = []
                    for range in ChangeLog.staleRanges(keeping: settings?.feed) where stale.count < batch.size {
                        try tx.scan(range, reverse: false, limit: batch.size - stale.count) { key, _ in
                            stale.append(Array(key))
                            return true
                        }
                    }
                    for key in stale { try deleting(key) }
                    guard let settings, stale.count < batch.size else { return stale.count }
                    let newest = try ChangeLog.lastVersion(feed: settings.feed, in: tx)
                    let expired = try ChangeLog.expired(settings, newest: newest, now: ChangeLog.milliseconds(Date()),
                                                        budget: batch.size - stale.count, in: tx)
                    for key in expired { try deleting(key) }
                    return stale.count + expired.count
                }
            }
            guard removed > 0 else { return deleted }
            deleted += removed
            onBatch(deleted)
        }
    }
}

extension TransactionContext {
    /// ``Store/changes(since:limit:)`` in this transaction's snapshot: the feed as it is with
    /// the records this transaction reads (in a write transaction, before this transaction's
    /// own changes, which join the feed as it commits).
    public func changeFeed(since token: ChangeToken?, limit: Int = 1_000) throws -> ChangeFeedPage {
        try ChangeLog.read(since: token, limit: limit, in: reader)
    }
}
