import Foundation
import StrataEngine
import StrataKeyCodec

/// A record store on the engine of your choice.
///
/// ```swift
/// let store = try Store(.lmdb(path: "/tmp/people"))
/// try store.withTransaction { ctx in
///     try ctx.insert(Person(lastName: "Dallas", firstName: "Korben", age: 45))
/// }
/// ```
///
/// Opening checks the store's manifest (engine, key codec and format version) and writes it into
/// a new store, so a store is never read with another engine or encoding. The store is `Sendable`:
/// share one instance between threads and tasks (opening the same path twice in a process is
/// refused with ``StrataEngine/EngineError/alreadyOpen(path:)``).
public final class Store: Sendable {
    /// The engine underneath, for engine-level work.
    public let engine: any KeyValueEngine
    @usableFromInline let catalog = Catalog()

    /// Opens (with `.create`, creates) a store on `engine`: `.lmdb(path:)`, `.leveldb(path:)`,
    /// `.sqlite(path:)` and `.memory` come with their adapter modules (all of them with `import
    /// Strata`), your own engines through an ``StrataEngine/EngineConfiguration`` of your own.
    public convenience init(_ engine: EngineConfiguration, mode: OpenMode = .create, durability: Durability = .full) throws {
        try self.init(engine: try engine.open(EngineOptions(mode: mode, durability: durability)), readOnly: mode == .readOnly)
    }

    /// Opens a store on an engine you opened yourself (any ``KeyValueEngine``).
    public init(engine: any KeyValueEngine, readOnly: Bool = false) throws {
        self.engine = engine
        do {
            try Manifest.check(engine, readOnly: readOnly)
        } catch {
            try? engine.close()
            throw error
        }
    }

    /// Runs `body` in a read-write transaction: it commits when `body` returns and rolls back
    /// when it throws. Other writers wait.
    public func withTransaction<R>(_ body: (TransactionContext) throws -> R) throws -> R {
        try engine.write { tx in try body(TransactionContext(store: self, reader: tx, writer: tx)) }
    }

    /// Runs `body` in a read-only transaction that sees one snapshot.
    public func withReadTransaction<R>(_ body: (TransactionContext) throws -> R) throws -> R {
        try engine.read { tx in try body(TransactionContext(store: self, reader: tx, writer: nil)) }
    }

    /// ``withTransaction(_:)-(_)`` from async code; the body is still synchronous and runs on a
    /// thread outside the cooperative pool.
    public func withTransaction<R: Sendable>(_ body: @Sendable (TransactionContext) throws -> R) async throws -> R {
        try await engine.write { tx in try body(TransactionContext(store: self, reader: tx, writer: tx)) }
    }

    /// ``withReadTransaction(_:)-(_)`` from async code.
    public func withReadTransaction<R: Sendable>(_ body: @Sendable (TransactionContext) throws -> R) async throws -> R {
        try await engine.read { tx in try body(TransactionContext(store: self, reader: tx, writer: nil)) }
    }

    /// Waits for running transactions, then closes the engine.
    public func close() throws { try engine.close() }
}

/// The store's system keys start with `00`, which no keyspace prefix (a string, code `02`) does.
enum SystemKey {
    static let prefix: [UInt8] = [TypeCode.null]
    static let manifest = prefix + KeyCodec.encode("manifest")
    static func keyspace(_ name: String) -> [UInt8] { prefix + KeyCodec.encode("keyspace", name) }
}

/// What a store was written with: checked at every open.
enum Manifest {
    static let formatVersion: UInt32 = 1

    struct Contents: Equatable {
        var engine: String
        var codec: String
        var codecVersion: UInt32
        var format: UInt32
    }

    static func current(_ engine: any KeyValueEngine) -> Contents {
        Contents(engine: engine.engineName, codec: KeyCodec.name, codecVersion: UInt32(KeyCodec.version), format: formatVersion)
    }

    static func encode(_ c: Contents) -> [UInt8] {
        var w = FieldWriter()
        w.write(c.engine)
        w.write(c.codec)
        w.write(c.codecVersion)
        w.write(c.format)
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> Contents {
        try bytes.withUnsafeBytes { raw in
            var r = FieldReader(raw)
            do {
                let c = Contents(engine: try r.read(), codec: try r.read(), codecVersion: try r.read(), format: try r.read())
                try r.finish()
                return c
            } catch {
                throw RecordError.manifestMismatch(detail: "the manifest is unreadable: \(error)")
            }
        }
    }

    static func check(_ engine: any KeyValueEngine, readOnly: Bool) throws {
        let expected = current(engine)
        let found = try engine.read { tx -> (Contents?, Bool) in
            let stored = try tx.get(SystemKey.manifest)
            return (try stored.map(decode), try tx.keys(.all, limit: 1).isEmpty)
        }
        if let stored = found.0 {
            try compare(stored, expected)
            return
        }
        if !found.1 { throw RecordError.manifestMismatch(detail: "the store holds data but no Strata manifest") }
        if readOnly { return }  // an empty store opened read-only: nothing to check, nothing to write
        try engine.write { tx in
            if let stored = try tx.get(SystemKey.manifest) { return try compare(try decode(stored), expected) }
            try tx.put(encode(expected), forKey: SystemKey.manifest)
        }
    }

    static func compare(_ stored: Contents, _ expected: Contents) throws {
        if stored.format > expected.format {
            throw RecordError.manifestMismatch(detail: "format version \(stored.format) is newer than this Strata's \(expected.format)")
        }
        if stored.format != expected.format {
            throw RecordError.manifestMismatch(detail: "unknown format version \(stored.format)")
        }
        if stored.engine != expected.engine {
            throw RecordError.manifestMismatch(detail: "written by engine \(stored.engine), opened with \(expected.engine)")
        }
        if stored.codec != expected.codec || stored.codecVersion != expected.codecVersion {
            throw RecordError.manifestMismatch(detail: "keys encoded with \(stored.codec) v\(stored.codecVersion), this Strata reads \(expected.codec) v\(expected.codecVersion)")
        }
    }
}

/// Which record type owns which keyspace: in this process (two types may not share one) and
/// in the store (the key layout stored at first write must match the type's).
@usableFromInline final class Catalog: @unchecked Sendable {
    private let lock = NSLock()
    private var owners: [String: (ObjectIdentifier, String)] = [:]
    private var verified: Set<String> = []

    /// Checks `R`'s claim on its keyspace; records it in the store on the first write.
    @usableFromInline func check<R: Record>(_: R.Type, in tx: any KeyValueReader, writer: (any KeyValueWriter)?) throws {
        let type = R.recordType
        let me = ObjectIdentifier(R.self)
        let alreadyVerified: Bool = try lock.withLock {
            if let (owner, name) = owners[type.keyspace], owner != me {
                throw RecordError.keyspaceClash(keyspace: type.keyspace, detail: "used by \(name) and by \(R.self) in this process")
            }
            owners[type.keyspace] = (me, "\(R.self)")
            return verified.contains(type.keyspace)
        }
        if alreadyVerified { return }
        let key = SystemKey.keyspace(type.keyspace)
        if let stored = try tx.get(key) {
            let layout = String(decoding: stored, as: UTF8.self)
            guard layout == type.keyLayout else {
                throw RecordError.keyspaceClash(keyspace: type.keyspace, detail: "the store holds keys (\(layout)) but \(R.self) declares (\(type.keyLayout))")
            }
            // Only what is committed is marked: a rolled-back first write leaves it unmarked.
            lock.withLock { _ = verified.insert(type.keyspace) }
        } else if let writer {
            try writer.put(Array(type.keyLayout.utf8), forKey: key)
        }
    }
}
