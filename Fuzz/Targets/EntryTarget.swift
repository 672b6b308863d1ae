import FuzzSupport
import Foundation
import StrataEngine
import StrataKeyCodec
@testable import StrataRecords

/// The store's own entries (RecordFormat.md): the catalog entry of a keyspace, an index
/// definition and the index catalog of a keyspace, the manifest, the store-wide features, the
/// change feed's settings and chunks, and the format upgrade's progress. The first byte picks
/// the decoder. Each entry that decodes must encode to bytes that decode to an equal entry.
enum EntryTarget {
    static let decoders = ["catalog", "index", "index catalog", "manifest", "features", "feed settings", "chunk", "upgrade progress"]
    static let target = FuzzTarget(name: "entries", run: run, seeds: seeds)

    static func run(_ input: UnsafeRawBufferPointer) {
        var r = InputReader(input)
        let which = Int(r.byte()) % decoders.count
        if which == 6 { return chunk(&r) }
        let bytes = Array(r.rest())
        func same<T: Equatable>(_ decoded: T, _ again: () throws -> T) {
            do {
                let back = try again()
                if back != decoded { violated("\(decoders[which]): \(decoded) came back as \(back)") }
            } catch {
                violated("\(decoders[which]): \(decoded) decoded, its encoding does not: \(error)")
            }
        }
        switch which {
        case 0:
            guard let entry = try? CatalogEntry(decoding: bytes, keyspace: "K") else { return }
            same(entry) { try CatalogEntry(decoding: entry.encoded(), keyspace: "K") }
        case 1:
            guard let index = try? bytes.withUnsafeBytes({ try StoredIndex(decoding: $0, keyspace: "K", name: "i") }) else { return }
            same(index) { try index.encoded().withUnsafeBytes { try StoredIndex(decoding: $0, keyspace: "K", name: "i") } }
        case 2:
            _ = try? IndexCatalog.decodeStored(bytes, keyspace: "K")
        case 3:
            guard let manifest = try? Manifest.decode(bytes) else { return }
            same(manifest) { try Manifest.decode(Manifest.encode(manifest)) }
        case 4:
            guard let features = try? Manifest.decodeFeatures(bytes) else { return }
            same(features) { try Manifest.decodeFeatures(Manifest.encodeFeatures(features)) }
        case 5:
            guard let settings = try? ChangeLog.Settings(decoding: bytes) else { return }
            same(settings) { try ChangeLog.Settings(decoding: settings.encoded()) }
        default:
            guard let progress = try? FormatUpgrade.Progress(decoding: bytes) else { return }
            same(progress.encoded()) { try FormatUpgrade.Progress(decoding: progress.encoded()).encoded() }
        }
    }

    /// A change feed chunk: a key (framed), then the value; with the second byte's low bit the
    /// value gets a valid checksum. A chunk that decodes encodes back to the same bytes.
    static func chunk(_ r: inout InputReader) {
        let flags = r.byte()
        let feed = Int(r.byte())
        let key = r.chunk()
        let value = flags & 1 != 0 ? withChecksum(Array(r.rest()), key: key) : Array(r.rest())
        let decoded = key.withUnsafeBytes { k in value.withUnsafeBytes { try? ChangeLog.decodeChunk(key: k, value: $0, feed: feed) } }
        guard let chunk = decoded else { return }
        let again = ChangeLog.encodeChunk(key: key, committedAt: chunk.committedAt, writer: chunk.writer, total: chunk.total,
                                          chunk.changes[...])
        let back = key.withUnsafeBytes { k in again.withUnsafeBytes { try? ChangeLog.decodeChunk(key: k, value: $0, feed: feed) } }
        guard let back, back.changes == chunk.changes, back.version == chunk.version, back.total == chunk.total,
              back.writer == chunk.writer, back.committedAt == chunk.committedAt
        else { violated("chunk \(chunk) came back as \(String(describing: back))") }
    }

    static func seeds() -> [[UInt8]] {
        guard let (engine, store) = try? seededStore(items: 4, changeFeed: true), let all = try? pairs(of: engine),
              let settings = try? engine.read({ tx in try ChangeLog.settings(in: tx) })
        else { return [] }
        try? store.close()
        var seeds: [[UInt8]] = []
        func system(_ prefix: [UInt8]) -> [(key: [UInt8], value: [UInt8])] { all.filter { $0.key.starts(with: prefix) } }
        for (_, value) in system(SystemKey.prefix + KeyCodec.encode("keyspace")) { seeds.append([0] + value) }
        for (_, value) in system(SystemKey.indexDefinitions) { seeds.append([1] + value) }
        if let catalog = try? engine.read({ tx in try IndexCatalog.storedBytes(IndexCatalog.catalogRange(keyspace: "Item"), in: tx) }) {
            seeds.append([2] + catalog)
        }
        for (_, value) in system(SystemKey.manifest) { seeds.append([3] + value) }
        seeds.append([3] + Manifest.encode(Manifest.Contents(engine: "lmdb", codec: "strata-tuple", codecVersion: 1, format: 2,
                                                              transforms: ["mask"])))
        for (_, value) in system(SystemKey.features) { seeds.append([4] + value) }
        seeds.append([4] + Manifest.encodeFeatures(["changefeed", "index-kind"]))
        for (_, value) in system(SystemKey.changeFeed) { seeds.append([5] + value) }
        for (key, value) in system(SystemKey.changeLog) {
            seeds.append([6, 1, UInt8(truncatingIfNeeded: settings.feed)] + framed(key) + value.dropLast(4))
        }
        let report = FormatUpgradeReport(fromFormat: 1, converted: 10, damaged: 1, firstDamagedKeys: [[1, 2]], untouched: 3, batches: 2)
        seeds.append([7] + FormatUpgrade.Progress(report: report, after: [0, 5, 9]).encoded())
        return seeds
    }
}
