import SwiftParser
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
@testable import StrataMacrosExpansion

let testMacros: [String: Macro.Type] = ["IndexKeyRecord": IndexKeyRecordMacro.self, "Field": FieldMacro.self]

/// The source after expanding `@IndexKeyRecord`, for checks on parts of long expansions.
func expanded(_ source: String) -> String {
    let file = Parser.parse(source: source)
    let context = BasicMacroExpansionContext(sourceFiles: [file: .init(moduleName: "Test", fullFilePath: "test.swift")])
    return file.expand(macros: testMacros, contextGenerator: { _ in context }).description
}
