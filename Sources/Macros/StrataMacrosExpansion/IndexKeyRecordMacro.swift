import StrataSchemaHash
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Field(.json)`, `@Field(codec: C.self)`: a marker read by `@IndexKeyRecord`; adds nothing itself.
public struct FieldMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] { [] }
}

/// `@Index("byEmail", "email", unique: true)`: a marker read by `@IndexKeyRecord`; adds nothing itself.
public struct IndexMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] { [] }
}

/// `@IndexKeyRecord("a", "b")`: the Record conformance and typed queries of a struct.
public struct IndexKeyRecordMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: introducer(of: declaration), message: RecordDiagnostic.notAStruct))
            return []
        }
        if let generics = structDecl.genericParameterClause {
            // Static stored properties are not allowed in generic types, and every specialization
            // would share one keyspace.
            context.diagnose(Diagnostic(node: Syntax(generics), message: RecordDiagnostic.generic))
            return []
        }
        guard let arguments = Arguments(node, context) else { return [] }
        guard let properties = StoredProperty.all(in: structDecl, context) else { return [] }

        // Resolve the key names to stored properties, in the attribute's order.
        var keys: [StoredProperty] = []
        var seen: Set<String> = []
        for (name, literal) in arguments.keyNames {
            guard seen.insert(name).inserted else {
                context.diagnose(Diagnostic(node: Syntax(literal), message: RecordDiagnostic.duplicateKey(name)))
                return []
            }
            guard let property = properties.first(where: { $0.name == name }) else {
                context.diagnose(Diagnostic(node: Syntax(literal), message: RecordDiagnostic.notAStoredProperty(name, structDecl.name.text)))
                return []
            }
            if property.storage != .value {
                context.diagnose(Diagnostic(node: Syntax(literal), message: RecordDiagnostic.fieldAttributeOnKey(name)))
                return []
            }
            keys.append(property)
        }
        let fields = properties.filter { !seen.contains($0.name) }
        guard let indexes = IndexDeclaration.all(on: structDecl, properties: properties, context) else { return [] }
        let typeName = type.tokens(viewMode: .sourceAccurate).map(\.text).joined()
        let keyspace = arguments.keyspace ?? typeName
        // Without an explicit version, the version is derived at run time from the field formats;
        // format 1's hash of the spelled types is kept to read what format-1 stores hold.
        let formatOneVersion = arguments.version == nil ? SchemaVersion.formatOne(keys: keys, fields: fields) : nil
        // Members as visible as the struct: public for a public struct, else the default.
        let modifiers = structDecl.modifiers.map(\.name.text)
        let access = modifiers.contains("public") || modifiers.contains("open") ? "public " : modifiers.contains("package") ? "package " : ""
        let source = Generator(keys: keys, fields: fields, keyspace: keyspace, version: arguments.version, formatOneVersion: formatOneVersion,
                               access: access, sendable: arguments.sendable, indexes: indexes)
            .extensionSource(for: typeName)
        return [try ExtensionDeclSyntax("\(raw: source)")]
    }

    /// The `class`, `enum`, `actor`, `protocol` or `extension` keyword, where the error belongs.
    private static func introducer(of declaration: some DeclGroupSyntax) -> Syntax {
        if let d = declaration.as(ClassDeclSyntax.self) { return Syntax(d.classKeyword) }
        if let d = declaration.as(EnumDeclSyntax.self) { return Syntax(d.enumKeyword) }
        if let d = declaration.as(ActorDeclSyntax.self) { return Syntax(d.actorKeyword) }
        if let d = declaration.as(ProtocolDeclSyntax.self) { return Syntax(d.protocolKeyword) }
        if let d = declaration.as(ExtensionDeclSyntax.self) { return Syntax(d.extensionKeyword) }
        return Syntax(declaration)
    }
}

/// The attribute's arguments.
struct Arguments {
    var keyNames: [(String, StringLiteralExprSyntax)] = []
    var keyspace: String?
    var version: UInt32?
    var sendable = false

    init?(_ node: AttributeSyntax, _ context: some MacroExpansionContext) {
        let list = node.arguments?.as(LabeledExprListSyntax.self) ?? []
        for argument in list {
            switch argument.label?.text {
            case nil:
                guard let literal = argument.expression.as(StringLiteralExprSyntax.self), let text = literal.representedLiteralValue else {
                    context.diagnose(Diagnostic(node: Syntax(argument.expression), message: RecordDiagnostic.keyNameNotALiteral))
                    return nil
                }
                keyNames.append((text, literal))
            case "keyspace":
                guard let text = argument.expression.as(StringLiteralExprSyntax.self)?.representedLiteralValue, !text.isEmpty else {
                    context.diagnose(Diagnostic(node: Syntax(argument.expression), message: RecordDiagnostic.keyspaceNotALiteral))
                    return nil
                }
                keyspace = text
            case "sendable":
                guard let literal = argument.expression.as(BooleanLiteralExprSyntax.self) else {
                    context.diagnose(Diagnostic(node: Syntax(argument.expression), message: RecordDiagnostic.sendableNotALiteral))
                    return nil
                }
                sendable = literal.literal.tokenKind == .keyword(.true)
            case "version":
                guard let literal = argument.expression.as(IntegerLiteralExprSyntax.self), let value = UInt32(literal.literal.text) else {
                    context.diagnose(Diagnostic(node: Syntax(argument.expression), message: RecordDiagnostic.versionNotALiteral))
                    return nil
                }
                version = value
            default:
                break
            }
        }
        if keyNames.isEmpty {
            context.diagnose(Diagnostic(node: Syntax(node), message: RecordDiagnostic.noKeyNames))
            return nil
        }
    }
}

/// A stored instance property that becomes part of the record.
struct StoredProperty {
    /// How a field is stored: its type's FieldValue format, or what its `@Field` attribute says.
    enum Storage: Equatable {
        case value
        case json
        /// The codec type as written, without `.self`.
        case codec(String)
    }

    let name: String
    /// The type as written, without trivia (spaces, comments): `[String: Int]`.
    let type: String
    var storage: Storage = .value

    /// The record's properties in declaration order, or nil after diagnosing one without a type.
    static func all(in decl: StructDeclSyntax, _ context: some MacroExpansionContext) -> [StoredProperty]? {
        var result: [StoredProperty] = []
        var failed = false
        for member in decl.memberBlock.members {
            if let conditional = member.decl.as(IfConfigDeclSyntax.self), Self.declaresStoredProperties(conditional) {
                // A property that exists in some builds only would be silently left out of others.
                context.diagnose(Diagnostic(node: Syntax(conditional), message: RecordDiagnostic.conditionalProperty))
                failed = true
                continue
            }
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            if variable.modifiers.contains(where: { ["static", "class", "lazy"].contains($0.name.text) }) { continue }
            let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
            let bindings = Array(variable.bindings)
            for (index, binding) in bindings.enumerated() {
                guard let identifier = binding.pattern.as(IdentifierPatternSyntax.self) else { continue }
                if let accessors = binding.accessorBlock, !Self.isObserversOnly(accessors) { continue }  // computed
                // A `let` with a value is fixed by its declaration: it cannot be read back, so it
                // is not part of the record.
                if isLet && binding.initializer != nil { continue }
                // `var a, b: Int`: only the last binding carries the type; the others share it.
                let shared = binding.initializer == nil
                    ? bindings[index...].first(where: { $0.typeAnnotation != nil })?.typeAnnotation : nil
                guard let annotation = binding.typeAnnotation ?? shared else {
                    context.diagnose(Diagnostic(node: Syntax(binding), message: RecordDiagnostic.missingType(identifier.identifier.text)))
                    failed = true
                    continue
                }
                let type = annotation.type.tokens(viewMode: .sourceAccurate).map(\.text).joined()
                guard let storage = Self.storage(of: variable, context) else {
                    failed = true
                    continue
                }
                result.append(StoredProperty(name: identifier.identifier.text, type: type, storage: storage))
            }
        }
        return failed ? nil : result
    }

    /// What the property's `@Field` attribute says, or nil after diagnosing a malformed one.
    private static func storage(of variable: VariableDeclSyntax, _ context: some MacroExpansionContext) -> Storage? {
        for element in variable.attributes {
            guard let attribute = element.as(AttributeSyntax.self) else { continue }
            let name = attribute.attributeName.tokens(viewMode: .sourceAccurate).map(\.text).joined()
            guard name == "Field" || name.hasSuffix(".Field") else { continue }
            let arguments = attribute.arguments?.as(LabeledExprListSyntax.self).map(Array.init) ?? []
            if arguments.count == 1, let only = arguments.first {
                if only.label == nil, let member = only.expression.as(MemberAccessExprSyntax.self), member.declName.baseName.text == "json" {
                    return .json
                }
                if only.label?.text == "codec", let member = only.expression.as(MemberAccessExprSyntax.self),
                   member.declName.baseName.text == "self", let base = member.base {
                    return .codec(base.tokens(viewMode: .sourceAccurate).map(\.text).joined())
                }
            }
            context.diagnose(Diagnostic(node: Syntax(attribute), message: RecordDiagnostic.fieldAttributeArgument))
            return nil
        }
        return .value
    }

    /// Whether any clause of an `#if` declares an instance property.
    private static func declaresStoredProperties(_ conditional: IfConfigDeclSyntax) -> Bool {
        conditional.clauses.contains { clause in
            guard case .decls(let members) = clause.elements else { return false }
            return members.contains { member in
                guard let variable = member.decl.as(VariableDeclSyntax.self) else { return false }
                return !variable.modifiers.contains { ["static", "class"].contains($0.name.text) }
            }
        }
    }

    private static func isObserversOnly(_ block: AccessorBlockSyntax) -> Bool {
        guard case .accessors(let list) = block.accessors else { return false }
        return list.allSatisfy { [.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind) }
    }
}

/// Format 1's default schema version: FNV-1a over the key and field names and types as spelled
/// (tokens, so whitespace and comments never changed it). Format 2 derives the version at run
/// time from field formats instead; this number lets it recognise what format-1 stores hold.
/// (The hash is `RecordType.derivedVersion`'s, from StrataSchemaHash, which both depend on.)
enum SchemaVersion {
    static func formatOne(keys: [StoredProperty], fields: [StoredProperty]) -> UInt32 {
        SchemaHash.version(of: "key:" + keys.map { "\($0.name):\($0.type)" }.joined(separator: ",")
            + ";fields:" + fields.map { "\($0.name):\($0.type)" }.joined(separator: ","))
    }
}

/// One `@Index(…)` on the struct.
struct IndexDeclaration {
    /// One indexed property; an array or set (by its spelling: `[T]`, `Array<T>`, `Set<T>`,
    /// `ContiguousArray<T>`) is multi-valued, one entry per element of type `element`.
    struct Component {
        let name: String
        let element: String
        let multiValued: Bool
    }

    /// What an index of totals keeps per group.
    enum Aggregate {
        case count
        case sum(String)

        var isCount: Bool { if case .count = self { true } else { false } }
    }

    let name: String
    let components: [Component]
    let unique: Bool
    let covering: Bool
    /// Set for an index of totals (`aggregate:`).
    var aggregate: Aggregate? = nil

    /// The struct's `@Index` attributes, or nil after diagnosing a malformed one.
    static func all(on decl: StructDeclSyntax, properties: [StoredProperty], _ context: some MacroExpansionContext) -> [IndexDeclaration]? {
        var result: [IndexDeclaration] = []
        for element in decl.attributes {
            guard let attribute = element.as(AttributeSyntax.self) else { continue }
            let attributeName = attribute.attributeName.tokens(viewMode: .sourceAccurate).map(\.text).joined()
            guard attributeName == "Index" || attributeName.hasSuffix(".Index") else { continue }
            func fail(_ message: RecordDiagnostic, at node: some SyntaxProtocol) -> [IndexDeclaration]? {
                context.diagnose(Diagnostic(node: Syntax(node), message: message))
                return nil
            }
            var strings: [(String, StringLiteralExprSyntax)] = []
            var unique = false, covering = false
            var aggregate: Aggregate?
            for argument in attribute.arguments?.as(LabeledExprListSyntax.self) ?? [] {
                switch argument.label?.text {
                case "aggregate":
                    if let member = argument.expression.as(MemberAccessExprSyntax.self), member.base == nil, member.declName.baseName.text == "count" {
                        aggregate = .count
                    } else if let call = argument.expression.as(FunctionCallExprSyntax.self),
                              let member = call.calledExpression.as(MemberAccessExprSyntax.self), member.base == nil,
                              member.declName.baseName.text == "sum", call.arguments.count == 1,
                              let literal = call.arguments.first?.expression.as(StringLiteralExprSyntax.self),
                              let property = literal.representedLiteralValue {
                        guard let stored = properties.first(where: { $0.name == property }),
                              ["Int", "Int8", "Int16", "Int32", "Int64", "Swift.Int", "Swift.Int64"].contains(stored.type) else {
                            return fail(.sumNotAnInteger(strings.first?.0 ?? "?", property), at: literal)
                        }
                        aggregate = .sum(property)
                    } else {
                        return fail(.aggregateArgument, at: argument.expression)
                    }
                case nil:
                    guard let literal = argument.expression.as(StringLiteralExprSyntax.self), let text = literal.representedLiteralValue, !text.isEmpty else {
                        return fail(.indexArguments, at: argument.expression)
                    }
                    strings.append((text, literal))
                case "unique", "covering":
                    guard let literal = argument.expression.as(BooleanLiteralExprSyntax.self) else { return fail(.indexArguments, at: argument.expression) }
                    let value = literal.literal.tokenKind == .keyword(.true)
                    if argument.label?.text == "unique" { unique = value } else { covering = value }
                default:
                    return fail(.indexArguments, at: argument)
                }
            }
            guard strings.count >= (aggregate == nil ? 2 : 1) else { return fail(.indexArguments, at: attribute) }
            let name = strings[0].0
            if aggregate != nil && (unique || covering) { return fail(.aggregateWithOptions(name), at: attribute) }
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }), !name.first!.isNumber else {
                return fail(.indexNameNotAnIdentifier(name), at: strings[0].1)
            }
            if result.contains(where: { $0.name == name }) { return fail(.duplicateIndex(name), at: strings[0].1) }
            var components: [Component] = []
            for (property, literal) in strings.dropFirst() {
                guard let stored = properties.first(where: { $0.name == property }) else {
                    return fail(.indexComponentNotStored(name, property, decl.name.text), at: literal)
                }
                if components.contains(where: { $0.name == property }) { return fail(.indexComponentTwice(name, property), at: literal) }
                if stored.storage != .value { return fail(.indexOnEncodedField(name, property), at: literal) }
                if let element = Self.element(ofCollection: stored.type) {
                    if components.contains(where: \.multiValued) { return fail(.twoMultiValued(name), at: literal) }
                    components.append(Component(name: property, element: element, multiValued: true))
                } else {
                    components.append(Component(name: property, element: stored.type, multiValued: false))
                }
            }
            result.append(IndexDeclaration(name: name, components: components, unique: unique, covering: covering, aggregate: aggregate))
        }
        return result
    }

    /// `T` for `[T]`, `Array<T>`, `Set<T>` and `ContiguousArray<T>` (as spelled, without spaces).
    static func element(ofCollection type: String) -> String? {
        if type.hasPrefix("["), type.hasSuffix("]"), !Self.hasTopLevelColon(type.dropFirst().dropLast()) {
            return String(type.dropFirst().dropLast())
        }
        for generic in ["Array<", "Set<", "ContiguousArray<", "Swift.Array<", "Swift.Set<"] where type.hasPrefix(generic) && type.hasSuffix(">") {
            return String(type.dropFirst(generic.count).dropLast())
        }
        return nil
    }

    /// Whether a `:` appears outside brackets (a dictionary type `[K: V]`).
    private static func hasTopLevelColon(_ text: Substring) -> Bool {
        var depth = 0
        for character in text {
            switch character {
            case "[", "<", "(": depth += 1
            case "]", ">", ")": depth -= 1
            case ":" where depth == 0: return true
            default: break
            }
        }
        return false
    }
}
