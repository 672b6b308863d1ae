import Foundation
import StrataBundledEngines
import StrataEngine
@testable import StrataEncryption
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// Encryption at rest (StrataEncryption): every read path on every engine through AES-256-GCM,
/// and every tampering refused with a typed error naming the record.
@Suite("Encryption")
struct EncryptionTests {
    static let key = try! EncryptionKey(bytes: (1...32).map { UInt8($0) })
    static let otherKey = try! EncryptionKey(bytes: (101...132).map { UInt8($0) })
    static let lmdb = BundledEngines.all.first { $0.name == "lmdb" }!

    static func open(_ kind: EngineKind, _ path: String, _ key: EncryptionKey? = key) throws -> Store {
        try ValueTransformTests.open(kind, path, key.map { [RecordEncryption(key: $0)] } ?? [])
    }

    /// Replaces the value at `key` with `change(value without its checksum)`, its checksum made
    /// to match: only the cipher can tell.
    static func rewrite(_ store: Store, _ key: [UInt8], from source: [UInt8]? = nil, _ change: (inout [UInt8]) -> Void = { _ in }) throws {
        try store.engine.write { tx in
            var value = try #require(try tx.get(source ?? key))
            value.removeLast(4)
            change(&value)
            let crc = key.withUnsafeBytes { k in value.withUnsafeBytes { RecordChecksum.of(key: k, value: $0) } }
            value += withUnsafeBytes(of: crc.littleEndian, Array.init)
            try tx.put(value, forKey: key)
        }
    }

    static func refusal(_ kind: ValueTransformError.Kind, _ detail: String, at key: String = #"["Person","A","a"]"#) -> RecordError {
        .valueRefused(type: "Person", key: key, transform: "aes-256-gcm key \(Self.key.idDescription)", reason: ValueTransformError(kind, detail))
    }

    static let altered = "the value under key \(key.idDescription) was altered, moved from another record or store, or sealed with another key of that identifier"

    @Test("encrypted, every read path gives back what was written, and no value is stored in the clear", arguments: TestEngines.all)
    func readsThroughEncryption(kind: EngineKind) throws {
        try ValueTransformTests.checkEveryReadPath(kind, [RecordEncryption(key: Self.key)])
    }

    @Test("a flipped bit, a value moved to another key, a value of another store, a key identifier changed, a truncated value: each refused, naming the record")
    func tampering() throws {
        let dir = TemporaryDirectory(), otherDir = TemporaryDirectory()
        defer { dir.cleanup(); otherDir.cleanup() }
        let store = try Self.open(Self.lmdb, dir.path)
        defer { try? store.close() }
        let other = try Self.open(Self.lmdb, otherDir.path)  // the same key, another store
        defer { try? other.close() }
        let a = Person(lastName: "A", firstName: "a", age: 1), b = Person(lastName: "B", firstName: "b", age: 2)
        try store.withTransaction { ctx in
            try ctx.insert(a)
            try ctx.insert(b)
        }
        try other.withTransaction { ctx in try ctx.insert(Person(lastName: "A", firstName: "a", age: 99)) }
        let keyA = KeyCodec.encode("Person", "A", "a"), keyB = KeyCodec.encode("Person", "B", "b")
        let original = try #require(try store.engine.read { tx in try tx.get(keyA) })
        func read() throws -> Person? { try store.withReadTransaction { ctx in try ctx.select(Person.self).first { $0.lastName == "A" } } }
        func restore() throws { try store.engine.write { tx in try tx.put(original, forKey: keyA) } }
        #expect(try read() == a)

        try Self.rewrite(store, keyA) { $0[$0.count - 20] ^= 0x04 }  // a bit of the ciphertext
        #expect(throws: Self.refusal(.authenticationFailed, Self.altered)) { try read() }
        try restore()
        try Self.rewrite(store, keyA) { $0[$0.count - 1] ^= 0x80 }  // a bit of the tag
        #expect(throws: Self.refusal(.authenticationFailed, Self.altered)) { try read() }
        try restore()
        try Self.rewrite(store, keyA) { $0[0] ^= 0x01 }  // the schema version, outside the ciphertext but authenticated
        #expect(throws: Self.refusal(.authenticationFailed, Self.altered)) { try read() }
        try restore()
        try Self.rewrite(store, keyA, from: keyB)  // B's value under A's key
        #expect(throws: Self.refusal(.authenticationFailed, Self.altered)) { try read() }
        try restore()
        let foreign = try #require(try other.engine.read { tx in try tx.get(keyA) })
        try store.engine.write { tx in try tx.put(foreign, forKey: keyA) }  // its checksum matches: same key bytes
        #expect(throws: Self.refusal(.authenticationFailed, Self.altered)) { try read() }
        try restore()
        let fieldsStart = original.firstIndex { $0 < 0x80 }! + 1  // after the version's varint
        try Self.rewrite(store, keyA) { $0[fieldsStart] ^= 0xFF }  // the key identifier's first byte
        let changedID = EncryptionKey.describe(Self.key.id ^ 0xFF00_0000)
        #expect(throws: Self.refusal(.missingKey, "sealed under key \(changedID), which the key provider does not hold")) { try read() }
        try restore()
        try Self.rewrite(store, keyA) { $0.removeLast($0.count - fieldsStart - 19) }  // 19 bytes of sealed fields
        #expect(throws: Self.refusal(.malformed, "19 bytes, fewer than the 32 of a sealed value's header and tag")) { try read() }
        try restore()
        #expect(try read() == a)
        let verification = try store.verify()
        #expect(verification.isClean, "\(verification.problems)")
    }

    @Test("a value refused as altered is an unreadable record to index verification, counted as a damaged one is; one under a key the provider lacks stops it",
          arguments: BundledEngines.all)
    func refusedValuesAreUnreadable(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let members = Array(ValueTransformTests.members.prefix(8))
        let store = try Self.open(kind, dir.path)
        defer { try? store.close() }
        try store.withTransaction { ctx in for member in members { try ctx.insert(member) } }
        try Self.rewrite(store, KeyCodec.encode("Member", 3)) { $0[$0.count - 1] ^= 0x01 }  // its tag
        let results = try store.withReadTransaction { ctx in try ctx.verifyIndexes(Member.self) }
        #expect(results.count == Member.indexes.count && results.allSatisfy { $0.unreadableRecords == 1 })
        #expect(throws: RecordError.self) { try store.withReadTransaction { ctx in try ctx.fetch(Member.self, .all.equal(3)) } }
        #expect(try store.withReadTransaction { ctx in try ctx.fetch(Member.self, .all.equal(4)) } == members[4])
        // A value under a key the provider does not hold stops verification: every value under
        // that key would be left out.
        let original = try #require(try store.engine.read { tx in try tx.get(KeyCodec.encode("Member", 5)) })
        let fieldsStart = original.firstIndex { $0 < 0x80 }! + 1
        try Self.rewrite(store, KeyCodec.encode("Member", 5)) { $0[fieldsStart] ^= 0xFF }
        #expect(throws: RecordError.self) { try store.withReadTransaction { ctx in try ctx.verifyIndexes(Member.self) } }
    }

    @Test("a store opens only with its key: another key, no encryption, or encryption of a plain store is refused at open; a copy keeps the salt and opens with the key")
    func keysAtOpen() throws {
        let dir = TemporaryDirectory(), plainDir = TemporaryDirectory(), copyDir = TemporaryDirectory()
        defer { dir.cleanup(); plainDir.cleanup(); copyDir.cleanup() }
        let member = ValueTransformTests.members[5]
        try Self.open(Self.lmdb, dir.path).withTransaction { ctx in try ctx.insert(member) }
        let name = "aes-256-gcm key \(Self.key.idDescription)", otherName = "aes-256-gcm key \(Self.otherKey.idDescription)"
        #expect(Self.key.id != Self.otherKey.id)
        #expect(throws: RecordError.manifestMismatch(detail: "values written with the transforms [\(name)], opened with [\(otherName)]")) {
            try Self.open(Self.lmdb, dir.path, Self.otherKey)
        }
        #expect(throws: RecordError.manifestMismatch(detail: "values written with the transforms [\(name)], opened with none")) {
            try Self.open(Self.lmdb, dir.path, nil)
        }
        try Self.open(Self.lmdb, plainDir.path, nil).withTransaction { ctx in try ctx.insert(member) }
        #expect(throws: RecordError.manifestMismatch(detail: "values written with the transforms none, opened with [\(name)]")) {
            try Self.open(Self.lmdb, plainDir.path)
        }
        let store = try Self.open(Self.lmdb, dir.path)
        try store.copy(to: .lmdb(path: copyDir.path))
        try store.close()
        let copy = try Self.open(Self.lmdb, copyDir.path)
        #expect(try copy.withReadTransaction { ctx in try ctx.select(Member.self) } == [member])
        try copy.close()
    }

    @Test("a store without a transform salt, or with a salt of another length, is refused at open")
    func damagedSalt() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try Self.open(Self.lmdb, dir.path).close()
        let engine = try Self.lmdb.open(dir.path, EngineOptions(mode: .create, durability: .full))
        try engine.write { tx in try tx.put([1, 2, 3], forKey: SystemKey.transformSalt) }
        try engine.close()
        #expect(throws: RecordError.manifestMismatch(detail: "the store's transform salt is 3 bytes, not 16")) { try Self.open(Self.lmdb, dir.path) }
        let again = try Self.lmdb.open(dir.path, EngineOptions(mode: .create, durability: .full))
        try again.write { tx in _ = try tx.delete(SystemKey.transformSalt) }
        try again.close()
        #expect(throws: RecordError.manifestMismatch(detail: "the store's values pass through transforms, but it holds no transform salt")) {
            try Self.open(Self.lmdb, dir.path)
        }
    }

    @Test("values sealed under an earlier key are read with a provider that holds it; the same bytes and salt always derive the same keys")
    func earlierKeys() throws {
        let salt: [UInt8] = Array(0xA0...0xAF)
        let recordKey: [UInt8] = [2, 0x41, 0]
        let fields: [UInt8] = Array("some fields".utf8)
        let old = try RecordEncryption(key: Self.otherKey).bound(toStore: salt)
        var sealed: [UInt8] = []
        try fields.withUnsafeBytes { f in try recordKey.withUnsafeBytes { try old.apply(f, header: $0, to: &sealed) } }
        #expect(sealed.count == fields.count + RecordEncryption.overhead)
        #expect(sealed.firstRange(of: fields) == nil)

        let rotated = try RecordEncryption(keys: StaticKeys(current: Self.key, previous: [Self.otherKey])).bound(toStore: salt)
        var opened: [UInt8] = []
        try sealed.withUnsafeBytes { s in try recordKey.withUnsafeBytes { try rotated.reverse(s, header: $0, to: &opened) } }
        #expect(opened == fields)
        let currentOnly = try RecordEncryption(key: Self.key).bound(toStore: salt)
        #expect(throws: ValueTransformError(.missingKey, "sealed under key \(Self.otherKey.idDescription), which the key provider does not hold")) {
            var out: [UInt8] = []
            try sealed.withUnsafeBytes { s in try recordKey.withUnsafeBytes { try currentOnly.reverse(s, header: $0, to: &out) } }
        }
        let anotherStore = try RecordEncryption(keys: StaticKeys(current: Self.key, previous: [Self.otherKey])).bound(toStore: Array(0xB0...0xBF))
        #expect(throws: ValueTransformError.self) {
            var out: [UInt8] = []
            try sealed.withUnsafeBytes { s in try recordKey.withUnsafeBytes { try anotherStore.reverse(s, header: $0, to: &out) } }
        }
        struct Unavailable: KeyProvider {
            struct Offline: Error, CustomStringConvertible { var description: String { "the vault is offline" } }
            func currentKey() -> EncryptionKey { EncryptionTests.key }
            func key(withID id: UInt32) throws -> EncryptionKey? { throw Offline() }
        }
        let offline = try RecordEncryption(keys: Unavailable()).bound(toStore: salt)
        #expect(throws: ValueTransformError(.keyUnavailable, "the key provider failed to give key \(Self.otherKey.idDescription): the vault is offline")) {
            var out: [UInt8] = []
            try sealed.withUnsafeBytes { s in try recordKey.withUnsafeBytes { try offline.reverse(s, header: $0, to: &out) } }
        }
        #expect(EncryptionKey(passphrase: "correct horse battery staple", salt: "app").id == EncryptionKey(passphrase: "correct horse battery staple", salt: "app").id)
        #expect(EncryptionKey(passphrase: "correct horse battery staple", salt: "app").id != EncryptionKey(passphrase: "correct horse battery staple", salt: "app2").id)
        // Empty inputs derive too (libcrypto takes a null pointer for none at all): HKDF of an
        // empty passphrase with an empty salt, as Python's cryptography derives it.
        let emptyDerived = "647fd3afbd6f9d9d04801c983e2be06fbac2ea9f65705d1d0b5b469fdabb280c"
        #expect(EncryptionKey(passphrase: "", salt: "").withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() } == emptyDerived)
        #expect(EncryptionKey(passphrase: "", salt: "").id != EncryptionKey(passphrase: "", salt: "app").id)
        #expect(EncryptionKey.random().id != EncryptionKey.random().id)
        #expect(throws: EncryptionKeyError.wrongLength(31)) { try EncryptionKey(bytes: [UInt8](repeating: 0, count: 31)) }
    }
}
