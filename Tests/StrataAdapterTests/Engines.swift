import Foundation
import StrataBundledEngines
import StrataConformance
import StrataEngine

/// Every engine Strata ships, as conformance subjects, from the one list (``BundledEngines``).
enum Engines {
    /// An engine of `kind`, whose multi-process cases use `strata conformance-peer` as the second process.
    static func subject(_ kind: EngineKind) -> EngineUnderTest {
        EngineUnderTest(kind, peer: ConformancePeer(executable: strataTool, arguments: ["conformance-peer", "--engine", kind.name]))
    }

    static let all = BundledEngines.all.map(subject)
    static let onDisk = BundledEngines.onDisk.map(subject)
    static let lmdb = subject(.lmdb)
    static let leveldb = subject(.leveldb)
    static let sqlite = subject(.sqlite)
    static let memory = subject(.memory)
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
