import SwiftDiagnostics

/// The macro's errors, each reported at the node it is about.
enum RecordDiagnostic: DiagnosticMessage {
    case notAStruct
    case noKeyNames
    case keyNameNotALiteral
    case keyspaceNotALiteral
    case versionNotALiteral
    case sendableNotALiteral
    case notAStoredProperty(String, String)
    case duplicateKey(String)
    case missingType(String)
    case generic
    case conditionalProperty
    case fieldAttributeOnKey(String)
    case fieldAttributeArgument
    case indexArguments
    case indexNameNotAnIdentifier(String)
    case duplicateIndex(String)
    case indexComponentNotStored(String, String, String)
    case indexOnEncodedField(String, String)
    case twoMultiValued(String)
    case indexComponentTwice(String, String)
    case aggregateArgument
    case aggregateWithOptions(String)
    case sumNotAnInteger(String, String)

    var message: String {
        switch self {
        case .notAStruct: return "@IndexKeyRecord applies to a struct"
        case .noKeyNames: return "@IndexKeyRecord needs the names of the key properties, e.g. @IndexKeyRecord(\"lastName\", \"firstName\")"
        case .keyNameNotALiteral: return "key property names must be string literals"
        case .keyspaceNotALiteral: return "keyspace must be a non-empty string literal"
        case .versionNotALiteral: return "version must be an integer literal from 0 to 4294967295"
        case .sendableNotALiteral: return "sendable must be true or false"
        case let .notAStoredProperty(name, type): return "'\(name)' is not a stored property of \(type)"
        case let .duplicateKey(name): return "'\(name)' is named twice in the key"
        case let .missingType(name): return "stored property '\(name)' needs a type annotation to be part of a record"
        case .generic: return "@IndexKeyRecord does not support generic structs"
        case .conditionalProperty: return "@IndexKeyRecord cannot see properties inside #if; declare them unconditionally"
        case let .fieldAttributeOnKey(name):
            return "'\(name)' is a key component, stored by the key codec: @Field applies to fields only"
        case .fieldAttributeArgument: return "@Field takes .json or codec: SomeCodec.self"
        case .indexArguments:
            return "@Index takes the index's name and its properties as string literals, then unique: and covering: as true or false, or aggregate:, e.g. @Index(\"byEmail\", \"email\", unique: true)"
        case let .indexNameNotAnIdentifier(name):
            return "index name '\(name)' must be a Swift identifier: it names the static property the index is queried through"
        case let .duplicateIndex(name): return "two indexes are named '\(name)'"
        case let .indexComponentNotStored(index, name, type): return "index '\(index)': '\(name)' is not a stored property of \(type)"
        case let .indexOnEncodedField(index, name):
            return "index '\(index)': '\(name)' is stored through @Field, so its values have no key encoding; index a property whose type is a KeyComponent"
        case let .twoMultiValued(index): return "index '\(index)': at most one component may be an array or set (one entry per element)"
        case let .indexComponentTwice(index, name): return "index '\(index)' names '\(name)' twice"
        case .aggregateArgument: return "aggregate: takes .count or .sum(\"property\") with a string literal"
        case let .aggregateWithOptions(index): return "index '\(index)' keeps totals: it can be neither unique nor covering"
        case let .sumNotAnInteger(index, name):
            return "index '\(index)': the sum's property '\(name)' must be a stored Int, Int8, Int16, Int32 or Int64 (each converts to Int64 exactly)"
        }
    }

    var diagnosticID: MessageID { MessageID(domain: "StrataMacros", id: "\(self)") }
    var severity: DiagnosticSeverity { .error }
}
