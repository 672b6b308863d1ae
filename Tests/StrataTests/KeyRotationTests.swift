import Foundation
import StrataBundledEngines
import StrataCompression
import StrataEngine
@testable import StrataEncryption
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// Key rotation (Store.rotateKeys): opening with a new key that still reads the old one begins
/// it, the job re-seals every record value and covering entry online, and a store holds values
/// under at most two keys.
@Suite("Key rotation")
struct KeyRotationTests {
    static let keyA = EncryptionTests.key
    static let keyB = EncryptionTests.otherKey
    static let keyC = try! EncryptionKey(bytes: (201...232).map { UInt8($0) })
    static let members = ValueTransformTests.members

    static func encryption(_ current: EncryptionKey, _ previous: EncryptionKey...) -> [any ValueTransform] {
        [try! RecordEncryption(keys: StaticKeys(current: current, previous: previous))]
    }

    static func name(_ key: EncryptionKey) -> String { "aes-256-gcm key \(key.idDescription)" }

    /// The key identifiers the store's sealed values name: every record value and every covering
    /// entry (values of other entries are empty), counted per identifier.
    static func sealedUnder(_ store: Store) throws -> [UInt32: Int] {
        var ids: [UInt32: Int] = [:]
        try store.dumpRaw { key, value in
            guard key.first != 0 || (key.starts(with: SystemKey.allIndexEntries) && !value.isEmpty) else { return true }
            let fieldsStart = try #require(value.firstIndex { $0 < 0x80 }) + 1  // after the version's varint
            ids[EncryptionKey.identifier(value[fieldsStart..<(fieldsStart + 4)]), default: 0] += 1
            return true
        }
        return ids
    }

    /// Every member through the typed read, the covering index and a view-free index query.
    static func readAll(_ store: Store) throws -> [Member] {
        try store.withReadTransaction { ctx in
            let selected = try ctx.select(Member.self)
            let covered = try (0..<7).flatMap { try Member.byAgeCovering.select(in: ctx, .all.equal($0)) }.sorted { $0.id < $1.id }
            #expect(covered == selected)
            return selected
        }
    }

    @Test("opened with a new key that reads the old one, a store rotates online: every record value and covering entry ends under the new key, read the same throughout",
          arguments: TestEngines.all)
    func rotation(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        // One engine for both stores: a memory store ends with its engine.
        let engine = try kind.open(dir.path, EngineOptions(mode: .create, durability: .full))
        let before = try Store(engine: engine, transforms: Self.encryption(Self.keyA))
        try before.withTransaction { ctx in for member in Self.members { try ctx.insert(member) } }
        #expect(try Self.sealedUnder(before) == [Self.keyA.id: 2 * Self.members.count])

        let store = try Store(engine: engine, transforms: Self.encryption(Self.keyB, Self.keyA))
        defer { try? store.close() }
        // The store opened before the rotation began may no longer seal under the old key.
        #expect(throws: RecordError.manifestMismatch(detail: "the store's values are now sealed with [\(Self.name(Self.keyB))], and it was opened with "
            + "[\(Self.name(Self.keyA))] (another process rotated its key): open it again")) {
            try before.withTransaction { ctx in try ctx.insert(Member(id: 41, email: "stale@example.org", city: "City1", age: 2)) }
        }
        #expect(try before.withReadTransaction { ctx in try ctx.select(Member.self).count } == Self.members.count)
        var expected = Self.members
        try store.withTransaction { ctx in
            try ctx.insert(Member(id: 3, email: "moved@example.org", city: "City9", age: 6))  // rewritten under B
            try ctx.insert(Member(id: 40, email: "new@example.org", city: "City1", age: 2))  // written under B
        }
        expected[3] = Member(id: 3, email: "moved@example.org", city: "City9", age: 6)
        expected.append(Member(id: 40, email: "new@example.org", city: "City1", age: 2))
        #expect(try Self.sealedUnder(store) == [Self.keyA.id: 2 * 39, Self.keyB.id: 2 * 2])
        #expect(try Self.readAll(store) == expected)

        let progress = ProgressLog()
        let report = try store.rotateKeys(batchSize: 7) { progress.add($0) }.wait()
        #expect(report.retired == [Self.name(Self.keyA)] && report.finished)
        #expect(report.records == 41 && report.coveringEntries == 41 && report.unreadable == 0 && report.entriesCleared == 0)
        #expect(try Self.sealedUnder(store) == [Self.keyB.id: 2 * 41])
        #expect(try Self.readAll(store) == expected)
        #expect(try store.verify().isClean)
        let phases = progress.all.map(\.phase)
        #expect(phases.first == "re-sealing records" && phases.last == "re-sealing covering entries" && report.batches == phases.count)
        #expect(progress.all.map(\.done) == progress.all.map(\.done).sorted() && progress.all.last!.done <= progress.all.last!.total)
        let manifest = try #require(try store.engine.read { tx in try tx.get(SystemKey.manifest).map(Manifest.decode) })
        #expect(manifest.transforms == [Self.name(Self.keyB)] && manifest.retiring.isEmpty)
        // Nothing left to do.
        let again = try store.rotateKeys().wait()
        #expect(again.retired.isEmpty && again.finished && again.records == 0 && again.batches == 0)
    }

    @Test("while a rotation is under way the store opens only with a key provider that reads both keys, never with a third key; read-only opens do not begin one; it resumes where it stopped",
          arguments: BundledEngines.onDisk + [TestEngines.etcd])
    func rotationUnderWay(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let (a, b, c) = (Self.name(Self.keyA), Self.name(Self.keyB), Self.name(Self.keyC))
        func open(_ transforms: [any ValueTransform], mode: OpenMode = .create) throws -> Store {
            try Store(engine: kind.open(dir.path, EngineOptions(mode: mode, durability: .full)), readOnly: mode == .readOnly, transforms: transforms)
        }
        let first = try open(Self.encryption(Self.keyA))
        try first.withTransaction { ctx in for member in Self.members { try ctx.insert(member) } }
        try first.close()
        // A read-only open with the new key reads the old values and begins nothing; a copy made
        // through it names the store's own chain.
        let reader = try open(Self.encryption(Self.keyB, Self.keyA), mode: .readOnly)
        #expect(try Self.readAll(reader) == Self.members)
        let copies = kind.declaration.marker != nil
        if copies { try reader.copy(to: kind.configuration(path: dir.path + "-copy")) }
        try reader.close()
        if copies {
            defer { try? FileManager.default.removeItem(atPath: dir.path + "-copy") }
            let copy = try Store(engine: kind.open(dir.path + "-copy", EngineOptions(mode: .openExisting, durability: .full)), transforms: Self.encryption(Self.keyA))
            #expect(try Self.readAll(copy) == Self.members)
            try copy.close()
        }
        #expect(throws: RecordError.manifestMismatch(detail: "values written with the transforms [\(a)], opened with [\(b)]")) {
            try open(Self.encryption(Self.keyB))
        }

        // The rotation begins; its job stops after its first batch.
        let rotating = try open(Self.encryption(Self.keyB, Self.keyA))
        let handle = JobHandle()
        let job = rotating.rotateKeys(batchSize: 5) { _ in handle.job.cancel() }
        handle.set(job)
        let stopped = try job.wait()
        #expect(stopped.records == 5 && !stopped.finished && stopped.batches == 1)
        // Mid-rotation the store verifies clean: covering entries not re-sealed yet hold their records' contents.
        let midway = try rotating.verify()
        #expect(midway.isClean, "\(midway.problems)")
        #expect(try rotating.withReadTransaction { ctx in try ctx.verifyIndexes(Member.self) }.allSatisfy(\.isExact))
        // A copy made now keeps the rotation under way.
        if copies {
            try rotating.copy(to: kind.configuration(path: dir.path + "-midway"))
        }
        try rotating.close()
        if copies {
            defer { try? FileManager.default.removeItem(atPath: dir.path + "-midway") }
            let copy = try Store(engine: kind.open(dir.path + "-midway", EngineOptions(mode: .openExisting, durability: .full)),
                                 transforms: Self.encryption(Self.keyB, Self.keyA))
            #expect(try copy.rotateKeys().wait().records == Self.members.count - 5)
            #expect(try Self.sealedUnder(copy) == [Self.keyB.id: 2 * Self.members.count])
            try copy.close()
        }

        let underWay = "a key rotation from [\(a)] to [\(b)] is under way"
        #expect(throws: RecordError.manifestMismatch(detail: "\(underWay) (Store.rotateKeys): values not yet re-sealed need [\(a)], which the transforms given cannot read")) {
            try open(Self.encryption(Self.keyB))
        }
        #expect(throws: RecordError.manifestMismatch(detail: "\(underWay): finish it (Store.rotateKeys) with [\(b)] before opening with [\(c)] (a store holds values under at most two keys)")) {
            try open(Self.encryption(Self.keyC, Self.keyA, Self.keyB))
        }
        #expect(throws: RecordError.manifestMismatch(detail: "\(underWay): finish it (Store.rotateKeys) with [\(b)] before opening with [\(a)] (a store holds values under at most two keys)")) {
            try open(Self.encryption(Self.keyA, Self.keyB))
        }

        let resumed = try open(Self.encryption(Self.keyB, Self.keyA))
        #expect(try Self.readAll(resumed) == Self.members)
        let report = try resumed.rotateKeys(batchSize: 5).wait()
        #expect(report.records == Self.members.count - stopped.records && report.coveringEntries == Self.members.count && report.finished)
        #expect(try Self.sealedUnder(resumed) == [Self.keyB.id: 2 * Self.members.count])
        try resumed.close()

        // Done: the old key is no longer needed, and the next rotation may begin.
        let later = try open(Self.encryption(Self.keyB))
        #expect(try Self.readAll(later) == Self.members)
        try later.close()
        #expect(throws: RecordError.manifestMismatch(detail: "values written with the transforms [\(b)], opened with [\(a)]")) {
            try open(Self.encryption(Self.keyA))
        }
        let next = try open(Self.encryption(Self.keyC, Self.keyB))
        try next.rotateKeys().wait()
        #expect(try Self.sealedUnder(next) == [Self.keyC.id: 2 * Self.members.count])
        try next.close()
    }

    @Test("readers and writers are served while a rotation runs: every read sees every record, and what was written meanwhile ends under the new key too",
          arguments: BundledEngines.all)
    func servedThroughout(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let engine = try kind.open(dir.path, EngineOptions(mode: .create, durability: .relaxed))
        let many = (0..<400).map { Member(id: $0, email: "m\($0)@example.org", city: "City\($0 % 4)", age: $0 % 7) }
        try Store(engine: engine, transforms: Self.encryption(Self.keyA)).withTransaction { ctx in for member in many { try ctx.insert(member) } }
        let store = try Store(engine: engine, transforms: Self.encryption(Self.keyB, Self.keyA))
        defer { try? store.close() }
        let job = store.rotateKeys(batchSize: 10)
        var reads = 0, written = 0
        while !job.isFinished || reads == 0 {
            let all = try Self.readAll(store)
            #expect(all.count == many.count + written && all.prefix(many.count).map(\.email) == many.map(\.email))
            reads += 1
            if written < 20 {
                let id = 1_000 + written
                try store.withTransaction { ctx in try ctx.insert(Member(id: id, email: "w\(id)@example.org", city: "City0", age: 1)) }
                written += 1
            }
        }
        let report = try job.wait()
        #expect(report.unreadable == 0 && report.batches > 2)
        #expect(try Self.sealedUnder(store) == [Self.keyB.id: 2 * (many.count + written)])
        #expect(try store.verify().isClean)
    }

    @Test("a damaged value is left and named, the rest re-sealed; a key provider that fails stops the job, which resumes")
    func damageAndFailures() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let lmdb = EncryptionTests.lmdb
        let engine = try lmdb.open(dir.path, EngineOptions(mode: .create, durability: .full))
        try Store(engine: engine, transforms: Self.encryption(Self.keyA)).withTransaction { ctx in for member in Self.members { try ctx.insert(member) } }
        final class Flaky: KeyProvider, @unchecked Sendable {  // `failing` is set before the job starts, read by it
            var failing = false
            func currentKey() -> EncryptionKey { KeyRotationTests.keyB }
            func key(withID id: UInt32) throws -> EncryptionKey? {
                if failing { throw CocoaError(.fileReadNoPermission) }
                return [KeyRotationTests.keyA, KeyRotationTests.keyB].first { $0.id == id }
            }
        }
        let provider = Flaky()
        let store = try Store(engine: engine, transforms: [try RecordEncryption(keys: provider)])
        defer { try? store.close() }
        let damaged = KeyCodec.encode("Member", 7)
        try EncryptionTests.rewrite(store, damaged) { $0[$0.count - 1] ^= 0x01 }  // its tag

        provider.failing = true  // the old key is asked for at the first value sealed under it
        #expect(throws: RecordError.self) { try store.rotateKeys().wait() }
        provider.failing = false
        let report = try store.rotateKeys().wait()
        // The record is left, and so is its covering entry (intact, under the old key).
        let entry = IndexCatalog.entriesPrefix(keyspace: "Member", name: "byAgeCovering", generation: 1) + KeyCodec.encode(7 % 7, 7)
        #expect(report.unreadable == 2 && report.firstUnreadableKeys == [damaged, entry])
        #expect(report.records == Self.members.count - 1 && report.coveringEntries == Self.members.count - 1)
        #expect(try Self.sealedUnder(store) == [Self.keyB.id: 2 * Self.members.count - 2, Self.keyA.id: 2])
    }
}

/// A job given to its own `onBatch` once it is made.
final class JobHandle: @unchecked Sendable {  // `value` is written before `ready` is signalled, read after
    private let ready = DispatchSemaphore(value: 0)
    private var value: KeyRotationJob?
    func set(_ job: KeyRotationJob) {
        value = job
        ready.signal()
    }
    var job: KeyRotationJob {
        ready.wait()
        ready.signal()
        return value!
    }
}

/// Progress reports, in order (a job's thread adds them).
final class ProgressLog: @unchecked Sendable {  // `list` is guarded by `lock`
    private let lock = NSLock()
    private var list: [JobProgress] = []
    func add(_ progress: JobProgress) { lock.withLock { list.append(progress) } }
    var all: [JobProgress] { lock.withLock { list } }
}

/// Copies that re-seal every value with other transforms (Store.copy(to:transforms:)).
@Suite("Copies with other transforms")
struct ResealingCopyTests {
    static let members = ValueTransformTests.members

    @Test("a copy adds compression and encryption to a plain store, changes the key, and takes them off again: every read path reads the same, verify is clean",
          arguments: BundledEngines.onDisk)
    func reseal(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let path = { (name: String) in dir.path + "/" + name }
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let plain = try ValueTransformTests.open(kind, path("plain"), [])
        try plain.withTransaction { ctx in for member in Self.members { try ctx.insert(member) } }
        let sealedChain: [any ValueTransform] = [RecordCompression(minimumLength: 1), RecordEncryption(key: KeyRotationTests.keyA)]
        try plain.copy(to: kind.configuration(path: path("sealed")), transforms: sealedChain)
        try plain.close()

        let sealed = try ValueTransformTests.open(kind, path("sealed"), sealedChain)
        #expect(try KeyRotationTests.readAll(sealed) == Self.members)
        #expect(try KeyRotationTests.sealedUnder(sealed) == [KeyRotationTests.keyA.id: 2 * Self.members.count])
        #expect(try !ValueTransformTests.storesInClear(sealed, "secret7@example.org"))
        #expect(try sealed.verify().isClean)
        try sealed.copy(to: kind.configuration(path: path("rekeyed")), transforms: KeyRotationTests.encryption(KeyRotationTests.keyB))
        try sealed.copy(to: kind.configuration(path: path("plain-again")), transforms: [])
        try sealed.close()

        let rekeyed = try ValueTransformTests.open(kind, path("rekeyed"), KeyRotationTests.encryption(KeyRotationTests.keyB))
        #expect(try KeyRotationTests.readAll(rekeyed) == Self.members)
        #expect(try KeyRotationTests.sealedUnder(rekeyed) == [KeyRotationTests.keyB.id: 2 * Self.members.count])
        #expect(try rekeyed.verify().isClean)
        try rekeyed.close()
        #expect(throws: RecordError.self) { try ValueTransformTests.open(kind, path("rekeyed"), KeyRotationTests.encryption(KeyRotationTests.keyA)) }
        let again = try ValueTransformTests.open(kind, path("plain-again"), [])
        #expect(try KeyRotationTests.readAll(again) == Self.members)
        #expect(try ValueTransformTests.storesInClear(again, "secret7@example.org"))
        #expect(try again.verify().isClean)
        try again.close()
    }

    @Test("a value that cannot be opened stops a re-sealing copy, naming it; the copy has no manifest")
    func unreadable() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try EncryptionTests.open(EncryptionTests.lmdb, dir.path + "-source")
        defer { try? store.close(); try? FileManager.default.removeItem(atPath: dir.path + "-source") }
        try store.withTransaction { ctx in for member in Self.members.prefix(5) { try ctx.insert(member) } }
        try EncryptionTests.rewrite(store, KeyCodec.encode("Member", 3)) { $0[$0.count - 1] ^= 0x01 }
        #expect {
            try store.copy(to: EncryptionTests.lmdb.configuration(path: dir.path), transforms: [])
        } throws: { error in
            guard case StoreToolError.unreadableValue(let key, let detail)? = error as? StoreToolError else { return false }
            return key == #"["Member",3]"# && detail.contains("authentication failed")
        }
        let copy = try EncryptionTests.lmdb.open(dir.path, EngineOptions(mode: .create, durability: .full))
        #expect(try copy.read { tx in try tx.get(SystemKey.manifest) } == nil)
        try copy.close()
    }
}
