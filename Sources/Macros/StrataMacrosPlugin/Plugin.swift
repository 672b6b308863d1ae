import StrataMacrosExpansion
import SwiftCompilerPlugin
import SwiftSyntax
import SwiftSyntaxMacros

// The compiler plugin behind `StrataMacros`' `#externalMacro(module: "StrataMacrosPlugin", ...)`
// declarations. The compiler asks for each macro as `StrataMacrosPlugin.<type>`, so the types
// live here; each hands its work to StrataMacrosExpansion, a plain library. The tests call that
// library and not this target: when one test target depends on a macro target, SwiftPM builds
// every test of the package for the host, a second build of every dependency (NIO, gRPC,
// BoringSSL...) beside the one the tools need.

@main
struct StrataMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [IndexKeyRecordMacro.self, FieldMacro.self, IndexMacro.self]
}

/// `@IndexKeyRecord("a", "b")`: see ``StrataMacrosExpansion/IndexKeyRecordMacro``.
public struct IndexKeyRecordMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        try StrataMacrosExpansion.IndexKeyRecordMacro.expansion(
            of: node, attachedTo: declaration, providingExtensionsOf: type, conformingTo: protocols, in: context)
    }
}

/// `@Field(.json)`, `@Field(codec: C.self)`: a marker read by `@IndexKeyRecord`.
public struct FieldMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        try StrataMacrosExpansion.FieldMacro.expansion(of: node, providingPeersOf: declaration, in: context)
    }
}

/// `@Index("byEmail", "email", unique: true)`: a marker read by `@IndexKeyRecord`.
public struct IndexMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        try StrataMacrosExpansion.IndexMacro.expansion(of: node, providingPeersOf: declaration, in: context)
    }
}
