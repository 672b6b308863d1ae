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

    /// Opens a store of the (single) chosen engine.
    package func open(_ path: String, _ options: EngineOptions) throws -> any KeyValueEngine {
        try engines[0].open(path, options)
    }
}
