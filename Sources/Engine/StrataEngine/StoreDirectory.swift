import Foundation

/// The checks every adapter makes on a store's directory before its library touches it,
/// so that a wrong path fails the same way on every engine and nothing is written there.
enum StoreDirectory {
    /// Prepares `path` for opening a store whose presence is shown by `marker` (a file the
    /// engine always keeps in its directory, e.g. `data.mdb`).
    ///
    /// - `.create`: creates the directory when missing; refuses a regular file, and a non-empty
    ///   directory without the marker (someone else's files).
    /// - `.openExisting`, `.readOnly`: refuses a missing directory or one without the marker.
    ///
    /// Returns what a new store must make durable once its engine created its files (see
    /// ``syncCreation(_:_:engine:)``), or `nil` for an existing store.
    @discardableResult
    static func prepare(_ path: String, marker: String, mode: OpenMode) throws(EngineError) -> Creation? {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        let exists = fm.fileExists(atPath: path, isDirectory: &isDirectory)
        if exists && !isDirectory.boolValue {
            throw .notAStore(path: path, reason: "a regular file, not a store directory")
        }
        let markerPath = (path as NSString).appendingPathComponent(marker)
        var markerIsDirectory: ObjCBool = false
        let hasMarker = exists && fm.fileExists(atPath: markerPath, isDirectory: &markerIsDirectory)
        if hasMarker && markerIsDirectory.boolValue {
            throw .notAStore(path: path, reason: "\(marker) is a directory")
        }
        switch mode {
        case .openExisting, .readOnly:
            if !exists { throw .notFound(path: path) }
            if !hasMarker { throw .notFound(path: path) }
            return nil
        case .create:
            if hasMarker { return nil }
            if !exists {
                do {
                    try fm.createDirectory(atPath: path, withIntermediateDirectories: true)
                } catch {
                    throw .permissionDenied(path: path, detail: "cannot create the directory: \(error.localizedDescription)")
                }
            } else if !hasMarker {
                let contents = (try? fm.contentsOfDirectory(atPath: path)) ?? []
                if !contents.isEmpty {
                    throw .notAStore(path: path, reason: "the directory holds other files and no \(marker)")
                }
            }
            return Creation(directoryCreated: !exists)
        }
    }

    /// A store this open creates.
    struct Creation {
        /// Whether the directory itself was made (its entry lives in the parent directory).
        let directoryCreated: Bool
    }

    /// Makes a new store's files durable by name: syncs its directory (the engine just created
    /// its files there) and, when the directory was made too, the parent. A file's own sync
    /// does not make its directory entry durable, and LMDB never syncs the directory: without
    /// this, a power loss could leave every acknowledged commit in a file that has no name.
    static func syncCreation(_ path: String, _ creation: Creation, engine: String) throws(EngineError) {
        try syncDirectory(path, engine: engine)
        if creation.directoryCreated {
            let parent = (path as NSString).deletingLastPathComponent
            try syncDirectory(parent.isEmpty ? "." : parent, engine: engine)
        }
    }

    private static func syncDirectory(_ path: String, engine: String) throws(EngineError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { throw .permissionDenied(path: path, detail: "cannot open the directory to sync it: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // EINVAL: a file system that does not sync directories (their entries are then not cached).
        if fsync(fd) != 0 && errno != EINVAL {
            let code = errno
            throw .engineFailure(engine: engine, code: Int(code), message: String(cString: strerror(code)), operation: "syncing the directory \(path)")
        }
    }
}
