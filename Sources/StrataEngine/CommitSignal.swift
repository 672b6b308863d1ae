import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Tells a process, at once, that another process may have committed to the store: what the
/// record layer's observation waits on between its looks at the change feed (it looks at least
/// every `Store.otherProcessPolling` anyway, so a signal only makes it sooner).
///
/// An engine makes one with ``KeyValueEngine/makeCommitSignal()``: on a store other processes
/// write through files (LMDB, SQLite), a ``DirectoryCommitSignal`` on its directory; on etcd, a
/// watch of the store's commit keys. A signal may wake without a commit (a spurious wake costs
/// one look at the feed) but should not sleep through one.
public protocol CommitSignal: AnyObject, Sendable {
    /// Returns when another process may have committed since the previous return, or when
    /// `timeout` has passed, whichever comes first.
    func wait(upTo timeout: Duration)

    /// Releases what the signal holds (a descriptor, a stream). Later waits only sleep.
    func close()
}

/// The commit signal of a store in a directory: inotify on the directory, whose files every
/// commit of another process writes. Where inotify is missing (not Linux) it only sleeps.
public final class DirectoryCommitSignal: CommitSignal {
    private let descriptor = Locked<Int32?>(nil)

    /// A signal on `directory`; it only sleeps when the directory cannot be watched.
    public init(directory: String) {
        #if canImport(Glibc)
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return }
        let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            Glibc.close(fd)
            return
        }
        descriptor.withLock { $0 = fd }
        #endif
    }

    deinit { close() }

    /// Waits until a file of the directory is written or `timeout` passes, then drains the
    /// reports (several writes of one commit wake once).
    public func wait(upTo timeout: Duration) {
        let milliseconds = Int32(clamping: max(1, Int64(timeout.components.seconds) * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        guard let fd = descriptor.withLock({ $0 }) else {
            Thread.sleep(forTimeInterval: Double(milliseconds) / 1000)
            return
        }
        #if canImport(Glibc)
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while read(fd, &buffer, buffer.count) > 0 {}
        #endif
    }

    public func close() {
        guard let fd = descriptor.withLock({ fd in defer { fd = nil }; return fd }) else { return }
        #if canImport(Glibc)
        Glibc.close(fd)
        #endif
    }
}
