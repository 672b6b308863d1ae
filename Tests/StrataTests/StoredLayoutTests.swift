import StrataBundledEngines
import StrataEngine
import StrataRecords
import Testing

/// Records written by a type with an explicit version, read by a type of the same keyspace,
/// key and fields whose version is derived: the catalog reads the explicit version's records as
/// current ("same fields"), on every read path.
private struct ExplicitNote: Record, Equatable {
    var id: Int, title: String
    static let recordType = RecordType(keyspace: "same-fields", version: 7, key: [("id", Int.self)], fields: [("title", String.fieldFormat)])
    static let byTitle = RecordIndex<ExplicitNote>("byTitle", .field("title", \.title))
    static let indexes = [byTitle]
    init(id: Int, title: String) { (self.id, self.title) = (id, title) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(title) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); title = try fields.read() }
}

private struct DerivedNote: Record, Equatable {
    var id: Int, title: String
    static let recordType = RecordType(keyspace: "same-fields", key: [("id", Int.self)], fields: [("title", String.fieldFormat)])
    static let byTitle = RecordIndex<DerivedNote>("byTitle", .field("title", \.title))
    static let indexes = [byTitle]
    init(id: Int, title: String) { (self.id, self.title) = (id, title) }
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(title) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { id = try key.read(); title = try fields.read() }
}

@Suite("Scans read a type's layout once, after its checks")
struct StoredLayoutTests {
    @Test("records of a same-fields version read as current through every scan, each the first use of the type in its transaction",
          arguments: BundledEngines.all.filter { $0.declaration.capabilities.contains(.persistent) }.map(\.name))
    func sameFieldsOnEveryScan(engine: String) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let kind = try #require(BundledEngines.named(engine))
        #expect(DerivedNote.recordType.version != ExplicitNote.recordType.version)
        // Written by one store, read by another (one store refuses two types on one keyspace).
        let writer = try Store(engine: try kind.open(dir.path + "/store", EngineOptions(mode: .create)))
        try writer.withTransaction { ctx in for i in 0..<5 { try ctx.insert(ExplicitNote(id: i, title: "t\(i)")) } }
        try writer.close()
        let store = try Store(engine: try kind.open(dir.path + "/store", EngineOptions(mode: .openExisting)))
        defer { try? store.close() }
        let expected = (0..<5).map { "t\($0)" }
        // Each read in a transaction of its own, so that the scan is the type's first use there.
        func read(_ body: (TransactionContext) throws -> [String]) throws -> [String] { try store.withReadTransaction(body) }
        #expect(try read { ctx in try ctx.select(DerivedNote.self).map(\.title) } == expected)
        #expect(try read { ctx in
            var titles: [String] = []
            try ctx.forEachView(DerivedNote.self) { view in titles.append(try view.record().title); return true }
            return titles
        } == expected)
        #expect(try read { ctx in
            var titles: [String] = []
            try DerivedNote.byTitle.forEachView(in: ctx) { view in titles.append(try view.record().title); return true }
            return titles
        } == expected)
        #expect(try read { ctx in try DerivedNote.byTitle.select(in: ctx).map(\.title) } == expected)
    }
}
