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

    /// Takes the shared lock on `lock.mdb` in the store at `path` (creating the file, as LMDB
    /// would), waiting up to `timeout` for a compaction in another process to end; throws
    /// ``EngineError/locked(path:)`` when it does not. `nil` when the file cannot be opened for a
    /// read-only store (a read-only directory: LMDB then reports what is wrong).
    static func take(path: String, readOnly: Bool, timeout: Duration) throws(EngineError) -> LMDBPresenceLock? {
        let file = (path as NSString).appendingPathComponent("lock.mdb")
        var descriptor = Glibc.open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if descriptor < 0 && readOnly { descriptor = Glibc.open(file, O_RDONLY | O_CLOEXEC) }
        if descriptor < 0 {
            if readOnly && [ENOENT, EACCES, EROFS].contains(errno) { return nil }
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
    /// none opens it until `body` returns; throws ``EngineError/locked(path:)`` at once when
    /// another process has it open, Strata or any other program using LMDB (each holds LMDB's
    /// shared record lock on the first byte of `lock.mdb` while its environment is open).
    ///
    /// The caller holds the store's writer lock (``LMDBWriterLock``) throughout: Linux drops the
    /// shared lock while converting it, and another compaction must not slip into that gap (it
    /// waits for the writer lock first). The shared lock is taken again afterwards in every case;
    /// ``share()`` throws when that fails.
    func alone<R>(_ body: () throws -> R) throws -> R {
        let taken = flock(descriptor, LOCK_EX | LOCK_NB) == 0
        let error = errno
        guard taken else {
            try share()
            if error == EWOULDBLOCK { throw EngineError.locked(path: path) }
            throw Self.failure(error, "taking the presence lock alone", path: path)
        }
        let result: Result<R, any Error> = Result {
            if try otherEnvironmentOpen() { throw EngineError.locked(path: path) }
            return try body()
        }
        try share()
        return try result.get()
    }

    /// Takes the shared lock again after ``alone(_:)``; with the writer lock held nobody else can
    /// hold the exclusive one, so it does not wait.
    private func share() throws(EngineError) {
        try wait(for: LOCK_SH, timeout: .seconds(10))
    }

    /// Whether another process holds LMDB's lock on `lock.mdb` (`F_GETLK` asks without taking or
    /// dropping anything; this process's own locks never count).
    private func otherEnvironmentOpen() throws(EngineError) -> Bool {
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_start = 0
        probe.l_len = 1
        if fcntl(descriptor, F_GETLK, &probe) != 0 { throw Self.failure(errno, "asking who holds lock.mdb", path: path) }
        return probe.l_type != Int16(F_UNLCK)
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
