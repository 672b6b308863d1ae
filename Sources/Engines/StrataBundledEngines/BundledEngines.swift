import StrataEngine
import StrataLevelDB
import StrataLMDB
import StrataMemory
import StrataSQLite

/// The engines Strata ships: the one list the command-line tool, the benchmark and the tests
/// take engines from. Capabilities and limits are each engine's own declaration.
public enum BundledEngines {
    /// Every bundled engine.
    public static let all: [EngineKind] = [.lmdb, .leveldb, .sqlite, .memory]

    /// The engines that keep their data in files.
    public static var onDisk: [EngineKind] { all.filter { $0.declaration.marker != nil } }

    /// The engine named `name`, or `nil`.
    public static func named(_ name: String) -> EngineKind? { all.first { $0.name == name } }
}
