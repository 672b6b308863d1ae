import SwiftSyntaxMacrosTestSupport
import Testing
import XCTest
@testable import StrataMacrosExpansion

final class ExpansionTests: XCTestCase {
    func testSingleKey() {
        assertMacroExpansion(
            """
            @IndexKeyRecord("id")
            struct Tag {
                let id: Int
                var label: String?
            }
            """,
            expandedSource: """
            struct Tag {
                let id: Int
                var label: String?
            }

            extension Tag: StrataRecords.Record {
                static let recordType = StrataRecords.RecordType(
                    keyspace: "Tag",
                    key: [("id", Int.self)],
                    fields: [("label", StrataRecords.FieldFormat.of(String?.self))], formatOneVersion: 491673542)

                static var storedKeyPaths: [Swift.String: Swift.PartialKeyPath<Self>] {
                    ["id": \\Self.id, "label": \\Self.label]
                }

                func writeKey(to key: inout StrataKeyCodec.KeyWriter) {
                    key.append(self.id)
                }

                struct IndexKey: StrataRecords.RecordKey, Swift.Hashable {
                    let id: Int
                    init(id: Int) {
                        self.id = id
                    }
                    func writeKey(to key: inout StrataKeyCodec.KeyWriter) {
                        key.append(self.id)
                    }
                }

                var indexKey: IndexKey {
                    IndexKey(id: self.id)
                }

                func writeFields(to fields: inout StrataRecords.FieldWriter) {
                    fields.write(self.label)
                }

                init(key: inout StrataKeyCodec.KeyReader, fields: inout StrataRecords.FieldReader) throws {
                    self.id = try key.read(Int.self)
                    self.label = try fields.read(String?.self)
                }

                static func select(in __ctx: StrataRecords.TransactionContext, limit __limit: Swift.Int? = nil, order __order: StrataRecords.Order? = nil, id: StrataRecords.Comparison<Int>) throws -> [Self] {
                    try __ctx.select(Self.self, StrataRecords.RecordQuery.all.then(id), limit: __limit, order: __order)
                }
                static func select(in __ctx: StrataRecords.TransactionContext, limit __limit: Swift.Int? = nil, order __order: StrataRecords.Order? = nil, id: Int) throws -> [Self] {
                    try __ctx.select(Self.self, StrataRecords.RecordQuery.all.equal(id), limit: __limit, order: __order)
                }
                static func count(in __ctx: StrataRecords.TransactionContext, id: StrataRecords.Comparison<Int>) throws -> Swift.Int {
                    try __ctx.count(Self.self, StrataRecords.RecordQuery.all.then(id))
                }
                static func count(in __ctx: StrataRecords.TransactionContext, id: Int) throws -> Swift.Int {
                    try __ctx.count(Self.self, StrataRecords.RecordQuery.all.equal(id))
                }
                static func query(id: StrataRecords.Comparison<Int>) -> StrataRecords.Query<Self> {
                    StrataRecords.Query(StrataRecords.RecordQuery.all.then(id))
                }
                static func query(id: Int) -> StrataRecords.Query<Self> {
                    StrataRecords.Query(StrataRecords.RecordQuery.all.equal(id))
                }
                @discardableResult
                static func delete(in __ctx: StrataRecords.TransactionContext, id: Int) throws -> Swift.Int {
                    try __ctx.delete(Self.self, StrataRecords.RecordQuery.all.equal(id))
                }
                @available(*, unavailable, message: "'label' is a field, not part of the key: queries select by the key (id)")
                static func select(in __ctx: StrataRecords.TransactionContext, limit __limit: Swift.Int? = nil, order __order: StrataRecords.Order? = nil, label: String?) throws -> [Self] {
                    Swift.fatalError()
                }
                @available(*, unavailable, message: "'label' is a field, not part of the key: queries select by the key (id)")
                static func count(in __ctx: StrataRecords.TransactionContext, label: String?) throws -> Swift.Int {
                    Swift.fatalError()
                }
                @available(*, unavailable, message: "'label' is a field, not part of the key: queries select by the key (id)")
                static func query(label: String?) -> StrataRecords.Query<Self> {
                    Swift.fatalError()
                }

                static func fetch(in __ctx: StrataRecords.TransactionContext, id: Int) throws -> Self? {
                    try __ctx.fetch(Self.self, key: IndexKey(id: id))
                }
                static func exists(in __ctx: StrataRecords.TransactionContext, id: Int) throws -> Swift.Bool {
                    try __ctx.exists(Self.self, key: IndexKey(id: id))
                }
            }
            """,
            macros: testMacros
        )
    }

    func testCompositeKeyInAnyDeclarationOrderWithFieldsOfSeveralKinds() {
        let source = expanded("""
            @IndexKeyRecord("lastName", "firstName")
            struct Person {
                var tags: [String: Int] = [:]
                let firstName: String
                static var count = 0
                var display: String { firstName }
                let fixed = 3
                var email: String? { didSet {} }
                let lastName: String
                let born: Date
            }
            """)
        let lines = source.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        // Key in the attribute's order, whatever the declaration order.
        XCTAssert(lines.contains(#"key: [("lastName", String.self), ("firstName", String.self)],"#))
        XCTAssert(lines.contains(#"fields: [("tags", StrataRecords.FieldFormat.of([String: Int].self)), ("email", StrataRecords.FieldFormat.of(String?.self)), ("born", StrataRecords.FieldFormat.of(Date.self))], formatOneVersion: \#(versionOf(source)))"#))
        // Key in the attribute's order, in the record's writeKey and in IndexKey's.
        XCTAssertEqual(lines.filter { $0.hasPrefix("key.append") }, ["key.append(self.lastName)", "key.append(self.firstName)", "key.append(self.lastName)", "key.append(self.firstName)"])
        XCTAssert(lines.contains("var indexKey: IndexKey {") && lines.contains("IndexKey(lastName: self.lastName, firstName: self.firstName)"))
        XCTAssertEqual(lines.filter { $0.hasPrefix("self.") && $0.contains("key.read") }, ["self.lastName = try key.read(String.self)", "self.firstName = try key.read(String.self)"])
        // Fields: stored properties that are not key, in declaration order; static, computed and `let x = v` left out.
        XCTAssertEqual(lines.filter { $0.hasPrefix("fields.write") }, ["fields.write(self.tags)", "fields.write(self.email)", "fields.write(self.born)"])
        XCTAssertEqual(lines.filter { $0.contains("fields.read") }, ["self.tags = try fields.read([String: Int].self)", "self.email = try fields.read(String?.self)", "self.born = try fields.read(Date.self)"])
        // Every prefix: select and count with a comparison or a value on its last component.
        XCTAssert(lines.contains("static func select(in __ctx: StrataRecords.TransactionContext, limit __limit: Swift.Int? = nil, order __order: StrataRecords.Order? = nil, lastName: String, firstName: StrataRecords.Comparison<String>) throws -> [Self] {"))
        XCTAssert(lines.contains("try __ctx.select(Self.self, StrataRecords.RecordQuery.all.equal(lastName).then(firstName), limit: __limit, order: __order)"))
        XCTAssert(lines.contains("static func select(in __ctx: StrataRecords.TransactionContext, limit __limit: Swift.Int? = nil, order __order: StrataRecords.Order? = nil, lastName: StrataRecords.Comparison<String>) throws -> [Self] {"))
        XCTAssert(lines.contains("static func delete(in __ctx: StrataRecords.TransactionContext, lastName: String, firstName: String) throws -> Swift.Int {"))
        XCTAssert(lines.contains("static func count(in __ctx: StrataRecords.TransactionContext, lastName: String) throws -> Swift.Int {"))
        // The whole key: fetch and exists. A misplaced comparison needs no overload of its own (the
        // record layer's unavailable comparison members explain it; see Tests/CompileChecks).
        XCTAssert(lines.contains("static func fetch(in __ctx: StrataRecords.TransactionContext, lastName: String, firstName: String) throws -> Self? {"))
        XCTAssert(lines.contains("static func exists(in __ctx: StrataRecords.TransactionContext, lastName: String, firstName: String) throws -> Swift.Bool {"))
        // Unavailable overloads that explain: skipping lastName (select, count and query, plain or
        // comparison; delete, fetch, exists: 9), fetch and exists without firstName (2), a query on
        // one of the 3 fields (select, count, query: 9).
        XCTAssertEqual(lines.filter { $0.contains("unavailable") }.count, 20)
        XCTAssert(lines.contains("@available(*, unavailable, message: \"a query gives the key components in order without skipping any: add lastName first\")"))
    }

    /// The format-1 version the expansion passes on (the format-2 one is derived at run time).
    func versionOf(_ source: String) -> String {
        let marker = "formatOneVersion: "
        guard let start = source.range(of: marker)?.upperBound else { return "?" }
        return String(source[start...].prefix { $0.isNumber })
    }

    func testSeveralPropertiesInOneDeclarationShareTheType() {
        let source = expanded("""
            @IndexKeyRecord("x", "y")
            struct Point {
                let x, y: Int
                var label, note: String?
            }
            """)
        let lines = source.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssert(lines.contains("self.x = try key.read(Int.self)") && lines.contains("self.y = try key.read(Int.self)"))
        XCTAssertEqual(lines.filter { $0.contains("fields.read") }, ["self.label = try fields.read(String?.self)", "self.note = try fields.read(String?.self)"])
    }

    func testAPublicStructGetsPublicMembers() {
        let source = expanded("""
            @IndexKeyRecord("id")
            public struct Tag {
                public let id: Int
            }
            """)
        XCTAssert(source.contains("public static let recordType"))
        XCTAssert(source.contains("public static var storedKeyPaths"))
        XCTAssert(source.contains("public init(key: inout StrataKeyCodec.KeyReader"))
        XCTAssert(source.contains("public static func select(in __ctx: StrataRecords.TransactionContext, limit __limit: Swift.Int? = nil, order __order: StrataRecords.Order? = nil, id: Int"))
        XCTAssert(source.contains("public struct IndexKey: StrataRecords.RecordKey, Swift.Hashable {") && source.contains("public let id: Int") && source.contains("public init(id: Int)"))
        XCTAssert(source.contains("public var indexKey: IndexKey"))
        XCTAssert(!source.contains("Sendable"))
    }

    func testSendableOptIn() {
        let source = expanded("""
            @IndexKeyRecord("id", sendable: true)
            public struct Tag {
                public let id: Int
            }
            """)
        XCTAssert(source.contains("extension Tag: StrataRecords.Record, Swift.Sendable {"))
        XCTAssert(source.contains("public struct IndexKey: StrataRecords.RecordKey, Swift.Hashable, Swift.Sendable {"))
    }

    func testKeysNamedLimitOrOrderKeepPagingLast() {
        let source = expanded("""
            @IndexKeyRecord("limit")
            struct Tier {
                let limit: Int
            }
            """)
        XCTAssert(source.contains("static func select(in __ctx: StrataRecords.TransactionContext, limit: Int, limit __limit: Swift.Int? = nil, order __order: StrataRecords.Order? = nil) throws -> [Self] {"))
    }

    func testExplicitKeyspaceAndVersion() {
        let source = expanded("""
            @IndexKeyRecord("code", keyspace: "countries", version: 7)
            struct Country {
                let code: String
            }
            """)
        XCTAssert(source.contains(#"keyspace: "countries", version: 7,"#))
        XCTAssert(!source.contains("formatOneVersion"), "an explicit version was stored as itself in format 1 too")
    }

    func testFieldAttributesChooseTheStoredFormat() {
        let source = expanded("""
            @IndexKeyRecord("id")
            struct Event {
                let id: Int
                @Field(.json) var payload: Payload
                @Field(codec: Celsius.self) var temperature: Double
                var note: String
            }
            """)
        let lines = source.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertEqual(lines.filter { $0.hasPrefix("fields.write") },
                       ["fields.writeJSON(self.payload)", "fields.write(self.temperature, codec: Celsius.self)", "fields.write(self.note)"])
        XCTAssertEqual(lines.filter { $0.contains("fields.read") },
                       ["self.payload = try fields.readJSON(Payload.self)", "self.temperature = try fields.read(codec: Celsius.self)",
                        "self.note = try fields.read(String.self)"])
        XCTAssert(source.contains(#"fields: [("payload", StrataRecords.FieldFormat.json), ("temperature", Celsius.format), ("note", StrataRecords.FieldFormat.of(String.self))]"#))
    }

    func testFormatOneVersionIgnoresFormattingButNotNamesOrTypes() {
        let base = SchemaVersion.formatOne(keys: [.init(name: "id", type: "Int")], fields: [.init(name: "tags", type: "[String:Int]")])
        XCTAssertEqual(base, 1_724_624_172)  // pinned: FNV-1a is the same in every process and build
        func version(_ declaration: String) -> String { versionOf(expanded(declaration)) }
        let plain = version("@IndexKeyRecord(\"id\") struct R { let id: Int\n var tags: [String: Int] }")
        XCTAssertEqual(plain, String(base))
        XCTAssertEqual(version("@IndexKeyRecord(\"id\")\nstruct R {\n  let id :Int // key\n  var tags: [String/*k*/:   Int]\n}"), plain)
        XCTAssertNotEqual(version("@IndexKeyRecord(\"id\") struct R { let id: Int\n var labels: [String: Int] }"), plain)
        XCTAssertNotEqual(version("@IndexKeyRecord(\"id\") struct R { let id: Int\n var tags: [String: Int64] }"), plain)
    }

    /// Each malformed declaration gives one error at the right place, and no expansion.
    func testDiagnostics() {
        let cases: [(source: String, message: String, line: Int, column: Int)] = [
            ("@IndexKeyRecord(\"id\")\nclass Tag {\n    let id: Int = 0\n}", "@IndexKeyRecord applies to a struct", 2, 1),
            ("@IndexKeyRecord()\nstruct Tag {\n    let id: Int\n}",
             "@IndexKeyRecord needs the names of the key properties, e.g. @IndexKeyRecord(\"lastName\", \"firstName\")", 1, 1),
            ("@IndexKeyRecord(\"id\", \"name\")\nstruct Tag {\n    let id: Int\n}", "'name' is not a stored property of Tag", 1, 23),
            ("@IndexKeyRecord(\"id\", \"id\")\nstruct Tag {\n    let id: Int\n}", "'id' is named twice in the key", 1, 23),
            ("@IndexKeyRecord(\"id\")\nstruct Tag {\n    let id: Int\n    var label = \"x\"\n}",
             "stored property 'label' needs a type annotation to be part of a record", 4, 9),
            ("@IndexKeyRecord(\"display\")\nstruct Tag {\n    let id: Int\n    var display: String { \"\\(id)\" }\n}",
             "'display' is not a stored property of Tag", 1, 17),
            ("@IndexKeyRecord(\"id\")\nstruct Box<T> {\n    let id: Int\n}", "@IndexKeyRecord does not support generic structs", 2, 11),
            ("@IndexKeyRecord(\"id\")\nstruct Tag {\n    let id: Int\n    #if os(Linux)\n    var note: String = \"\"\n    #endif\n}",
             "@IndexKeyRecord cannot see properties inside #if; declare them unconditionally", 4, 5),
        ]
        for c in cases {
            // The declaration stays as written, without the attribute.
            let withoutAttribute = c.source.split(separator: "\n", maxSplits: 1).last.map(String.init) ?? ""
            assertMacroExpansion(c.source, expandedSource: withoutAttribute,
                                 diagnostics: [DiagnosticSpec(message: c.message, line: c.line, column: c.column)], macros: testMacros)
        }
    }

    /// `@Field` on a key component, or with an argument it does not understand: one error, no expansion.
    func testFieldAttributeDiagnostics() {
        let cases: [(source: String, expanded: String, message: String, line: Int, column: Int)] = [
            ("@IndexKeyRecord(\"id\")\nstruct Tag {\n    @Field(.json) let id: Int\n}", "struct Tag {\n    let id: Int\n}",
             "'id' is a key component, stored by the key codec: @Field applies to fields only", 1, 17),
            ("@IndexKeyRecord(\"id\")\nstruct Tag {\n    let id: Int\n    @Field(.xml) var note: String\n}",
             "struct Tag {\n    let id: Int\n    var note: String\n}", "@Field takes .json or codec: SomeCodec.self", 4, 5),
        ]
        for c in cases {
            assertMacroExpansion(c.source, expandedSource: c.expanded,
                                 diagnostics: [DiagnosticSpec(message: c.message, line: c.line, column: c.column)], macros: testMacros)
        }
    }
}
