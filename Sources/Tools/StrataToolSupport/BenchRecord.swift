import Foundation
import StrataRecords
import StrataEngine
import StrataKeyCodec

/// The record-layer workload's record: a composite key (group, id) and a ~100-byte field,
/// written by hand (the benchmark does not depend on the macro). Public and inlinable (this
/// target is not a product), so that the benchmark's code, in another module, specializes and
/// inlines it as a user's code does a record type of its own module.
public struct BenchRecord: Record, Sendable {
    public var group: Int
    public var id: Int
    public var payload: [UInt8]

    public static let recordType = RecordType(keyspace: "Bench", version: 1, key: [("group", Int.self), ("id", Int.self)])

    @inlinable
    public init(index: Int, payload: [UInt8]) {
        group = index / 1_000
        id = index % 1_000
        self.payload = payload
    }

    @inlinable
    public func writeKey(to key: inout KeyWriter) {
        key.append(group)
        key.append(id)
    }

    @inlinable
    public func writeFields(to fields: inout FieldWriter) { fields.write(payload) }

    @inlinable
    public init(key: inout KeyReader, fields: inout FieldReader) throws {
        group = try key.read()
        id = try key.read()
        payload = try fields.read()
    }
}

extension BenchRecord {
    /// A new store in a temporary directory holding `records` bench records (1,000 per
    /// transaction), and its path (for the caller to remove).
    package static func filledStore(_ engine: EngineChoice, records: Int) throws -> (Store, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-reading-\(UUID().uuidString)").path
        let store = try Store(engine: try engine.open(path, EngineOptions(mode: .create)))
        let payload = [UInt8](repeating: 0x61, count: 100)
        for start in stride(from: 0, to: records, by: 1_000) {
            try store.withTransaction { ctx in
                for i in start..<min(start + 1_000, records) { try ctx.insert(BenchRecord(index: i, payload: payload)) }
            }
        }
        return (store, path)
    }
}
