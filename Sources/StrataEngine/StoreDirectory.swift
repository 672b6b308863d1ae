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
    static func prepare(_ path: String, marker: String, mode: OpenMode) throws(EngineError) {
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
        case .create:
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
        }
    }
}
