import StrataEngine

/// An engine with one deliberate bug, wrapping a correct one: the conformance suite and the
/// differential test must catch each bug.
final class BrokenEngine: KeyValueEngine, @unchecked Sendable {
    enum Bug: String, CaseIterable, Sendable {
        /// Reverse scans come back in forward order.
        case reverseScansForward
        /// A put whose key ends in byte 0x62 ("b") is silently dropped.
        case dropsSomeWrites
        /// Limits are ignored.
        case ignoresLimit
        /// Deletes of keys longer than 8 bytes are silently dropped (short keys, as most
        /// engine cases use, still go).
        case dropsLongDeletes
    }

    let inner: any KeyValueEngine
    let bug: Bug
    var engineName: String { "broken(\(bug.rawValue))" }
    var capabilities: EngineCapabilities { inner.capabilities }

    init(_ inner: any KeyValueEngine, bug: Bug) {
        self.inner = inner
        self.bug = bug
    }

    func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R {
        try inner.read { try body(BrokenTransaction($0, bug: bug)) }
    }

    func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R {
        try inner.write { try body(BrokenTransaction($0, bug: bug)) }
    }

    func close() throws { try inner.close() }
    func compact() throws -> CompactionReport { try inner.compact() }
}

final class BrokenTransaction: KeyValueWriter {
    let inner: any KeyValueReader
    let bug: BrokenEngine.Bug

    init(_ inner: any KeyValueReader, bug: BrokenEngine.Bug) {
        self.inner = inner
        self.bug = bug
    }

    func withValue<R>(forKey key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try inner.withValue(forKey: key, body)
    }

    func scan(_ range: KeyRange, reverse: Bool, limit: Int?, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        try inner.scan(range, reverse: bug == .reverseScansForward ? false : reverse, limit: bug == .ignoresLimit ? nil : limit, visit)
    }

    private var writer: any KeyValueWriter { inner as! any KeyValueWriter }

    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
        if bug == .dropsSomeWrites && key.last == 0x62 { return }
        try writer.put(value, forKey: key)
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        if bug == .dropsLongDeletes && key.count > 8 { return }
        try writer.delete(key)
    }

    func clear(_ range: KeyRange) throws -> Int { try writer.clear(range) }
}
