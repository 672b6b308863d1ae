import Foundation

/// The stores open in this process, by canonical path.
///
/// Opening one path twice in a process is refused on every engine with
/// ``EngineError/alreadyOpen(path:)``: LMDB must not open an environment twice in one process
/// (closing either copy drops the other's locks) and LevelDB refuses it, so Strata refuses it
/// uniformly rather than let engines differ.
enum OpenPathRegistry {
    private static let paths = Locked<Set<String>>([])

    /// Claims `path` (resolved through symbolic links), or throws when it is already open here.
    /// Returns the canonical path to pass to ``release(_:)``.
    static func claim(_ path: String) throws(EngineError) -> String {
        let canonical = canonicalPath(path)
        guard paths.withLock({ $0.insert(canonical).inserted }) else { throw .alreadyOpen(path: path) }
        return canonical
    }

    /// Claims a store that has no directory by a name that identifies it (taken as it is), or
    /// throws ``EngineError/alreadyOpen(path:)`` naming `path`. Returns the name to release.
    static func claim(identity: String, reportedAs path: String) throws(EngineError) -> String {
        guard paths.withLock({ $0.insert("\0" + identity).inserted }) else { throw .alreadyOpen(path: path) }
        return "\0" + identity
    }

    /// Gives back a path claimed with ``claim(_:)``.
    static func release(_ canonical: String) {
        _ = paths.withLock { $0.remove(canonical) }
    }

    /// The absolute path with symbolic links resolved, where it exists.
    static func canonicalPath(_ path: String) -> String {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        guard let resolved = realpath(absolute, nil) else { return absolute }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
