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

    /// Releases what the signal holds (a descriptor, a stream) and wakes a wait in progress;
    /// later waits return at once. May be called from any thread, during a wait.
    func close()
}

/// The commit signal of a store in a directory: inotify on the directory, whose files every
/// commit of another process writes. Where inotify is missing (not Linux) it only sleeps.
///
/// `close()` wakes a wait in progress (a byte down a pipe polled beside the inotify descriptor)
/// and frees the descriptors once no wait uses them, so a descriptor number is never read after
/// another file reused it.
public final class DirectoryCommitSignal: CommitSignal {
    private struct State {
        var inotify: Int32 = -1
        /// The pipe that wakes a wait: its read end is polled, `close()` writes to the other.
        var wake: (read: Int32, write: Int32) = (-1, -1)
        var waiting = 0
        var closed = false
    }
    private let state = Locked(State())

    /// A signal on `directory`; it only sleeps when the directory cannot be watched.
    public init(directory: String) {
        #if canImport(Glibc)
        let inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0 else { return }
        let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE)
        var wake: [Int32] = [-1, -1]
        guard inotify_add_watch(inotify, directory, mask) >= 0, pipe(&wake) == 0 else {
            Glibc.close(inotify)
            return
        }
        for fd in wake { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        state.withLock { $0.inotify = inotify; $0.wake = (wake[0], wake[1]) }
        #endif
    }

    deinit { close() }

    /// Waits until a file of the directory is written, `timeout` passes or the signal is
    /// closed, then drains the reports (several writes of one commit wake once). After
    /// ``close()``, returns at once.
    public func wait(upTo timeout: Duration) {
        let milliseconds = Int32(clamping: max(1, timeout.wholeMilliseconds))
        let descriptors = state.withLock { state -> (Int32, Int32)? in
            guard !state.closed else { return nil }
            state.waiting += 1
            return (state.inotify, state.wake.read)
        }
        guard let (inotify, wake) = descriptors else { return }
        defer { release(waited: true) }
        guard inotify >= 0 else {
            Thread.sleep(forTimeInterval: Double(milliseconds) / 1000)
            return
        }
        #if canImport(Glibc)
        var pollers = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        guard poll(&pollers, 2, milliseconds) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while read(inotify, &buffer, buffer.count) > 0 {}
        #endif
    }

    /// Wakes a wait in progress; later waits return at once.
    public func close() {
        let wake = state.withLock { state -> Int32 in
            guard !state.closed else { return -1 }
            state.closed = true
            return state.wake.write
        }
        #if canImport(Glibc)
        if wake >= 0 {
            var byte: UInt8 = 1
            _ = write(wake, &byte, 1)
        }
        #endif
        release(waited: false)
    }

    /// Frees the descriptors once the signal is closed and no wait uses them.
    private func release(waited: Bool) {
        let descriptors = state.withLock { state -> [Int32]? in
            if waited { state.waiting -= 1 }
            guard state.closed, state.waiting == 0, state.inotify >= 0 else { return nil }
            defer { (state.inotify, state.wake) = (-1, (-1, -1)) }
            return [state.inotify, state.wake.read, state.wake.write]
        }
        #if canImport(Glibc)
        for fd in descriptors ?? [] { Glibc.close(fd) }
        #endif
    }
}
