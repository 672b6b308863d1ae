import Foundation
import StrataBundledEngines
import StrataConformance
import StrataEngine

/// Every engine Strata ships, as conformance subjects, from the one list (``BundledEngines``).
enum Engines {
    static let all = BundledEngines.all.map(EngineUnderTest.init)
    static let onDisk = BundledEngines.onDisk.map(EngineUnderTest.init)
    static let lmdb = EngineUnderTest(.lmdb)
    static let leveldb = EngineUnderTest(.leveldb)
    static let sqlite = EngineUnderTest(.sqlite)
    static let memory = EngineUnderTest(.memory)
    /// The engines several processes may share.
    static let multiProcess = all.filter { $0.capabilities.contains(.multiProcess) }
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
