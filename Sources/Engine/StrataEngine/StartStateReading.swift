/// A write transaction that reads the state it began from, before any of its own writes, in one
/// ordered walk: storage that buffers its writes (LevelDB, etcd) reads its starting snapshot.
///
/// The record layer uses it to tell inserts from updates for the change feed and transaction
/// observers. Asking ``KeyValueWriter/putReportingReplaced(_:forKey:)`` costs such storage a read
/// of each key as it is put (through the transaction's pending writes, which the read makes it
/// index); putting plainly and asking here once, as the transaction's body returns, costs one
/// walk of the keys in order, whose seeks are shared by neighbouring keys.
///
/// Internal to Strata's layers (SPI): ``CoreEngine``'s transactions conform.
@_spi(StrataInternals)
public protocol StartStateReading: AnyObject {
    /// Whether ``keysHeld(atStart:)`` answers more cheaply than each put could (its storage
    /// buffers its writes); `false` on storage whose puts tell it natively (LMDB, SQLite, memory).
    var readsStartState: Bool { get }

    /// Of `keys`, ascending and distinct, whether each held a value when the transaction began.
    /// Throws ``EngineError/invalidArgument(_:)`` when ``readsStartState`` is `false` or the keys
    /// are not ascending, and the key errors of a read (``EngineError/emptyKey``,
    /// ``EngineError/keyTooLarge(length:limit:)``), all before anything is read; a storage error
    /// breaks the transaction, as any read's does.
    func keysHeld(atStart keys: PackedKeys) throws -> [Bool]
}

/// Keys back to back in one buffer: a list of many short keys without an array per key.
@_spi(StrataInternals)
public struct PackedKeys: Sendable {
    /// The keys' bytes, back to back.
    public private(set) var bytes: [UInt8] = []
    /// Where each key ends in ``bytes``.
    @usableFromInline private(set) var ends: [Int] = []

    /// No keys.
    public init() {}

    /// How many keys.
    public var count: Int { ends.count }

    /// Appends `key`.
    public mutating func append(_ key: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: key.baseAddress?.assumingMemoryBound(to: UInt8.self), count: key.count))
        ends.append(bytes.count)
    }

    /// Calls `body` with a view of the keys' buffer, in which ``range(of:)`` finds each key.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    /// Where key `i` lies in ``bytes``.
    @inlinable @inline(__always)
    public func range(of i: Int) -> Range<Int> { (i == 0 ? 0 : ends[i - 1])..<ends[i] }
}
