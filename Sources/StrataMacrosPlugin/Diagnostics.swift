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
        }
    }

    var diagnosticID: MessageID { MessageID(domain: "StrataMacros", id: "\(self)") }
    var severity: DiagnosticSeverity { .error }
}
