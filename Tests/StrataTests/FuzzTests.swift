import Foundation
@testable import StrataRecords
import StrataBundledEngines
import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataMemory
import Testing

/// Random bytes under the record layer: every read returns records or throws RecordError,
/// never traps. `STRATA_FUZZ_ITERATIONS=1000000` for a long run, `STRATA_FUZZ_SEED` to replay.
@Suite("Fuzzing the record decoders")
struct FuzzTests {
    static let iterations = ProcessInfo.processInfo.environment["STRATA_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 20_000
    static let seed = ProcessInfo.processInfo.environment["STRATA_FUZZ_SEED"].flatMap(UInt64.init) ?? 77

    /// Random bytes, biased toward the codecs' special bytes so that valid prefixes occur.
    static func bytes(_ random: inout SeededRandom, max: Int) -> [UInt8] {
        (0..<Int.random(in: 0...max, using: &random)).map { _ in
            [0x00, 0x01, 0x02, 0x14, 0x15, 0x16, 0x21, 0x33, 0x7F, 0x80, 0xFF, UInt8.random(in: 0...255, using: &random)].randomElement(using: &random)!
        }
    }

    /// A value that starts like a real one (the version tag), then random bytes.
    static func value(_ random: inout SeededRandom, version: UInt32) -> [UInt8] {
        var w = FieldWriter()
        w.writeVarint(UInt64(version))
        return (Bool.random(using: &random) ? w.bytes : []) + bytes(&random, max: 40)
    }

    @Test("random keys and values in the Person and Reading keyspaces")
    func fuzz() throws {
        var random = SeededRandom(seed: Self.seed)
        var decoded = 0, refused = 0, refusedByDecoder = 0
        let batches = max(1, Self.iterations / 100)
        for _ in 0..<batches {
            let engine = MemoryEngine()
            let store = try Store(engine: engine)
            // A valid record of each type first, so the catalog holds both keyspaces.
            try store.withTransaction { ctx in
                try ctx.insert(people[0])
                try ctx.insert(Reading(sensor: 1, time: Date(timeIntervalSinceReferenceDate: 0), value: 1))
            }
            try engine.write { tx in
                for _ in 0..<50 {
                    let personKey = KeyCodec.encode("Person") + Self.bytes(&random, max: 24)
                    let readingKey = KeyCodec.encode("Reading") + Self.bytes(&random, max: 24)
                    guard (1...511).contains(personKey.count), (1...511).contains(readingKey.count) else { continue }
                    // Half the values carry a valid checksum, so that the field decoders see the
                    // random bytes; the others must be refused by the checksum.
                    for key in [personKey, readingKey] {
                        var value = Self.value(&random, version: 1)
                        if Bool.random(using: &random) {
                            let checksum = key.withUnsafeBytes { k in value.withUnsafeBytes { RecordChecksum.of(key: k, value: $0) } }
                            value += withUnsafeBytes(of: checksum.littleEndian) { Array($0) }
                        }
                        try tx.put(value, forKey: key)
                    }
                }
            }
            let keys = try engine.read { tx in try tx.keys() }
            try store.withReadTransaction { (ctx: TransactionContext) throws in
                // Each record on its own: a scan would stop at the first bad one.
                for k in keys {
                    for result in [Self.fetchOne(ctx, Person.self, k), Self.fetchOne(ctx, Reading.self, k)] {
                        switch result {
                        case .decoded: decoded += 1
                        case .refused(let byDecoder):
                            refused += 1
                            if byDecoder { refusedByDecoder += 1 }
                        case .other(let error): Issue.record("not a RecordError for key \(k): \(error)")
                        case .none: break
                        }
                    }
                }
            }
            try store.close()
        }
        // The valid records decode; random bytes behind a valid checksum reach the field decoders,
        // which refuse them with typed errors (not the checksum).
        #expect(decoded >= 2 * batches && refused > 0 && refusedByDecoder > 0,
                "decoded \(decoded), refused \(refused), of them by the decoders \(refusedByDecoder)")
    }

    enum Outcome { case decoded, refused(byDecoder: Bool), other(Error), none }

    /// Reads the record stored at `key` (if it is in `R`'s keyspace) through the record layer.
    static func fetchOne<R: Record>(_ ctx: TransactionContext, _: R.Type, _ key: [UInt8]) -> Outcome {
        let prefix = KeyCodec.encode(R.recordType.keyspace)
        guard key.starts(with: prefix) else { return .none }
        do {
            _ = try ctx.fetch(R.self) { $0.write(contentsOf: key.dropFirst(prefix.count)) }
            return .decoded
        } catch let error as RecordError {
            return .refused(byDecoder: !"\(error)".contains("checksum mismatch"))
        } catch {
            return .other(error)
        }
    }
}
