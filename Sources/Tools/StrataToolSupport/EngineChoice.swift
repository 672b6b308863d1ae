import ArgumentParser
import StrataBundledEngines
import StrataEngine

/// An `--engine` argument: a bundled engine's name, or `all`. The engines come from
/// `BundledEngines`, the one list; capabilities are each engine's own declaration.
package struct EngineChoice: ExpressibleByArgument, Sendable {
    /// The engines this choice stands for.
    package let engines: [EngineKind]
    package let name: String

    package init?(argument: String) {
        if argument == "all" {
            engines = BundledEngines.all
        } else if let kind = BundledEngines.named(argument) {
            engines = [kind]
        } else {
            return nil
        }
        name = argument
    }

    package static let all = EngineChoice(argument: "all")!
    package static var allValueStrings: [String] { BundledEngines.all.map(\.name) + ["all"] }

    /// Opens a store of the chosen engine; `all` is refused (a command that opens one store
    /// needs one engine named).
    package func open(_ path: String, _ options: EngineOptions) throws -> any KeyValueEngine {
        guard engines.count == 1 else { throw ValidationError("--engine \(name): name one engine (\(Self.allValueStrings.dropLast().joined(separator: ", ")))") }
        return try engines[0].open(path, options)
    }
}
