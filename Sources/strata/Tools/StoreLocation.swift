import ArgumentParser
import Foundation
import StrataBundledEngines
import StrataEngine
import StrataRecords

/// A store named on the command line: a path, and the engine, given or detected from the files
/// the directory holds (`data.mdb`, `CURRENT`, `data.sqlite`: each engine's declared marker).
struct StoreLocation {
    let path: String
    let kind: EngineKind

    init(path: String, engine: EngineChoice?) throws {
        self.path = path
        if let engine {
            guard engine.engines.count == 1 else { throw ToolFailure("\(path): name one engine, not \(engine.name)") }
            kind = engine.engines[0]
            return
        }
        let found = BundledEngines.onDisk.filter { kind in
            kind.declaration.marker.map { FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent($0)) } ?? false
        }
        guard FileManager.default.fileExists(atPath: path) else { throw ToolFailure("\(path): no such store") }
        switch found.count {
        case 1: kind = found[0]
        case 0:
            let markers = BundledEngines.onDisk.compactMap { k in k.declaration.marker.map { "\($0) (\(k.name))" } }
            throw ToolFailure("\(path): not a store of a bundled engine: none of \(markers.joined(separator: ", ")) is there")
        default:
            throw ToolFailure("\(path): files of several engines (\(found.map(\.name).joined(separator: ", "))): say which with --engine")
        }
    }

    /// Opens the store read-only: other processes may keep writing (LMDB, SQLite).
    func openReadOnly() throws -> Store {
        do {
            return try Store(kind.configuration(path: path), mode: .readOnly)
        } catch EngineError.locked {
            throw ToolFailure("\(path): \(kind.name) store locked by another process; \(kind.name) allows one process at a time: inspect or back it up from inside that process (Store.verify, Store.copy(to:))")
        } catch {
            throw ToolFailure("\(path): \(error)")
        }
    }
}

/// An error the tool reports as one line naming the store, with an exit status.
struct ToolFailure: Error, CustomStringConvertible {
    let message: String
    let status: Int32
    init(_ message: String, status: Int32 = ToolExit.failed) {
        self.message = message
        self.status = status
    }
    var description: String { message }
}

/// The store tools' exit statuses (documented in `strata help` and the README).
enum ToolExit {
    /// Done; for `verify`, nothing wrong.
    static let ok: Int32 = 0
    /// `verify` found problems (listed).
    static let problems: Int32 = 1
    /// The store could not be opened or read, or the copy could not be made (the message says why).
    static let failed: Int32 = 2

    static let help = "Exit status: 0 done (verify: nothing wrong), 1 verify found problems, 2 the store could not be opened, read or copied, 64 bad arguments."
}

/// Runs a store tool's body, turning failures into one line on standard error and the exit status.
func runTool(_ body: () throws -> Int32) throws {
    let status: Int32
    do {
        status = try body()
    } catch let failure as ToolFailure {
        FileHandle.standardError.write(Data("strata: \(failure.message)\n".utf8))
        throw ExitCode(failure.status)
    }
    if status != 0 { throw ExitCode(status) }
}
