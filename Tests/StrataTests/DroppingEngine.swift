import StrataEngine
import StrataKeyCodec
@testable import StrataRecords

/// An engine that silently drops, or fails, the puts and deletes a rule picks, wrapping a correct
/// one: the defects the record layer's checks must catch (an overwrite that leaves its old index
/// entries, writes that do not keep an index's previous generation) and the failures it must
/// survive (a write that fails partway), made without touching the product. It keeps the inner
/// engine's name, so stores open on it as on the inner engine.
final class DroppingEngine: KeyValueEngine, Sendable {
    enum Operation: Sendable { case put, delete }
    typealias Rule = @Sendable (Operation, UnsafeRawBufferPointer) -> Bool
    /// What a failing write throws.
    struct InjectedFailure: Error, Equatable {}

    let inner: any KeyValueEngine
    let drops: Rule
    let fails: Rule
    /// Asked once a write's body returned, with whether it put or deleted anything: `true` fails
    /// its commit (the inner transaction rolls back).
    let failsCommit: @Sendable (_ wrote: Bool) -> Bool
    /// Called at each `write` before the inner engine's (before its writer gate).
    let beforeWrite: @Sendable () -> Void
    var engineName: String { inner.engineName }
    var capabilities: EngineCapabilities { inner.capabilities }
    var limits: EngineLimits { inner.limits }
    func makeCommitSignal() -> (any CommitSignal)? { inner.makeCommitSignal() }

    init(_ inner: any KeyValueEngine, drops: @escaping Rule = { _, _ in false }, fails: @escaping Rule = { _, _ in false },
         failsCommit: @escaping @Sendable (_ wrote: Bool) -> Bool = { _ in false }, beforeWrite: @escaping @Sendable () -> Void = {}) {
        self.inner = inner
        self.beforeWrite = beforeWrite
        self.drops = drops
        self.fails = fails
        self.failsCommit = failsCommit
    }

    func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R {
        try inner.read { try body($0) }
    }

    func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R {
        beforeWrite()
        return try inner.write {
            let transaction = DroppingTransaction($0, drops: drops, fails: fails)
            let result = try body(transaction)
            if failsCommit(transaction.wrote) { throw InjectedFailure() }
            return result
        }
    }

    func close() throws { try inner.close() }

    /// Drops the deletes of index entries (every index, every generation): an overwrite or a
    /// delete then leaves the old record's entries behind.
    static let staleEntries: Rule = { operation, key in operation == .delete && isIndexEntry(key) }

    /// Whether `key` is an index entry's (any index, any generation).
    static func isIndexEntry(_ key: UnsafeRawBufferPointer) -> Bool { key.starts(with: SystemKey.prefix + KeyCodec.encode("ix")) }

    /// Drops the deletes of the entries of generation `generation` of `keyspace`'s indexes `names`:
    /// writes then leave a replaced record's entries in that generation (the previous one of a
    /// changed definition) behind. (Its puts still go: a missing entry makes writes retire the
    /// generation, which hides the defect rather than shows it.)
    static func deletes(ofGeneration generation: Int, of names: [String], in keyspace: String) -> Rule {
        let prefixes = names.map { SystemKey.indexEntries(keyspace: keyspace, name: $0, generation: generation) }
        return { operation, key in operation == .delete && prefixes.contains { key.starts(with: $0) } }
    }
}

/// `body` with a store of `kind` in a temporary directory whose writes `rule` thins out (none
/// when `nil`).
func withStore<R>(_ kind: EngineKind, dropping rule: DroppingEngine.Rule?, _ body: (Store) throws -> R) throws -> R {
    let dir = TemporaryDirectory()
    defer { dir.cleanup() }
    let engine = try kind.open(dir.path)
    let store = try Store(engine: rule.map { DroppingEngine(engine, drops: $0) } ?? engine)
    defer { try? store.close() }
    return try body(store)
}

final class DroppingTransaction: KeyValueWriter {
    let inner: any KeyValueWriter
    let drops: DroppingEngine.Rule
    let fails: DroppingEngine.Rule
    /// Whether a put or delete reached this transaction (dropped or not).
    private(set) var wrote = false

    init(_ inner: any KeyValueWriter, drops: @escaping DroppingEngine.Rule, fails: @escaping DroppingEngine.Rule) {
        self.inner = inner
        self.drops = drops
        self.fails = fails
    }

    func withValue<R>(forKey key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try inner.withValue(forKey: key, body)
    }

    func scan(_ range: KeyRange, reverse: Bool, limit: Int?, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        try inner.scan(range, reverse: reverse, limit: limit, visit)
    }

    func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer) throws {
        wrote = true
        if fails(.put, key) { throw DroppingEngine.InjectedFailure() }
        if drops(.put, key) { return }
        try inner.put(value, forKey: key)
    }

    func delete(_ key: UnsafeRawBufferPointer) throws {
        wrote = true
        if fails(.delete, key) { throw DroppingEngine.InjectedFailure() }
        if drops(.delete, key) { return }
        try inner.delete(key)
    }

    func clear(_ range: KeyRange) throws -> Int {
        wrote = true
        return try inner.clear(range)
    }
}
