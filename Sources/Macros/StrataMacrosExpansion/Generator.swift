/// Writes the source of the extension `@IndexKeyRecord` adds.
struct Generator {
    let keys: [StoredProperty]
    let fields: [StoredProperty]
    let keyspace: String
    /// The explicit version, if the attribute gives one.
    let version: UInt32?
    /// Format 1's default version of this declaration (only without an explicit one).
    let formatOneVersion: UInt32?
    /// `"public "`, `"package "` or `""`: the struct's own visibility.
    let access: String
    /// Whether the attribute asks for `Sendable` conformances (`sendable: true`).
    let sendable: Bool
    /// The struct's `@Index` attributes.
    let indexes: [IndexDeclaration]

    func extensionSource(for type: String) -> String {
        var lines = ["extension \(type): StrataRecords.Record\(sendable ? ", Swift.Sendable" : "") {"]
        let version = self.version.map { ", version: \($0)" } ?? ""
        let formatOne = formatOneVersion.map { ", formatOneVersion: \($0)" } ?? ""
        lines.append("    \(access)static let recordType = StrataRecords.RecordType(")
        lines.append("        keyspace: \(literal(keyspace))\(version),")
        lines.append("        key: [" + keys.map { "(\(literal($0.name)), \($0.type).self)" }.joined(separator: ", ") + "],")
        lines.append("        fields: [" + fields.map { "(\(literal($0.name)), \(format(of: $0)))" }.joined(separator: ", ") + "]\(formatOne))")
        lines.append("")
        let paths = (keys + fields).map { "\(literal($0.name)): \\Self.\($0.name)" }.joined(separator: ", ")
        lines.append("    \(access)static var storedKeyPaths: [Swift.String: Swift.PartialKeyPath<Self>] {")
        lines.append("        [\(paths)]")
        lines.append("    }")
        lines.append("")
        lines.append("    \(access)func writeKey(to key: inout StrataKeyCodec.KeyWriter) {")
        lines += keys.map { "        key.append(self.\($0.name))" }
        lines.append("    }")
        lines += indexKey()
        lines.append("")
        lines.append("    \(access)func writeFields(to fields: inout StrataRecords.FieldWriter) {")
        lines += fields.map { field in
            switch field.storage {
            case .value: return "        fields.write(self.\(field.name))"
            case .json: return "        fields.writeJSON(self.\(field.name))"
            case .codec(let codec): return "        fields.write(self.\(field.name), codec: \(codec).self)"
            }
        }
        lines.append("    }")
        lines.append("")
        lines.append("    \(access)init(key: inout StrataKeyCodec.KeyReader, fields: inout StrataRecords.FieldReader) throws {")
        lines += keys.map { "        self.\($0.name) = try key.read(\($0.type).self)" }
        lines += fields.map { field in
            switch field.storage {
            case .value: return "        self.\(field.name) = try fields.read(\(field.type).self)"
            case .json: return "        self.\(field.name) = try fields.readJSON(\(field.type).self)"
            case .codec(let codec): return "        self.\(field.name) = try fields.read(codec: \(codec).self)"
            }
        }
        lines.append("    }")
        lines += queries()
        lines += indexDeclarations(for: type)
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    /// For each `@Index`: a struct holding the ``RecordIndex`` with typed queries on its
    /// components (the key's shapes and rules), a static property of it, and `indexes`.
    private func indexDeclarations(for type: String) -> [String] {
        guard !indexes.isEmpty else { return [] }
        var lines: [String] = [""]
        let ctx = "in __ctx: StrataRecords.TransactionContext"
        for index in indexes {
            let wrapper = index.name.prefix(1).uppercased() + index.name.dropFirst() + "Index"
            let components = index.components.map { component in
                component.multiValued ? ".each(\(literal(component.name)), \\\(type).\(component.name))"
                    : ".field(\(literal(component.name)), \\\(type).\(component.name))"
            }.joined(separator: ", ")
            if let aggregate = index.aggregate {
                lines += totalsDeclaration(index, aggregate, wrapper: wrapper, components: components, for: type)
                continue
            }
            let options = (index.unique ? ", unique: true" : "") + (index.covering ? ", covering: true" : "")
            lines.append("    /// The index `\(index.name)`: typed queries on \(index.components.map(\.name).joined(separator: ", ")).")
            lines.append("    \(access)struct \(wrapper): Swift.Sendable {")
            lines.append("        \(access)let index = StrataRecords.RecordIndex<\(type)>(\(literal(index.name)), \(components)\(options))")
            let family = QueryFamily(
                components: index.components.map { ($0.name, $0.element) }, indent: "        ", modifiers: access, record: type, blankLineBefore: false,
                skipped: { "a query on index \(index.name) gives its components in order without skipping any: add \($0) first" },
                select: { query, values in values.map { "try index.select(in: __ctx, limit: __limit, order: __order, equal: \($0))" }
                    ?? "try index.select(in: __ctx, \(query), limit: __limit, order: __order)" },
                count: { query, values in values.map { "try index.count(in: __ctx, equal: \($0))" } ?? "try index.count(in: __ctx, \(query))" },
                query: { "StrataRecords.Query(index: index, \($0))" })
            lines += family.members()
            let whole = index.components.map { "\($0.name): \($0.element)" }.joined(separator: ", ")
            let wholeValues = "{ " + index.components.map { "$0.append(\($0.name))" }.joined(separator: "; ") + " }"
            if index.unique {
                lines.append("        \(access)func fetch(\(ctx), \(whole)) throws -> \(type)? {")
                lines.append("            try index.fetch(in: __ctx, equal: \(wholeValues))")
                lines.append("        }")
            } else {
                let message = literal("fetch needs a unique index: \(index.name) is not unique (declare it with unique: true, or use select)")
                lines.append("        @available(*, unavailable, message: \(message))")
                lines.append("        \(access)func fetch(\(ctx), \(whole)) throws -> \(type)? { Swift.fatalError() }")
            }
            lines.append("    }")
            lines.append("    \(access)static let \(index.name) = \(wrapper)()")
        }
        lines.append("    \(access)static let indexes: [StrataRecords.RecordIndex<\(type)>] = [" + indexes.map { "\($0.name).index" }.joined(separator: ", ") + "]")
        return lines
    }

    /// An index of totals (`@Index(…, aggregate:)`): a struct holding the ``RecordIndex`` of an
    /// `AggregateIndex`, reading a group's total by its values, a query's, and every group's.
    private func totalsDeclaration(_ index: IndexDeclaration, _ aggregate: IndexDeclaration.Aggregate, wrapper: String,
                                   components: String, for type: String) -> [String] {
        let ctx = "in __ctx: StrataRecords.TransactionContext"
        let by = components.isEmpty ? "" : (aggregate.isCount ? "by: " : ", by: ") + components
        let maintainer: String
        switch aggregate {
        case .count: maintainer = "StrataRecords.AggregateIndex.count(\(by))"
        case .sum(let property): maintainer = "StrataRecords.AggregateIndex.sum(\(literal(property)), \\\(type).\(property)\(by))"
        }
        var lines: [String] = []
        let what = index.components.isEmpty ? "every record" : index.components.map(\.name).joined(separator: ", ")
        lines.append("    /// The index `\(index.name)`: totals per \(what).")
        lines.append("    \(access)struct \(wrapper): Swift.Sendable {")
        lines.append("        \(access)let index = StrataRecords.RecordIndex<\(type)>(\(literal(index.name)), \(maintainer))")
        if !index.components.isEmpty {
            let whole = index.components.map { "\($0.name): \($0.element)" }.joined(separator: ", ")
            let query = "StrataRecords.RecordQuery.all" + index.components.map { ".equal(\($0.name))" }.joined()
            lines.append("        /// The total of the group with these values: one read.")
            lines.append("        \(access)func total(\(ctx), \(whole)) throws -> StrataRecords.AggregateTotal {")
            lines.append("            try index.total(in: __ctx, \(query))")
            lines.append("        }")
        }
        lines.append("        /// The totals of the groups `query` selects, added up.")
        lines.append("        \(access)func total(\(ctx), _ query: StrataRecords.RecordQuery = .all) throws -> StrataRecords.AggregateTotal {")
        lines.append("            try index.total(in: __ctx, query)")
        lines.append("        }")
        lines.append("        /// Each group `query` selects, with its total, in the order of its values.")
        lines.append("        \(access)func totals(\(ctx), _ query: StrataRecords.RecordQuery = .all, limit: Swift.Int? = nil, order: StrataRecords.Order = .ascending) throws"
                     + " -> [(group: StrataRecords.EncodedIndexKey, total: StrataRecords.AggregateTotal)] {")
        lines.append("            try index.totals(in: __ctx, query, limit: limit, order: order)")
        lines.append("        }")
        lines.append("    }")
        lines.append("    \(access)static let \(index.name) = \(wrapper)()")
        return lines
    }

    /// The record's complete key as a value (Empire's `IndexKey`), and the record's own.
    private func indexKey() -> [String] {
        let parameters = keys.map { "\($0.name): \($0.type)" }.joined(separator: ", ")
        var lines = ["", "    \(access)struct IndexKey: StrataRecords.RecordKey, Swift.Hashable\(sendable ? ", Swift.Sendable" : "") {"]
        lines += keys.map { "        \(access)let \($0.name): \($0.type)" }
        lines.append("        \(access)init(\(parameters)) {")
        lines += keys.map { "            self.\($0.name) = \($0.name)" }
        lines.append("        }")
        lines.append("        \(access)func writeKey(to key: inout StrataKeyCodec.KeyWriter) {")
        lines += keys.map { "            key.append(self.\($0.name))" }
        lines.append("        }")
        lines.append("    }")
        lines.append("")
        lines.append("    \(access)var indexKey: IndexKey { IndexKey(" + keys.map { "\($0.name): self.\($0.name)" }.joined(separator: ", ") + ") }")
        return lines
    }

    /// For every key prefix: select, count and query (a ``Query`` value for paging, cursors and
    /// streams) with a comparison or a plain value on its last component, delete with plain values; fetch and exists with the whole key. A comparison
    /// anywhere else resolves to `KeyComponent`'s unavailable comparison members, whose message
    /// explains the rule; queries that skip leading components or name a field get unavailable
    /// overloads that say what to do instead.
    private func queries() -> [String] {
        var lines: [String] = []
        let ctx = "in __ctx: StrataRecords.TransactionContext"
        let family = QueryFamily(
            components: keys.map { ($0.name, $0.type) }, indent: "    ", modifiers: "\(access)static ", record: "Self", blankLineBefore: true,
            skipped: { "a query gives the key components in order without skipping any: add \($0) first" },
            select: { query, _ in "try __ctx.select(Self.self, \(query), limit: __limit, order: __order)" },
            count: { query, _ in "try __ctx.count(Self.self, \(query))" },
            query: { "StrataRecords.Query(\($0))" },
            afterPrefix: { equal, byValue in
                ["    @discardableResult",
                 "    \(access)static func delete(\(ctx), \(equal)) throws -> Swift.Int {",
                 "        try __ctx.delete(Self.self, \(byValue))",
                 "    }"]
            },
            afterSkipped: { message, plainLast, isWhole in
                var lines = ["    @available(*, unavailable, message: \(message))",
                             "    \(access)static func delete(\(ctx), \(plainLast)) throws -> Swift.Int { Swift.fatalError() }"]
                if isWhole {
                    lines += ["    @available(*, unavailable, message: \(message))",
                              "    \(access)static func fetch(\(ctx), \(plainLast)) throws -> Self? { Swift.fatalError() }",
                              "    @available(*, unavailable, message: \(message))",
                              "    \(access)static func exists(\(ctx), \(plainLast)) throws -> Swift.Bool { Swift.fatalError() }"]
                }
                return lines
            })
        lines += family.members()
        // fetch and exists with part of the key.
        for length in 1..<keys.count {
            let missing = keys[length...].map(\.name).joined(separator: ", ")
            let message = literal("fetch and exists take the whole key: add \(missing) (select finds records by part of the key)")
            let given = keys.prefix(length).map { "\($0.name): \($0.type)" }.joined(separator: ", ")
            lines.append("    @available(*, unavailable, message: \(message))")
            lines.append("    \(access)static func fetch(\(ctx), \(given)) throws -> Self? { Swift.fatalError() }")
            lines.append("    @available(*, unavailable, message: \(message))")
            lines.append("    \(access)static func exists(\(ctx), \(given)) throws -> Swift.Bool { Swift.fatalError() }")
        }
        // A query on a field: only the key can be queried.
        let keyNames = keys.map(\.name).joined(separator: ", ")
        for field in fields where !keys.contains(where: { $0.name == field.name }) {
            let indexed = indexes.first { $0.components.first?.name == field.name }
            let message = literal("'\(field.name)' is a field, not part of the key: queries select by the key (\(keyNames))"
                + (indexed.map { ", or through its index: \($0.name).select(in:\($0.components[0].name):)" } ?? ""))
            let parameter = "\(field.name): \(field.type)"
            lines.append("    @available(*, unavailable, message: \(message))")
            lines.append("    \(access)static func select(\(ctx), \(family.selectParameters(parameter))) throws -> [Self] { Swift.fatalError() }")
            lines.append("    @available(*, unavailable, message: \(message))")
            lines.append("    \(access)static func count(\(ctx), \(parameter)) throws -> Swift.Int { Swift.fatalError() }")
            lines.append("    @available(*, unavailable, message: \(message))")
            lines.append("    \(access)static func query(\(parameter)) -> StrataRecords.Query<Self> { Swift.fatalError() }")
        }
        let whole = keys.map { "\($0.name): \($0.type)" }.joined(separator: ", ")
        let key = "IndexKey(" + keys.map { "\($0.name): \($0.name)" }.joined(separator: ", ") + ")"
        lines.append("")
        lines.append("    \(access)static func fetch(\(ctx), \(whole)) throws -> Self? {")
        lines.append("        try __ctx.fetch(Self.self, key: \(key))")
        lines.append("    }")
        lines.append("    \(access)static func exists(\(ctx), \(whole)) throws -> Swift.Bool {")
        lines.append("        try __ctx.exists(Self.self, key: \(key))")
        lines.append("    }")
        return lines
    }

    /// The expression for a field's format in `recordType`.
    private func format(of field: StoredProperty) -> String {
        switch field.storage {
        case .value: return "StrataRecords.FieldFormat.of(\(field.type).self)"
        case .json: return "StrataRecords.FieldFormat.json"
        case .codec(let codec): return "\(codec).format"
        }
    }
}

/// One family of typed queries on leading components, the key's (static members of the record
/// type) or an index's (members of its wrapper), with the key's rules: plain values for leading
/// components, a ``Comparison`` only on the last one given, none skipped. For each prefix length:
/// `select`, `count` and `query` with a comparison and with a plain value last; for each shape
/// that skips leading components, unavailable overloads whose message says what to add.
struct QueryFamily {
    /// The components' names and (element) types, in order.
    let components: [(name: String, type: String)]
    /// The members' indentation.
    let indent: String
    /// Before `func`: the access level, and `static ` for the key's members.
    let modifiers: String
    /// The record type as the members name it (`Self`, or the type's name inside a wrapper).
    let record: String
    /// Whether each prefix length's members start after a blank line.
    let blankLineBefore: Bool
    /// The message of a query that skips the leading components named.
    let skipped: (String) -> String
    /// The bodies of `select` and `count`: given the query expression, and for equalities the
    /// closure that appends the values (`{ $0.append(a) }`), which a family may use instead.
    let select: (_ query: String, _ values: String?) -> String
    let count: (_ query: String, _ values: String?) -> String
    /// The body of `query`: a ``Query`` value of the query expression.
    let query: (_ query: String) -> String
    /// Members after each prefix length's (the key's `delete`), given the plain parameters and query.
    var afterPrefix: (_ equal: String, _ byValue: String) -> [String] = { _, _ in [] }
    /// Members after each skipping shape's (the key's `delete`, `fetch`, `exists`), given the
    /// message, the plain parameters and whether they run to the last component.
    var afterSkipped: (_ message: String, _ plainLast: String, _ isWhole: Bool) -> [String] = { _, _, _ in [] }

    private var ctx: String { "in __ctx: StrataRecords.TransactionContext" }

    /// `limit` and `order` first, as Empire has them, unless a component takes one of those names
    /// (argument labels match left to right, so such a family keeps them last).
    func selectParameters(_ given: String) -> String {
        let paging = "limit __limit: Swift.Int? = nil, order __order: StrataRecords.Order? = nil"
        let pagingFirst = !components.contains { $0.name == "limit" || $0.name == "order" }
        return pagingFirst ? "\(paging), \(given)" : "\(given), \(paging)"
    }

    func members() -> [String] {
        var lines: [String] = []
        for length in 1...components.count {
            let leading = components.prefix(length - 1)
            let last = components[length - 1]
            let plain = leading.map { "\($0.name): \($0.type)" }
            let chain = "StrataRecords.RecordQuery.all" + leading.map { ".equal(\($0.name))" }.joined()
            let comparison = (plain + ["\(last.name): StrataRecords.Comparison<\(last.type)>"]).joined(separator: ", ")
            let equal = (plain + ["\(last.name): \(last.type)"]).joined(separator: ", ")
            let byComparison = chain + ".then(\(last.name))", byValue = chain + ".equal(\(last.name))"
            // Equalities may encode their values straight into the transaction's buffers.
            let values = "{ " + components.prefix(length).map { "$0.append(\($0.name))" }.joined(separator: "; ") + " }"
            if blankLineBefore { lines.append("") }
            for (parameters, query, given) in [(comparison, byComparison, nil), (equal, byValue, values)] {
                lines += ["\(indent)\(modifiers)func select(\(ctx), \(selectParameters(parameters))) throws -> [\(record)] {",
                          "\(indent)    \(select(query, given))", "\(indent)}"]
            }
            for (parameters, query, given) in [(comparison, byComparison, nil), (equal, byValue, values)] {
                lines += ["\(indent)\(modifiers)func count(\(ctx), \(parameters)) throws -> Swift.Int {",
                          "\(indent)    \(count(query, given))", "\(indent)}"]
            }
            for (parameters, query) in [(comparison, byComparison), (equal, byValue)] {
                lines += ["\(indent)\(modifiers)func query(\(parameters)) -> StrataRecords.Query<\(record)> {",
                          "\(indent)    \(self.query(query))", "\(indent)}"]
            }
            lines += afterPrefix(equal, byValue)
        }
        // A query that skips leading components: the compiler would otherwise try to relabel the
        // arguments and complain about a type. Plain values, and a comparison last.
        for start in 1..<max(components.count, 1) {
            let message = literal(skipped(components.prefix(start).map(\.name).joined(separator: ", ")))
            for end in (start + 1)...components.count {
                let given = components[start..<end]
                let plainLast = given.map { "\($0.name): \($0.type)" }.joined(separator: ", ")
                let comparedLast = (given.dropLast().map { "\($0.name): \($0.type)" } + ["\(given.last!.name): StrataRecords.Comparison<\(given.last!.type)>"])
                    .joined(separator: ", ")
                for shape in [plainLast, comparedLast] {
                    lines += ["\(indent)@available(*, unavailable, message: \(message))",
                              "\(indent)\(modifiers)func select(\(ctx), \(selectParameters(shape))) throws -> [\(record)] { Swift.fatalError() }",
                              "\(indent)@available(*, unavailable, message: \(message))",
                              "\(indent)\(modifiers)func count(\(ctx), \(shape)) throws -> Swift.Int { Swift.fatalError() }",
                              "\(indent)@available(*, unavailable, message: \(message))",
                              "\(indent)\(modifiers)func query(\(shape)) -> StrataRecords.Query<\(record)> { Swift.fatalError() }"]
                }
                lines += afterSkipped(message, plainLast, end == components.count)
            }
        }
        return lines
    }
}

/// `text` as a Swift string literal.
func literal(_ text: String) -> String {
    "\"" + text.flatMap { $0 == "\\" || $0 == "\"" ? ["\\", $0] : [$0] } + "\""
}
