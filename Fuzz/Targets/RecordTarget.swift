import FuzzSupport
import Foundation
import StrataEngine
import StrataKeyCodec
import StrataMemory
@testable import StrataRecords

/// A stored record's bytes (envelope, version, every field format, the binary Codable form):
/// the input is a flag byte, a key (length-framed, after the keyspace) and a value, written
/// beside valid records of the same type. With the flag's low bit the value gets a valid
/// checksum, so the decoders behind the checksum see the bytes. Every read must answer or throw;
/// a record that decodes must write and read back equal.
enum RecordTarget {
    static let target = FuzzTarget(name: "record", run: run, seeds: seeds)

    static func run(_ input: UnsafeRawBufferPointer) {
        var r = InputReader(input)
        let flags = r.byte()
        let recordKey = r.chunk()
        let codable = flags & 2 != 0
        let key = KeyCodec.encode(codable ? Volume.keyspace : Item.recordType.keyspace) + recordKey
        let value = flags & 1 != 0 ? withChecksum(Array(r.rest()), key: key) : Array(r.rest())
        guard let (engine, store) = try? seededStore(items: 2) else { violated("the seeded store failed") }
        defer { try? store.close() }
        do {
            try engine.write { tx in try tx.put(value, forKey: key) }
        } catch {
            return  // an oversized key, refused by the engine
        }
        if codable {
            roundTrip(store, Volume.self, key: recordKey, same: ==)
        } else {
            roundTrip(store, Item.self, key: recordKey) { $0.same(as: $1) }
        }
        readEverything(store)
    }

    /// A record that decodes from the stored bytes writes and reads back equal.
    static func roundTrip<R: Record>(_ store: Store, _: R.Type, key: [UInt8], same: (R, R) -> Bool) {
        guard let record = (try? store.withReadTransaction { (ctx: TransactionContext) in try ctx.fetch(R.self) { $0.write(contentsOf: key) } }) ?? nil
        else { return }
        do {
            let fresh = try Store(engine: MemoryEngine())
            defer { try? fresh.close() }
            let again = try fresh.withTransaction { ctx -> R? in
                try ctx.insert(record)
                var k = KeyWriter()
                record.writeKey(to: &k)
                return try ctx.fetch(R.self) { $0.write(contentsOf: k.bytes) }
            }
            guard let again, same(record, again) else { violated("\(record) read back as \(String(describing: again))") }
        } catch let error as RecordError {
            // A decoded record may still be refused on write (a unique value another record holds,
            // a JSON field with a NaN): typed, and fine.
            _ = error
        } catch {
            violated("writing back \(record) failed with \(error)")
        }
    }

    static func seeds() -> [[UInt8]] {
        guard let (engine, _) = try? seededStore(items: 6), let all = try? pairs(of: engine) else { return [] }
        var seeds: [[UInt8]] = []
        for (keyspace, flag) in [(Item.recordType.keyspace, UInt8(1)), (Volume.keyspace, 3)] {
            let prefix = KeyCodec.encode(keyspace)
            for (key, value) in all where key.starts(with: prefix) && key.count > prefix.count {
                // Stored without its checksum: the flag's low bit adds a valid one.
                seeds.append([flag] + framed(Array(key.dropFirst(prefix.count))) + value.dropLast(4))
            }
        }
        return seeds
    }
}
