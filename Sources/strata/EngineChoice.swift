import ArgumentParser
import StrataConformance
import StrataEngine
import StrataLevelDB
import StrataLMDB
import StrataMemory
import StrataSQLite

/// The engines the command line can pick.
enum EngineChoice: String, CaseIterable, ExpressibleByArgument {
    case lmdb, leveldb, sqlite, memory, all

    /// The engines this choice stands for.
    var engines: [EngineChoice] { self == .all ? [.lmdb, .leveldb, .sqlite, .memory] : [self] }

    func open(_ path: String, _ options: EngineOptions) throws -> any KeyValueEngine {
        switch self {
        case .lmdb: return try LMDBEngine(path: path, options: options)
        case .leveldb: return try LevelDBEngine(path: path, options: options)
        case .sqlite: return try SQLiteEngine(path: path, options: options)
        case .memory, .all: return MemoryEngine()
        }
    }

    var capabilities: EngineCapabilities {
        switch self {
        case .lmdb, .sqlite: return [.persistent, .multiProcess]
        case .leveldb: return [.persistent]
        case .memory, .all: return []
        }
    }

    var subject: EngineUnderTest {
        let choice = self
        return EngineUnderTest(name: rawValue, capabilities: capabilities) { try choice.open($0, $1) }
    }
}
