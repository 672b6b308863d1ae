import ArgumentParser
import Foundation
import StrataCompression
import StrataEncryption
import StrataRecords
import StrataStoreTools

/// The stores of the bundled on-disk engines, named by their directories, read with the
/// transforms their manifests name: `zstd` as `RecordCompression` (`zstd dictionary …` with the
/// dictionary of `--dictionary-file`), `aes-256-gcm` as `RecordEncryption` under the keys given
/// (`--key-file`, and `--previous-key-file` for values sealed under an earlier key while a
/// rotation runs).
struct TransformedStores: StoreLocator {
    static let storeForms = "its directory"

    @Option(help: "A file holding the store's encryption key: 32 bytes, or 64 hexadecimal digits.")
    var keyFile: String?

    @Option(help: "A file holding an earlier key (as --key-file), for values still sealed under it.")
    var previousKeyFile: String?

    @Option(help: "A file holding the zstd dictionary the store's values were compressed with (its manifest names it).")
    var dictionaryFile: String?

    @Option(help: "copy, backup: encrypt the copy under the key in this file (as --key-file).")
    var toKeyFile: String?

    @Flag(help: "copy, backup: store the copy's values unencrypted.")
    var toPlain = false

    @Option(help: "copy, backup: compress the copy's values with zstd (on) or not (off); as the source when left out.")
    var compression: Compression?

    enum Compression: String, ExpressibleByArgument { case on, off }

    /// Whether a copy's values are re-sealed: `--to-key-file`, `--to-plain` or `--compression` given.
    private var resealsCopies: Bool { toKeyFile != nil || toPlain || compression != nil }

    /// The copy's chain when `--to-key-file`, `--to-plain` or `--compression` asks for one: the
    /// source's compression and encryption (under `--key-file`'s key) but for what they change.
    func copyTransforms(source: [String]) throws -> [any ValueTransform]? {
        guard resealsCopies else { return nil }
        guard toKeyFile == nil || !toPlain else { throw ToolFailure("--to-key-file and --to-plain: choose one", status: ToolExit.usage) }
        // Compression as asked (on: without a dictionary), else as the source's, with its dictionary.
        let sourceCompression = try source.first { $0.hasPrefix(RecordCompression().name) }.map { try compressionTransform($0, store: "the source") }
        var chain: [any ValueTransform] = []
        switch compression {
        case .on?: chain = [RecordCompression()]
        case .off?: chain = []
        case nil: chain = sourceCompression.map { [$0] } ?? []
        }
        if let toKeyFile {
            chain.append(RecordEncryption(key: try KeyFile.load(toKeyFile)))
        } else if !toPlain, source.contains(where: { $0.hasPrefix(RecordEncryption.algorithm + " ") }) {
            guard let keyFile else { throw ToolFailure("the source is encrypted: give its key with --key-file", status: ToolExit.usage) }
            chain.append(RecordEncryption(key: try KeyFile.load(keyFile)))
        }
        return chain
    }

    /// Reads a copy with the keys it was sealed under: a byte-for-byte copy as its source, one
    /// re-sealed with `--to-key-file`'s key, else `--key-file`'s (no earlier key: none is left).
    func readingCopies() -> TransformedStores {
        guard resealsCopies else { return self }
        var copies = self
        copies.keyFile = toKeyFile ?? keyFile
        copies.previousKeyFile = nil
        return copies
    }

    func transforms(named stored: (transforms: [String], retiring: [String]), store: String) throws -> [any ValueTransform] {
        try stored.transforms.map { name in
            if name.hasPrefix(RecordCompression().name) { return try compressionTransform(name, store: store) }
            guard name.hasPrefix(RecordEncryption.algorithm + " ") else {
                throw ToolFailure("\(store): its values pass through \(name), which this tool does not know")
            }
            guard let keyFile else { throw ToolFailure("\(store): its values are encrypted (\(name)): give its key with --key-file", status: ToolExit.usage) }
            return try RecordEncryption(keys: keys(current: keyFile))
        }
    }

    /// The compression a manifest names `name`: `zstd`, or `zstd dictionary <id>` with the
    /// dictionary of `--dictionary-file`, which must be that one.
    func compressionTransform(_ name: String, store: String) throws -> RecordCompression {
        if name == RecordCompression().name { return RecordCompression() }
        guard let dictionaryFile else {
            throw ToolFailure("\(store): its values are compressed with a dictionary (\(name)): give it with --dictionary-file", status: ToolExit.usage)
        }
        guard let bytes = FileManager.default.contents(atPath: dictionaryFile) else {
            throw ToolFailure("\(dictionaryFile): cannot read the dictionary file", status: ToolExit.usage)
        }
        let compression: RecordCompression
        do {
            compression = RecordCompression(dictionary: try ZstdDictionary(bytes: Array(bytes)))
        } catch {
            throw ToolFailure("\(dictionaryFile): \(error)", status: ToolExit.usage)
        }
        guard compression.name == name else {
            throw ToolFailure("\(store): its values need \(name), and \(dictionaryFile) holds \(compression.name)", status: ToolExit.usage)
        }
        return compression
    }

    /// The key in `current`, and the one in `--previous-key-file` if given.
    func keys(current: String) throws -> StaticKeys {
        StaticKeys(current: try KeyFile.load(current), previous: try previousKeyFile.map { [try KeyFile.load($0)] } ?? [])
    }
}

/// An encryption key kept in a file: its 32 bytes as they are, or as 64 hexadecimal digits
/// (whitespace around them ignored).
enum KeyFile {
    static func load(_ path: String) throws -> EncryptionKey {
        guard let data = FileManager.default.contents(atPath: path) else { throw ToolFailure("\(path): cannot read the key file", status: ToolExit.usage) }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if data.count != 32, text.count == 64, text.allSatisfy(\.isHexDigit) {
            var bytes: [UInt8] = []
            var rest = Substring(text)
            while !rest.isEmpty {
                bytes.append(UInt8(rest.prefix(2), radix: 16)!)
                rest = rest.dropFirst(2)
            }
            return try EncryptionKey(bytes: bytes)
        }
        do {
            return try EncryptionKey(bytes: data)
        } catch {
            throw ToolFailure("\(path): a key file holds 32 bytes or 64 hexadecimal digits, this one \(data.count) bytes", status: ToolExit.usage)
        }
    }
}
