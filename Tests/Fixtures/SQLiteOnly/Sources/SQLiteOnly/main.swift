import Foundation
import StrataRecords
import StrataSQLite

struct Note: Record, Equatable {
    var id: Int
    var text: String

    static let recordType = RecordType(keyspace: "Note", version: 1, key: [("id", Int.self)])
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(text) }
    init(id: Int, text: String) { (self.id, self.text) = (id, text) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        text = try fields.read()
    }
}

let path = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-only-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: path) }
let store = try Store(.sqlite(path: path))
try store.withTransaction { ctx in
    for i in 1...3 { try ctx.insert(Note(id: i, text: "note \(i)")) }
}
let notes = try store.withReadTransaction { ctx in try Note.select(in: ctx, RecordQuery.all, limit: 10) }
try store.close()
guard notes.map(\.text) == ["note 1", "note 2", "note 3"] else { fatalError("read back \(notes)") }
print("ok: \(notes.count) notes through StrataRecords and StrataSQLite")
