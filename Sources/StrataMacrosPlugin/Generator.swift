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
        let paging = "limit __limit: Swift.Int? = nil, order __order: StrataRecords.Order? = nil"
        for index in indexes {
            let wrapper = index.name.prefix(1).uppercased() + index.name.dropFirst() + "Index"
            let components = index.components.map { component in
                component.multiValued ? ".each(\(literal(component.name)), \\\(type).\(component.name))"
                    : ".field(\(literal(component.name)), \\\(type).\(component.name))"
            }.joined(separator: ", ")
            let options = (index.unique ? ", unique: true" : "") + (index.covering ? ", covering: true" : "")
            let pagingFirst = !index.components.contains { $0.name == "limit" || $0.name == "order" }
            func selectParameters(_ given: String) -> String { pagingFirst ? "\(paging), \(given)" : "\(given), \(paging)" }
            lines.append("    /// The index `\(index.name)`: typed queries on \(index.components.map(\.name).joined(separator: ", ")).")
            lines.append("    \(access)struct \(wrapper): Swift.Sendable {")
            lines.append("        \(access)let index = StrataRecords.RecordIndex<\(type)>(\(literal(index.name)), \(components)\(options))")
            for length in 1...index.components.count {
                let leading = index.components.prefix(length - 1)
                let last = index.components[length - 1]
                let plain = leading.map { "\($0.name): \($0.element)" }
                let chain = "StrataRecords.RecordQuery.all" + leading.map { ".equal(\($0.name))" }.joined()
                let comparison = (plain + ["\(last.name): StrataRecords.Comparison<\(last.element)>"]).joined(separator: ", ")
                let equal = (plain + ["\(last.name): \(last.element)"]).joined(separator: ", ")
                // Equalities encode their values straight into the transaction's buffers (no query value).
                let values = "{ " + index.components.prefix(length).map { "$0.append(\($0.name))" }.joined(separator: "; ") + " }"
                for (parameters, query) in [(comparison, chain + ".then(\(last.name))"), (equal, chain + ".equal(\(last.name))")] {
                    let isEqual = parameters == equal
                    lines.append("        \(access)func select(\(ctx), \(selectParameters(parameters))) throws -> [\(type)] {")
                    lines.append(isEqual ? "            try index.select(in: __ctx, limit: __limit, order: __order, equal: \(values))"
                                         : "            try index.select(in: __ctx, \(query), limit: __limit, order: __order)")
                    lines.append("        }")
                    lines.append("        \(access)func count(\(ctx), \(parameters)) throws -> Swift.Int {")
                    lines.append(isEqual ? "            try index.count(in: __ctx, equal: \(values))" : "            try index.count(in: __ctx, \(query))")
                    lines.append("        }")
                    lines.append("        \(access)func query(\(parameters)) -> StrataRecords.Query<\(type)> {")
                    lines.append("            StrataRecords.Query(index: index, \(query))")
                    lines.append("        }")
                }
            }
            for start in 1..<max(index.components.count, 1) {
                let skipped = index.components.prefix(start).map(\.name).joined(separator: ", ")
                let message = literal("a query on index \(index.name) gives its components in order without skipping any: add \(skipped) first")
                for end in (start + 1)...index.components.count {
                    let given = index.components[start..<end]
                    let plainLast = given.map { "\($0.name): \($0.element)" }.joined(separator: ", ")
                    let comparedLast = (given.dropLast().map { "\($0.name): \($0.element)" } + ["\(given.last!.name): StrataRecords.Comparison<\(given.last!.element)>"])
                        .joined(separator: ", ")
                    for shape in [plainLast, comparedLast] {
                        lines.append("        @available(*, unavailable, message: \(message))")
                        lines.append("        \(access)func select(\(ctx), \(selectParameters(shape))) throws -> [\(type)] { Swift.fatalError() }")
                        lines.append("        @available(*, unavailable, message: \(message))")
                        lines.append("        \(access)func count(\(ctx), \(shape)) throws -> Swift.Int { Swift.fatalError() }")
                        lines.append("        @available(*, unavailable, message: \(message))")
                        lines.append("        \(access)func query(\(shape)) -> StrataRecords.Query<\(type)> { Swift.fatalError() }")
                    }
                }
            }
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
        let paging = "limit __limit: Swift.Int? = nil, order __order: StrataRecords.Order? = nil"
        // Empire puts `limit` first. A key component named `limit` or `order` would then bind to
        // the paging parameter (argument labels match left to right), so such a type keeps them last.
        let pagingFirst = !keys.contains { $0.name == "limit" || $0.name == "order" }
        func selectParameters(_ key: String) -> String { pagingFirst ? "\(paging), \(key)" : "\(key), \(paging)" }
        for length in 1...keys.count {
            let leading = keys.prefix(length - 1)
            let last = keys[length - 1]
            let plain = leading.map { "\($0.name): \($0.type)" }
            let chain = "StrataRecords.RecordQuery.all" + leading.map { ".equal(\($0.name))" }.joined()
            let comparison = (plain + ["\(last.name): StrataRecords.Comparison<\(last.type)>"]).joined(separator: ", ")
            let equal = (plain + ["\(last.name): \(last.type)"]).joined(separator: ", ")
            let byComparison = chain + ".then(\(last.name))"
            let byValue = chain + ".equal(\(last.name))"
            lines.append("")
            lines.append("    \(access)static func select(\(ctx), \(selectParameters(comparison))) throws -> [Self] {")
            lines.append("        try __ctx.select(Self.self, \(byComparison), limit: __limit, order: __order)")
            lines.append("    }")
            lines.append("    \(access)static func select(\(ctx), \(selectParameters(equal))) throws -> [Self] {")
            lines.append("        try __ctx.select(Self.self, \(byValue), limit: __limit, order: __order)")
            lines.append("    }")
            lines.append("    \(access)static func count(\(ctx), \(comparison)) throws -> Swift.Int {")
            lines.append("        try __ctx.count(Self.self, \(byComparison))")
            lines.append("    }")
            lines.append("    \(access)static func count(\(ctx), \(equal)) throws -> Swift.Int {")
            lines.append("        try __ctx.count(Self.self, \(byValue))")
            lines.append("    }")
            lines.append("    \(access)static func query(\(comparison)) -> StrataRecords.Query<Self> {")
            lines.append("        StrataRecords.Query(\(byComparison))")
            lines.append("    }")
            lines.append("    \(access)static func query(\(equal)) -> StrataRecords.Query<Self> {")
            lines.append("        StrataRecords.Query(\(byValue))")
            lines.append("    }")
            lines.append("    @discardableResult")
            lines.append("    \(access)static func delete(\(ctx), \(equal)) throws -> Swift.Int {")
            lines.append("        try __ctx.delete(Self.self, \(byValue))")
            lines.append("    }")
        }
        // A query that skips leading components: the compiler would otherwise try to relabel the
        // arguments and complain about a type. Plain values, and a comparison last where one is valid.
        for start in 1..<max(keys.count, 1) {
            let skipped = keys.prefix(start).map(\.name).joined(separator: ", ")
            let message = literal("a query gives the key components in order without skipping any: add \(skipped) first")
            for end in (start + 1)...keys.count {
                let given = keys[start..<end]
                let plainLast = given.map { "\($0.name): \($0.type)" }.joined(separator: ", ")
                let comparedLast = (given.dropLast().map { "\($0.name): \($0.type)" } + ["\(given.last!.name): StrataRecords.Comparison<\(given.last!.type)>"])
                    .joined(separator: ", ")
                for shape in [plainLast, comparedLast] {
                    lines.append("    @available(*, unavailable, message: \(message))")
                    lines.append("    \(access)static func select(\(ctx), \(selectParameters(shape))) throws -> [Self] { Swift.fatalError() }")
                    lines.append("    @available(*, unavailable, message: \(message))")
                    lines.append("    \(access)static func count(\(ctx), \(shape)) throws -> Swift.Int { Swift.fatalError() }")
                    lines.append("    @available(*, unavailable, message: \(message))")
                    lines.append("    \(access)static func query(\(shape)) -> StrataRecords.Query<Self> { Swift.fatalError() }")
                }
                lines.append("    @available(*, unavailable, message: \(message))")
                lines.append("    \(access)static func delete(\(ctx), \(plainLast)) throws -> Swift.Int { Swift.fatalError() }")
                if end == keys.count {
                    lines.append("    @available(*, unavailable, message: \(message))")
                    lines.append("    \(access)static func fetch(\(ctx), \(plainLast)) throws -> Self? { Swift.fatalError() }")
                    lines.append("    @available(*, unavailable, message: \(message))")
                    lines.append("    \(access)static func exists(\(ctx), \(plainLast)) throws -> Swift.Bool { Swift.fatalError() }")
                }
            }
        }
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
            lines.append("    \(access)static func select(\(ctx), \(selectParameters(parameter))) throws -> [Self] { Swift.fatalError() }")
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

    private func literal(_ text: String) -> String {
        "\"" + text.flatMap { $0 == "\\" || $0 == "\"" ? ["\\", $0] : [$0] } + "\""
    }
}
