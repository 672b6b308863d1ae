import Foundation
import StrataRecords
import StrataKeyCodec

/// The record-layer workload's record: a composite key (group, id) and a ~100-byte field,
/// written by hand (the benchmark does not depend on the macro).
struct BenchRecord: Record {
    var group: Int
    var id: Int
    var payload: [UInt8]

    static let recordType = RecordType(keyspace: "Bench", version: 1, key: [("group", Int.self), ("id", Int.self)])

    init(index: Int, payload: [UInt8]) {
        group = index / 1_000
        id = index % 1_000
        self.payload = payload
    }

    func writeKey(to key: inout KeyWriter) {
        key.append(group)
        key.append(id)
    }

    func writeFields(to fields: inout FieldWriter) { fields.write(payload) }

    init(key: inout KeyReader, fields: inout FieldReader) throws {
        group = try key.read()
        id = try key.read()
        payload = try fields.read()
    }
}
