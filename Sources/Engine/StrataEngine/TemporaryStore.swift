import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension EngineConfiguration {
    /// A store of `kind` in a new directory of its own, deleted when the store closes (or is
    /// released without closing), and, after a crash, by the next temporary store opened on the
    /// machine: for tests, previews and scratch work.
    ///
    /// ```swift
    /// let scratch = try Store(.temporary(.lmdb))
    /// ```
    ///
    /// Engines that keep their store elsewhere than in a directory (etcd) are refused with
    /// ``EngineError/invalidArgument(_:)``; `.memory` is temporary by nature and accepted.
    ///
    /// The directories live under `strata-temporary-<uid>` (mode 0700) in the system's temporary
    /// directory. Each is owned through a `flock` its process holds while the store is open; the
    /// kernel releases it when the process ends, however it ends, and an open of a temporary
    /// store deletes every directory whose lock it can take.
    public static func temporary(_ kind: EngineKind) -> EngineConfiguration {
        EngineConfiguration(name: kind.name, path: nil) { options in
            let directory = try TemporaryDirectoryLease()
            do {
                let engine = try kind.open(directory.storePath, options)
                // A persistent engine that wrote nothing at the path keeps the store elsewhere (etcd,
                // in its cluster): deleting the directory would not delete the store.
                if engine.capabilities.contains(.persistent) && !FileManager.default.fileExists(atPath: directory.storePath) {
                    try? engine.close()
                    throw EngineError.invalidArgument("a temporary store needs an engine that keeps its store in a directory; \(kind.name) keeps it elsewhere")
                }
                return TemporaryEngine(engine, directory)
            } catch {
                directory.remove()
                throw error
            }
        }
    }

    /// Where `Store(named:)` keeps its stores: `$XDG_DATA_HOME/strata` (by default
    /// `~/.local/share/strata`) on Linux, `Application Support/strata` on Apple platforms.
    public static var defaultDirectory: String {
        #if canImport(Darwin)
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0].path
        #else
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".local/share")
        #endif
        return (base as NSString).appendingPathComponent("strata")
    }

    /// The path of the store `name` under ``defaultDirectory``, creating the directories above
    /// it. `name` is one path component: not empty, no `/`, not `.` or `..`.
    public static func defaultPath(named name: String) throws -> String {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != "..", !name.contains("\0") else {
            throw EngineError.invalidArgument("a store name is one path component (not empty, no \"/\", not \".\" or \"..\"): \"\(name)\"")
        }
        let directory = defaultDirectory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw EngineError.permissionDenied(path: directory, detail: "creating the default directory: \(error.localizedDescription)")
        }
        return (directory as NSString).appendingPathComponent(name)
    }
}

/// A temporary store's directory, owned while this lives: `<root>/<id>/` holds the store, and
/// `<root>/<id>.lock` is `flock`ed by the owner. Removed by ``remove()``, at deinit, or by the
/// next lease's sweep once no process holds the lock.
final class TemporaryDirectoryLease: Sendable {
    /// `strata-temporary-<uid>` in the system's temporary directory: one per user, since the
    /// temporary directory is shared.
    static var root: String { (NSTemporaryDirectory() as NSString).appendingPathComponent("strata-temporary-\(getuid())") }

    let directory: String
    private let lockPath: String
    /// The locked descriptor; -1 once removed.
    private let lock: Locked<Int32>
    var storePath: String { (directory as NSString).appendingPathComponent("store") }

    init() throws {
        let root = Self.root
        // This user's own directory, not a link or another user's (the temporary directory is
        // shared): nobody else may read the stores, or plant a directory for them.
        if mkdir(root, 0o700) != 0 && errno != EEXIST {
            throw EngineError.permissionDenied(path: root, detail: "creating the temporary stores' directory: \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(root, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else {
            throw EngineError.permissionDenied(path: root, detail: "the temporary stores' directory is not a directory of this user's")
        }
        Self.sweep(root)
        let id = UUID().uuidString
        directory = (root as NSString).appendingPathComponent(id)
        lockPath = directory + ".lock"
        // Locked under a name no sweep looks at, then renamed into place: a sweep never sees the
        // lock file of a lease before it is held.
        let staging = directory + ".new"
        let fd = open(staging, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw EngineError.permissionDenied(path: staging, detail: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0, rename(staging, lockPath) == 0,
              (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)) != nil else {
            let detail = String(cString: strerror(errno))
            close(fd)
            unlink(staging)
            unlink(lockPath)
            throw EngineError.permissionDenied(path: directory, detail: "creating a temporary store: \(detail)")
        }
        lock = Locked(fd)
    }

    deinit { remove() }

    /// Deletes the directory and the lock file, then lets the lock go (idempotent).
    func remove() {
        lock.withLock { fd in
            guard fd >= 0 else { return }
            try? FileManager.default.removeItem(atPath: directory)
            unlink(lockPath)
            close(fd)
            fd = -1
        }
    }

    /// Deletes the directories of leases whose process ended without removing them (a crash).
    static func sweep(_ root: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { return }
        for name in names where name.hasSuffix(".lock") {
            let lockPath = (root as NSString).appendingPathComponent(name)
            let fd = open(lockPath, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            // Held: its owner is alive. Taken: nobody owns the directory any more.
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            try? FileManager.default.removeItem(atPath: String(lockPath.dropLast(".lock".count)))
            unlink(lockPath)
        }
    }
}

/// An engine in a temporary directory: every requirement is the inner engine's; closing it (or
/// releasing it) deletes the directory.
final class TemporaryEngine: KeyValueEngine, Sendable {
    private let inner: any KeyValueEngine
    private let lease: TemporaryDirectoryLease

    init(_ inner: any KeyValueEngine, _ lease: TemporaryDirectoryLease) {
        self.inner = inner
        self.lease = lease
    }

    var engineName: String { inner.engineName }
    var capabilities: EngineCapabilities { inner.capabilities }
    var limits: EngineLimits { inner.limits }
    func makeCommitSignal() -> (any CommitSignal)? { inner.makeCommitSignal() }
    func read<R>(_ body: (any KeyValueReader) throws -> R) throws -> R { try inner.read(body) }
    func write<R>(_ body: (any KeyValueWriter) throws -> R) throws -> R { try inner.write(body) }
    func read<R: Sendable>(_ body: @Sendable (any KeyValueReader) throws -> R) async throws -> R { try await inner.read(body) }
    func write<R: Sendable>(_ body: @Sendable (any KeyValueWriter) throws -> R) async throws -> R { try await inner.write(body) }
    func compact() throws -> CompactionReport { try inner.compact() }

    func close() throws {
        defer { lease.remove() }
        try inner.close()
    }
}
