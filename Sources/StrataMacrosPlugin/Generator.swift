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

    func extensionSource(for type: String) -> String {
        var lines = ["extension \(type): Strata.Record {"]
        let version = self.version.map { ", version: \($0)" } ?? ""
        let formatOne = formatOneVersion.map { ", formatOneVersion: \($0)" } ?? ""
        lines.append("    \(access)static let recordType = Strata.RecordType(")
        lines.append("        keyspace: \(literal(keyspace))\(version),")
        lines.append("        key: [" + keys.map { "(\(literal($0.name)), \($0.type).self)" }.joined(separator: ", ") + "],")
        lines.append("        fields: [" + fields.map { "(\(literal($0.name)), \(format(of: $0)))" }.joined(separator: ", ") + "]\(formatOne))")
        lines.append("")
        lines.append("    \(access)func writeKey(to key: inout StrataKeyCodec.KeyWriter) {")
        lines += keys.map { "        key.append(self.\($0.name))" }
        lines.append("    }")
        lines.append("")
        lines.append("    \(access)func writeFields(to fields: inout Strata.FieldWriter) {")
        lines += fields.map { field in
            switch field.storage {
            case .value: return "        fields.write(self.\(field.name))"
            case .json: return "        fields.writeJSON(self.\(field.name))"
            case .codec(let codec): return "        fields.write(self.\(field.name), codec: \(codec).self)"
            }
        }
        lines.append("    }")
        lines.append("")
        lines.append("    \(access)init(key: inout StrataKeyCodec.KeyReader, fields: inout Strata.FieldReader) throws {")
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
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    /// For every key prefix: select/count with a comparison or a plain value on its last
    /// component, delete with plain values; and unavailable overloads that explain the shapes
    /// that are not queries.
    private func queries() -> [String] {
        var lines: [String] = []
        let ctx = "in __ctx: Strata.TransactionContext"
        for length in 1...keys.count {
            let leading = keys.prefix(length - 1)
            let last = keys[length - 1]
            let plain = leading.map { "\($0.name): \($0.type)" }
            let chain = "Strata.RecordQuery.all" + leading.map { ".equal(\($0.name))" }.joined()
            let comparison = (plain + ["\(last.name): Strata.Comparison<\(last.type)>"]).joined(separator: ", ")
            let equal = (plain + ["\(last.name): \(last.type)"]).joined(separator: ", ")
            let byComparison = chain + ".then(\(last.name))"
            let byValue = chain + ".equal(\(last.name))"
            lines.append("")
            lines.append("    \(access)static func select(\(ctx), \(comparison), limit __limit: Int? = nil, order __order: Strata.Order = .ascending) throws -> [Self] {")
            lines.append("        try __ctx.select(Self.self, \(byComparison), limit: __limit, order: __order)")
            lines.append("    }")
            lines.append("    \(access)static func select(\(ctx), \(equal), limit __limit: Int? = nil, order __order: Strata.Order = .ascending) throws -> [Self] {")
            lines.append("        try __ctx.select(Self.self, \(byValue), limit: __limit, order: __order)")
            lines.append("    }")
            lines.append("    \(access)static func count(\(ctx), \(comparison)) throws -> Int {")
            lines.append("        try __ctx.count(Self.self, \(byComparison))")
            lines.append("    }")
            lines.append("    \(access)static func count(\(ctx), \(equal)) throws -> Int {")
            lines.append("        try __ctx.count(Self.self, \(byValue))")
            lines.append("    }")
            lines.append("    @discardableResult")
            lines.append("    \(access)static func delete(\(ctx), \(equal)) throws -> Int {")
            lines.append("        try __ctx.delete(Self.self, \(byValue))")
            lines.append("    }")
        }
        // A comparison on a component followed by another component: only the last may be a range.
        for i in 0..<(keys.count - 1) {
            let plain = keys.prefix(i).map { "\($0.name): \($0.type)" }
            let compared = "\(keys[i].name): Strata.Comparison<\(keys[i].type)>"
            for next in ["\(keys[i + 1].name): \(keys[i + 1].type)", "\(keys[i + 1].name): Strata.Comparison<\(keys[i + 1].type)>"] {
                let message = "only the last key component of a query may be a comparison; give \(keys[i].name) a plain value or leave out the components after it"
                lines.append("    @available(*, unavailable, message: \(literal(message)))")
                lines.append("    \(access)static func select(\(ctx), \((plain + [compared, next]).joined(separator: ", ")), limit __limit: Int? = nil, order __order: Strata.Order = .ascending) throws -> [Self] { fatalError() }")
            }
        }
        // A query that skips the leading components.
        for i in 1..<keys.count {
            let skipped = keys.prefix(i).map(\.name).joined(separator: ", ")
            for parameter in ["\(keys[i].name): \(keys[i].type)", "\(keys[i].name): Strata.Comparison<\(keys[i].type)>"] {
                let message = "a query gives the key components in order without skipping any; add \(skipped) first"
                lines.append("    @available(*, unavailable, message: \(literal(message)))")
                lines.append("    \(access)static func select(\(ctx), \(parameter), limit __limit: Int? = nil, order __order: Strata.Order = .ascending) throws -> [Self] { fatalError() }")
            }
        }
        return lines
    }

    /// The expression for a field's format in `recordType`.
    private func format(of field: StoredProperty) -> String {
        switch field.storage {
        case .value: return "Strata.FieldFormat.of(\(field.type).self)"
        case .json: return "Strata.FieldFormat.json"
        case .codec(let codec): return "\(codec).format"
        }
    }

    private func literal(_ text: String) -> String {
        "\"" + text.flatMap { $0 == "\\" || $0 == "\"" ? ["\\", $0] : [$0] } + "\""
    }
}
