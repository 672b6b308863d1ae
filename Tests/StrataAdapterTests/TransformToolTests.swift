import Foundation
import StrataBundledEngines
import StrataCompression
import StrataEncryption
import StrataEngine
import StrataKeyCodec
import StrataRecords
import Testing

/// A record with a covering index (its entries hold sealed values too).
private struct Secret: Record {
    var id: Int
    var text: String
    static let recordType = RecordType(keyspace: "Secret", key: [("id", Int.self)], fields: [("text", String.fieldFormat)])
    static let indexes = [RecordIndex<Secret>("byText", .field("text", \.text), covering: true)]
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(text) }
    init(id: Int) { (self.id, text) = (id, "secret text \(id)") }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); text = try fields.read() }
}

/// The `strata-transforms` tool built beside the test bundle.
private let transformsTool = URL(fileURLWithPath: strataTool).deletingLastPathComponent().appendingPathComponent("strata-transforms").path

@Suite("strata-transforms: the store tools with keys, and key rotation from the command line")
struct TransformToolTests {
    @Test("strata refuses an encrypted store naming strata-transforms; strata-transforms reads it with its key, rotates it to another, and copies it",
          arguments: BundledEngines.onDisk)
    func encryptedStores(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let (path, copy) = (dir.path + "/store", dir.path + "/copy")
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let old = EncryptionKey.random(), new = EncryptionKey.random()
        let oldFile = dir.path + "/old.key", newFile = dir.path + "/new.key", shortFile = dir.path + "/short.key"
        // One key file as 64 hexadecimal digits and a newline, the other as its 32 bytes.
        try Data((old.withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() } + "\n").utf8).write(to: URL(fileURLWithPath: oldFile))
        try Data(new.withUnsafeBytes(Array.init)).write(to: URL(fileURLWithPath: newFile))
        try Data([1, 2, 3, 4, 5]).write(to: URL(fileURLWithPath: shortFile))
        let store = try Store(kind.configuration(path: path), transforms: [RecordEncryption(key: old)])
        try store.withTransaction { ctx in for id in 0..<30 { try ctx.insert(Secret(id: id)) } }
        try store.close()
        let oldName = "aes-256-gcm key \(old.idDescription)", newName = "aes-256-gcm key \(new.idDescription)"

        let refused = try runProgram(strataTool, ["stats", path])
        #expect(refused.status == 2 && refused.output.contains("its values pass through \(oldName): read it with strata-transforms"), "\(refused.output)")
        let stats = try runProgram(transformsTool, ["stats", path, "--key-file", oldFile])
        #expect(stats.status == 0 && stats.output.contains("values pass through: \(oldName)") && stats.output.contains("keyspace Secret: 30 records")
                && stats.output.contains("values through the transforms: ") && !stats.output.contains("not opened"),
                "\(stats.output)")
        let noKey = try runProgram(transformsTool, ["verify", path])
        #expect(noKey.status == 64 && noKey.output.contains("give its key with --key-file"), "\(noKey.output)")
        let wrongKey = try runProgram(transformsTool, ["dump", path, "--key-file", newFile])
        #expect(wrongKey.status == 2 && wrongKey.output.contains("values written with the transforms [\(oldName)], opened with [\(newName)]"), "\(wrongKey.output)")
        let shortKey = try runProgram(transformsTool, ["verify", path, "--key-file", shortFile])
        #expect(shortKey.status == 64 && shortKey.output.contains("a key file holds 32 bytes or 64 hexadecimal digits, this one 5 bytes"), "\(shortKey.output)")

        // The rotation begins at a writable open with the new key and the old; a byte-for-byte
        // copy made now keeps it under way and verifies with both keys.
        try Store(kind.configuration(path: path), transforms: [RecordEncryption(keys: StaticKeys(current: new, previous: [old]))]).close()
        let midway = try runProgram(transformsTool, ["copy", path, dir.path + "/midway", "--key-file", newFile, "--previous-key-file", oldFile])
        #expect(midway.status == 0 && midway.output.contains("verified: 30 records"), "\(midway.output)")
        let midwayStats = try runProgram(transformsTool, ["stats", dir.path + "/midway", "--key-file", newFile, "--previous-key-file", oldFile])
        #expect(midwayStats.status == 0 && midwayStats.output.contains("key rotation under way, retiring: \(oldName)"), "\(midwayStats.output)")

        let rotated = try runProgram(transformsTool, ["rotate-keys", path, "--key-file", newFile, "--previous-key-file", oldFile, "--batch", "7"])
        #expect(rotated.status == 0 && rotated.output.contains("rotate-keys: 30 records and 30 covering entries re-sealed under key \(new.idDescription)"),
                "\(rotated.output)")
        let again = try runProgram(transformsTool, ["rotate-keys", path, "--key-file", newFile])
        #expect(again.status == 0 && again.output.contains("already sealed under key \(new.idDescription) alone"), "\(again.output)")
        let verified = try runProgram(transformsTool, ["verify", path, "--key-file", newFile])
        #expect(verified.status == 0, "\(verified.output)")
        let stale = try runProgram(transformsTool, ["stats", path, "--key-file", oldFile])
        #expect(stale.status == 2, "\(stale.output)")
        let copied = try runProgram(transformsTool, ["copy", path, copy, "--key-file", newFile])
        #expect(copied.status == 0 && copied.output.contains("verified: 30 records"), "\(copied.output)")
        let dump = try runProgram(transformsTool, ["dump", copy, "--key-file", newFile])
        #expect(dump.status == 0 && dump.output.split(separator: "\n").count == 30 && dump.output.contains("secret text 29"), "\(dump.output)")

        // Copies that change the transforms: the key, none, compression on.
        let rekeyed = try runProgram(transformsTool, ["copy", path, dir.path + "/rekeyed", "--key-file", newFile, "--to-key-file", oldFile])
        #expect(rekeyed.status == 0 && rekeyed.output.contains("verified: 30 records"), "\(rekeyed.output)")
        let rekeyedStats = try runProgram(transformsTool, ["stats", dir.path + "/rekeyed", "--key-file", oldFile])
        #expect(rekeyedStats.status == 0 && rekeyedStats.output.contains("values pass through: \(oldName)"), "\(rekeyedStats.output)")
        let plain = try runProgram(transformsTool, ["copy", path, dir.path + "/plain", "--key-file", newFile, "--to-plain", "--compression", "on"])
        #expect(plain.status == 0 && plain.output.contains("verified: 30 records"), "\(plain.output)")
        let plainStats = try runProgram(strataTool, ["stats", dir.path + "/plain"])
        #expect(plainStats.status == 2 && plainStats.output.contains("its values pass through zstd"), "\(plainStats.output)")
        let zstdStats = try runProgram(transformsTool, ["stats", dir.path + "/plain"])
        #expect(zstdStats.status == 0 && zstdStats.output.contains("values pass through: zstd")
                && zstdStats.output.contains("values through the transforms: ") && zstdStats.output.contains(" without them ("), "\(zstdStats.output)")
        let decompressed = try runProgram(transformsTool, ["copy", dir.path + "/plain", dir.path + "/clear", "--compression", "off"])
        #expect(decompressed.status == 0, "\(decompressed.output)")
        let clear = try runProgram(strataTool, ["dump", dir.path + "/clear"])
        #expect(clear.status == 0 && clear.output.contains("secret text 29"), "\(clear.output)")
        let both = try runProgram(transformsTool, ["copy", path, dir.path + "/both", "--key-file", newFile, "--to-plain", "--to-key-file", oldFile])
        #expect(both.status == 64, "\(both.output)")
    }

    @Test("a store compressed with a dictionary is read with --dictionary-file and refused without it or with another; a copy keeps the dictionary or drops it",
          arguments: BundledEngines.onDisk)
    func dictionaryStores(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let path = dir.path + "/store"
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let samples = (0..<300).map { Array("secret text \($0), kept with its neighbours \($0 % 17)".utf8) }
        let dictionary = try ZstdDictionary.train(samples: samples, size: 1_024)
        let other = try ZstdDictionary.train(samples: samples.map { Array($0.reversed()) }, size: 1_024)
        let (dictionaryFile, otherFile) = (dir.path + "/notes.dict", dir.path + "/other.dict")
        try Data(dictionary.bytes).write(to: URL(fileURLWithPath: dictionaryFile))
        try Data(other.bytes).write(to: URL(fileURLWithPath: otherFile))
        let store = try Store(kind.configuration(path: path), transforms: [RecordCompression(dictionary: dictionary)])
        try store.withTransaction { ctx in for id in 0..<30 { try ctx.insert(Secret(id: id)) } }
        try store.close()
        let name = "zstd dictionary \(dictionary.idDescription)"

        let without = try runProgram(transformsTool, ["stats", path])
        #expect(without.status == 64 && without.output.contains("compressed with a dictionary (\(name)): give it with --dictionary-file"), "\(without.output)")
        let wrong = try runProgram(transformsTool, ["stats", path, "--dictionary-file", otherFile])
        #expect(wrong.status == 64 && wrong.output.contains("its values need \(name)"), "\(wrong.output)")
        let stats = try runProgram(transformsTool, ["stats", path, "--dictionary-file", dictionaryFile])
        #expect(stats.status == 0 && stats.output.contains("values pass through: \(name)") && stats.output.contains("values through the transforms: "),
                "\(stats.output)")
        let verified = try runProgram(transformsTool, ["verify", path, "--dictionary-file", dictionaryFile])
        #expect(verified.status == 0, "\(verified.output)")
        // A copy keeps the dictionary unless told otherwise; --compression off drops it.
        let kept = try runProgram(transformsTool, ["copy", path, dir.path + "/kept", "--dictionary-file", dictionaryFile])
        #expect(kept.status == 0 && kept.output.contains("verified: 30 records"), "\(kept.output)")
        let keptStats = try runProgram(transformsTool, ["stats", dir.path + "/kept", "--dictionary-file", dictionaryFile])
        #expect(keptStats.status == 0 && keptStats.output.contains("values pass through: \(name)"), "\(keptStats.output)")
        let plain = try runProgram(transformsTool, ["copy", path, dir.path + "/plain", "--dictionary-file", dictionaryFile, "--compression", "off"])
        #expect(plain.status == 0 && plain.output.contains("verified: 30 records"), "\(plain.output)")
        let clear = try runProgram(strataTool, ["dump", dir.path + "/plain"])
        #expect(clear.status == 0 && clear.output.contains("secret text 29"), "\(clear.output)")
        let recompressed = try runProgram(transformsTool, ["copy", path, dir.path + "/same", "--dictionary-file", dictionaryFile, "--compression", "on"])
        #expect(recompressed.status == 0 && recompressed.output.contains("verified: 30 records"), "\(recompressed.output)")
        let sameStats = try runProgram(transformsTool, ["stats", dir.path + "/same"])
        #expect(sameStats.status == 0 && sameStats.output.contains("values pass through: zstd\n"), "\(sameStats.output)")
    }
}
