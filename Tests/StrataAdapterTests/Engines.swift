import Foundation
import StrataConformance
import StrataEngine
import StrataLevelDB
import StrataLMDB
import StrataMemory
import StrataSQLite

/// Every engine Strata ships, as conformance subjects.
enum Engines {
    static let lmdb = EngineUnderTest(name: "lmdb", capabilities: [.persistent, .multiProcess]) { try LMDBEngine(path: $0, options: $1) }
    static let leveldb = EngineUnderTest(name: "leveldb", capabilities: [.persistent]) { try LevelDBEngine(path: $0, options: $1) }
    static let sqlite = EngineUnderTest(name: "sqlite", capabilities: [.persistent, .multiProcess]) { try SQLiteEngine(path: $0, options: $1) }
    static let memory = EngineUnderTest(name: "memory", capabilities: []) { _, _ in MemoryEngine() }

    static let all = [lmdb, leveldb, sqlite, memory]
    static let onDisk = [lmdb, leveldb, sqlite]
}

extension EngineUnderTest: CustomStringConvertible {
    public var description: String { name }
}

/// A fresh temporary directory, removed by `cleanup()`.
struct TemporaryDirectory {
    let path: String
    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-test-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func cleanup() { try? FileManager.default.removeItem(atPath: path) }
}
