import Foundation
import StrataEngine
#if canImport(Glibc)
import Glibc
#endif

/// A lock on the store's directory (`flock`) that Strata's processes take before LMDB's writer
/// mutex and release after the write transaction ends.
///
/// LMDB's writer mutex is a robust process-shared pthread mutex: a holder that dies is noticed.
/// A *waiter* that dies is not. Unlocking (or the kernel, for a holder that died) wakes one
/// waiter; when that waiter is killed before it runs (processes killed together: a process
/// group, a container stopping, the OOM killer), the wake-up dies with it and the other waiters
/// sleep on a free mutex forever. The kernel keeps `flock` waits itself: a lock whose holder dies
/// is released and every waiter looks again, so a killed waiter strands nobody. With this lock,
/// at most one Strata process at a time waits on LMDB's mutex (only for another program's
/// writer, such as py-lmdb, which does not take it).
///
/// The directory is locked, not a file in it: closing any descriptor of `lock.mdb` would drop
/// LMDB's own POSIX record locks on it, and a new file would be one more thing in the store.
final class LMDBWriterLock {
    private let descriptor: Int32
    private let path: String

    /// Opens the directory at `path` for locking.
    init(path: String) throws(EngineError) {
        self.path = path
        descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor < 0 {
            throw .engineFailure(engine: "LMDB", code: Int(errno), message: String(cString: strerror(errno)), operation: "opening the store's directory for its writer lock")
        }
    }

    deinit { close(descriptor) }

    /// Waits for the lock (the kernel's wait: no lost wake-ups).
    func lock() throws(EngineError) {
        while flock(descriptor, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            throw .engineFailure(engine: "LMDB", code: Int(errno), message: String(cString: strerror(errno)), operation: "taking the writer lock on \(path)")
        }
    }

    func unlock() {
        _ = flock(descriptor, LOCK_UN)
    }
}
