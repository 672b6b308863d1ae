import Foundation
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// A value transform for tests: masks every byte and appends one byte derived from the key, so
/// values are not stored in the clear and a value read under another key is refused.
struct MaskingTransform: ValueTransform {
    var name = "test-mask"
    var mask: UInt8 = 0xA5

    struct Refused: Error, CustomStringConvertible {
        var description: String { "the value was not made for this key" }
    }

    static func keyByte(_ key: UnsafeRawBufferPointer) -> UInt8 { key.reduce(0x5A) { $0 &* 31 &+ $1 } }

    func apply(_ fields: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) throws {
        for byte in fields { output.append(byte ^ mask) }
        output.append(Self.keyByte(header))
    }

    func reverse(_ stored: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) throws {
        guard let last = stored.last, last == Self.keyByte(header) else { throw Refused() }
        for byte in stored.dropLast() { output.append(byte ^ mask) }
    }
}

/// The value-transform slot of the record envelope: every read path restores what every write
/// path transformed, and the manifest keeps a store from opening without its transforms.
@Suite("Value transforms")
struct ValueTransformTests {
    static func open(_ kind: EngineKind, _ path: String, _ transforms: [any ValueTransform]) throws -> Store {
        try Store(engine: kind.open(path, EngineOptions(mode: .create, durability: .full)), readOnly: false, transforms: transforms)
    }

    static let members = (0..<40).map {
        Member(id: $0, email: "secret\($0)@example.org", nickname: $0 % 3 == 0 ? nil : "nick\($0)", city: "City\($0 % 4)", age: $0 % 7,
               tags: ["tag\($0 % 5)", "all"])
    }

    /// Whether any stored value (record or covering entry) holds `text` in the clear.
    static func storesInClear(_ store: Store, _ text: String) throws -> Bool {
        var found = false
        try store.dumpRaw { _, value in
            found = found || value.firstRange(of: Array(text.utf8)) != nil
            return !found
        }
        return found
    }

    @Test("with a transform, every read path gives back what was written, and no value is stored in the clear", arguments: TestEngines.all)
    func readsThroughTheChain(kind: EngineKind) throws {
        try Self.checkEveryReadPath(kind, [MaskingTransform()])
    }

    /// Writes members (one overwritten) and people through `transforms`, then reads them back on
    /// every read path (typed, index, covering, views, verify, dump) and checks that no value
    /// holds a member's email in the clear (`hidesValues`), or that one does (a transform that
    /// keeps short values as they are).
    static func checkEveryReadPath(_ kind: EngineKind, _ transforms: [any ValueTransform], hidesValues: Bool = true) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Self.open(kind, dir.path, transforms)
        defer { try? store.close() }
        try store.withTransaction { ctx in
            for member in Self.members { try ctx.insert(member) }
            for person in people { try ctx.insert(person) }
            try ctx.insert(Member(id: 3, email: "secret3-moved@example.org", city: "City9", age: 6, tags: ["moved"]))  // an overwrite
        }
        var expected = Self.members
        expected[3] = Member(id: 3, email: "secret3-moved@example.org", city: "City9", age: 6, tags: ["moved"])
        try store.withReadTransaction { ctx in
            #expect(try ctx.select(Member.self) == expected)
            #expect(try ctx.select(Person.self).count == people.count)
            #expect(try ctx.fetch(Member.self, .all.equal(17)) == expected[17])
            #expect(try Member.byEmail.fetch(in: ctx, .all.equal("secret21@example.org")) == expected[21])  // an entry, then the record
            #expect(try Member.byAgeCovering.select(in: ctx, .all.equal(6)) == expected.filter { $0.age == 6 })  // the entry's own value
            #expect(try Member.byTag.select(in: ctx, .all.equal("moved")) == [expected[3]])
            var viewed: [Member] = []
            try ctx.forEachView(Member.self) { view in
                viewed.append(try view.record())
                return true
            }
            #expect(viewed == expected)
            var coveringViews: [Member] = []
            try Member.byAgeCovering.forEachView(in: ctx, .all.equal(0)) { view in
                coveringViews.append(try view.record())
                return true
            }
            #expect(coveringViews == expected.filter { $0.age == 0 })
        }
        let verification = try store.verify()
        #expect(verification.isClean, "\(verification.problems)")
        #expect(verification.records == expected.count + people.count)
        var dumped = 0
        try store.dump(keyspace: "Member") { result in
            let record = try result.get()
            #expect(record.fields.first { $0.name == "email" }?.value == .string(expected[dumped].email))
            dumped += 1
            return true
        }
        #expect(dumped == expected.count)
        #expect(try Self.storesInClear(store, "secret21@example.org") != hidesValues, "a value in the clear: the chain did not run")
    }

    @Test("the manifest names the chain: a store opens only with the transforms it was written with; without any, its manifest is as before")
    func manifestNamesTheChain() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let kind = BundledEngines.all.first { $0.name == "lmdb" }!
        try Self.open(kind, dir.path, [MaskingTransform()]).withTransaction { ctx in try ctx.insert(Self.members[1]) }
        #expect(throws: RecordError.manifestMismatch(detail: "values written with the transforms [test-mask], opened with none")) {
            try Self.open(kind, dir.path, [])
        }
        #expect(throws: RecordError.manifestMismatch(detail: "values written with the transforms [test-mask], opened with [other]")) {
            try Self.open(kind, dir.path, [MaskingTransform(name: "other")])
        }
        #expect(throws: RecordError.manifestMismatch(detail: "values written with the transforms [test-mask], opened with [test-mask, test-mask]")) {
            try Self.open(kind, dir.path, [MaskingTransform(), MaskingTransform()])
        }
        let reopened = try Self.open(kind, dir.path, [MaskingTransform()])
        #expect(try reopened.withReadTransaction { ctx in try ctx.select(Member.self) } == [Self.members[1]])
        try reopened.close()

        let plainDir = TemporaryDirectory()
        defer { plainDir.cleanup() }
        let plain = try Self.open(kind, plainDir.path, [])
        try plain.withTransaction { ctx in try ctx.insert(Self.members[1]) }
        #expect(try Self.storesInClear(plain, Self.members[1].email), "without transforms, values are the fields as written")
        var manifest: [UInt8]?
        try plain.dumpRaw(.prefix([0x00])) { key, value in
            if key == SystemKey.manifest { manifest = value }
            return true
        }
        #expect(manifest == Manifest.encode(Manifest.Contents(engine: "lmdb", codec: "strata-tuple", codecVersion: 1, format: 2)))
        try plain.close()
        #expect(throws: RecordError.manifestMismatch(detail: "values written with the transforms none, opened with [test-mask]")) {
            try Self.open(kind, plainDir.path, [MaskingTransform()])
        }
    }

    @Test("a value the transform refuses (moved to another key, its checksum made to match) is a corrupt record naming the transform, on every read path")
    func refusedValues() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let kind = BundledEngines.all.first { $0.name == "lmdb" }!
        let store = try Self.open(kind, dir.path, [MaskingTransform()])
        defer { try? store.close() }
        try store.withTransaction { ctx in
            try ctx.insert(Person(lastName: "A", firstName: "a", age: 1))
            try ctx.insert(Person(lastName: "B", firstName: "b", age: 2))
        }
        // B's value, sealed again (a valid checksum) under A's key: only the transform can tell.
        let keyA = KeyCodec.encode("Person", "A", "a"), keyB = KeyCodec.encode("Person", "B", "b")
        try store.engine.write { tx in
            var value = try #require(try tx.get(keyB))
            value.removeLast(4)
            let crc = keyA.withUnsafeBytes { k in value.withUnsafeBytes { RecordChecksum.of(key: k, value: $0) } }
            value += withUnsafeBytes(of: crc.littleEndian, Array.init)
            try tx.put(value, forKey: keyA)
        }
        let refused = RecordError.valueRefused(type: "Person", key: #"["Person","A","a"]"#, transform: "test-mask",
                                               reason: ValueTransformError(.malformed, "the value was not made for this key"))
        #expect(throws: refused) { try store.withReadTransaction { ctx in try ctx.select(Person.self) } }
        #expect(throws: refused) {
            try store.withReadTransaction { ctx in try ctx.forEachView(Person.self) { _ in true } }
        }
        let verification = try store.verify()
        #expect(verification.problems.map(\.kind) == [.undecodableFields])
        #expect(verification.problems.first?.detail == "value: transform test-mask: malformed: the value was not made for this key")
    }

    @Test("the envelope's in-line version read agrees with the field reader on every version prefix: valid, too long, over 32 bits, truncated")
    func versionReadAgrees() throws {
        var random = SeededGenerator(seed: 0xE17E)
        var prefixes: [[UInt8]] = [[], [0x80], [0xFF, 0xFF, 0xFF, 0xFF, 0x0F], [0xFF, 0xFF, 0xFF, 0xFF, 0x10], [0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
                                   [0x80, 0x00], [0x00], [0x7F]]
        for _ in 0..<2_000 {
            prefixes.append((0..<Int.random(in: 0...7, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
        let key: [UInt8] = [1, 2, 3]
        for prefix in prefixes {
            let body = prefix + [0x42]
            let crc = key.withUnsafeBytes { k in body.withUnsafeBytes { RecordChecksum.of(key: k, value: $0) } }
            let value = body + withUnsafeBytes(of: crc.littleEndian, Array.init)
            func outcome(_ open: () throws(RecordEnvelope.Damage) -> RecordEnvelope.Sealed) -> String {
                do throws(RecordEnvelope.Damage) {
                    let sealed = try open()
                    return "\(sealed.version)@\(sealed.fieldsOffset)"
                } catch {
                    return error.detail
                }
            }
            key.withUnsafeBytes { k in
                value.withUnsafeBytes { v in
                    let fast = outcome { () throws(RecordEnvelope.Damage) in try RecordEnvelope.open(key: k, value: v) }
                    let slow = outcome { () throws(RecordEnvelope.Damage) in
                        try RecordEnvelope.openSlowly(UnsafeRawBufferPointer(rebasing: v[..<(v.count - 4)]))
                    }
                    #expect(fast == slow, "\(prefix)")
                }
            }
        }
    }
}
