import ArgumentParser
import StrataBundledEngines
import StrataConformance
import StrataEngine

/// An `--engine` argument: a bundled engine's name, or `all`. The engines come from
/// ``BundledEngines``, the one list; capabilities are each engine's own declaration.
struct EngineChoice: ExpressibleByArgument, Sendable {
    /// The engines this choice stands for.
    let engines: [EngineKind]
    let name: String

    init?(argument: String) {
        if argument == "all" {
            engines = BundledEngines.all
        } else if let kind = BundledEngines.named(argument) {
            engines = [kind]
        } else {
            return nil
        }
        name = argument
    }

    static let all = EngineChoice(argument: "all")!
    static var allValueStrings: [String] { BundledEngines.all.map(\.name) + ["all"] }

    /// Opens a store of the (single) chosen engine.
    func open(_ path: String, _ options: EngineOptions) throws -> any KeyValueEngine {
        try engines[0].open(path, options)
    }
}
