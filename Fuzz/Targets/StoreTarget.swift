import FuzzSupport
import Foundation
import StrataEngine
import StrataMemory
@testable import StrataRecords

/// A whole store image: the input is a list of pairs (a flag byte, a framed key, a value framed
/// by two bytes; with the flag's low bit the value gets a valid record checksum) loaded raw into
/// a memory engine, then opened as a store and read every way, its preparation run. Opening
/// must refuse a foreign or damaged image with a typed error; reads answer or throw; nothing
/// crashes or hangs. The seeds are real stores (records, indexes, catalog, change feed).
enum StoreTarget {
    static let target = FuzzTarget(name: "store", run: run, seeds: seeds)

    static func run(_ input: UnsafeRawBufferPointer) {
        var r = InputReader(input)
        let engine = MemoryEngine()
        do {
            try engine.write { tx in
                while !r.isAtEnd {
                    let flags = r.byte()
                    let key = r.chunk()
                    let chunk = r.chunk(lengthBytes: 2)
                    let value = flags & 1 != 0 ? withChecksum(chunk, key: key) : chunk
                    guard !key.isEmpty else { continue }
                    try tx.put(value, forKey: key)
                }
            }
        } catch {
            return
        }
        let store: Store
        do {
            store = try Store(engine: engine)
        } catch is RecordError {
            return
        } catch is EngineError {
            return
        } catch {
            violated("opening refused the image with an untyped error: \(error)")
        }
        defer { try? store.close() }
        readEverything(store)
        _ = try? store.prepare(Item.self, batchSize: 3).wait()
        _ = try? store.prepare(Volume.self, batchSize: 3).wait()
        readEverything(store)
    }

    /// A store's pairs in the input's framing (values without their checksums, flagged).
    static func image(_ engine: any KeyValueEngine) -> [UInt8] {
        guard let all = try? pairs(of: engine) else { return [] }
        return all.flatMap { pair -> [UInt8] in
            let isRecord = pair.key.first != SystemKey.prefix.first || pair.key.starts(with: SystemKey.changeLog)
            return [isRecord ? 1 : 0] + framed(pair.key) + framed(isRecord ? Array(pair.value.dropLast(4)) : pair.value, lengthBytes: 2)
        }
    }

    static func seeds() -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for (count, feed) in [(0, false), (1, false), (3, true), (6, false)] {
            guard let (engine, store) = try? seededStore(items: count, changeFeed: feed) else { continue }
            seeds.append(image(engine))  // before closing: a closed engine reads nothing
            try? store.close()
        }
        return seeds
    }
}
