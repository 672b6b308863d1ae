import Foundation
import StrataEngine
#if canImport(Glibc)
import Glibc
#endif

/// A shared `flock` on the store's `lock.mdb` that every Strata process holds while it has the
/// store open: a compaction, which replaces `data.mdb`, takes it exclusively, so it runs only
/// when no other Strata process has the store open, and a process that opens the store meanwhile
/// waits before LMDB opens the file that is about to be replaced.
///
/// `lock.mdb` is locked because it is never replaced (`data.mdb` is). LMDB keeps POSIX record
/// locks on it, which closing *any* descriptor of the file drops for the whole process: this
/// descriptor is therefore opened before the environment and closed only after it (the storage
/// holds it for its whole life). `flock` and POSIX record locks do not interact on Linux.
final class LMDBPresenceLock {
    private let descriptor: Int32
    private let path: String

    /// Takes the shared lock on `lock.mdb` in the store at `path` (creating the file unless
    /// `readOnly`), waiting up to `timeout` for a compaction in another process to end; throws
    /// ``EngineError/locked(path:)`` when it does not. `nil` for a read-only store without a lock
    /// file (LMDB then reports what is wrong).
    static func take(path: String, readOnly: Bool, timeout: Duration) throws(EngineError) -> LMDBPresenceLock? {
        let file = (path as NSString).appendingPathComponent("lock.mdb")
        let descriptor = Glibc.open(file, readOnly ? O_RDONLY | O_CLOEXEC : O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if descriptor < 0 {
            if readOnly && (errno == ENOENT || errno == EACCES) { return nil }
            throw failure(errno, "opening lock.mdb for the presence lock", path: path)
        }
        let lock = LMDBPresenceLock(descriptor: descriptor, path: path)
        try lock.wait(for: LOCK_SH, timeout: timeout)
        return lock
    }

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Runs `body` holding the lock exclusively: no other Strata process has the store open, and
    /// none opens it until `body` returns. Throws ``EngineError/locked(path:)`` at once when
    /// another process has it open. The shared lock is held again afterwards (Linux may drop it
    /// while converting, so it is taken again in every case).
    func alone<R>(_ body: () throws -> R) throws -> R {
        let taken = flock(descriptor, LOCK_EX | LOCK_NB) == 0
        let error = errno
        defer { try? wait(for: LOCK_SH, timeout: .seconds(3_600)) }
        guard taken else {
            if error == EWOULDBLOCK { throw EngineError.locked(path: path) }
            throw Self.failure(error, "taking the presence lock alone", path: path)
        }
        return try body()
    }

    private func wait(for operation: Int32, timeout: Duration) throws(EngineError) {
        let deadline = ContinuousClock.now + timeout
        while flock(descriptor, operation | LOCK_NB) != 0 {
            let error = errno
            if error == EINTR { continue }
            guard error == EWOULDBLOCK else { throw Self.failure(error, "taking the presence lock", path: path) }
            // Another process compacts the store: it ends by itself, or its death releases the lock.
            if ContinuousClock.now >= deadline { throw .locked(path: path) }
            usleep(10_000)
        }
    }

    private static func failure(_ code: Int32, _ operation: String, path: String) -> EngineError {
        .engineFailure(engine: "LMDB", code: Int(code), message: String(cString: strerror(code)), operation: operation + " of \(path)")
    }
}
