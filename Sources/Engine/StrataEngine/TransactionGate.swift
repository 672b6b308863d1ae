import Foundation

/// The core's admission control: many readers at once, one writer at a time (other writers
/// wait), nested transactions refused, and `close()` that waits for running transactions instead
/// of freeing handles under them.
///
/// ``CoreEngine`` wraps each transaction in ``withRead(_:)`` or ``withWrite(_:)`` and releases
/// the storage inside ``close(_:)``. Nesting is detected per thread: transaction bodies are
/// synchronous, so a body runs entirely on the thread that began it.
///
/// `@unchecked Sendable`: every variable is guarded by `condition`.
final class TransactionGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var closing = false
    private var closed = false
    private var readers = 0
    private var writerActive = false
    private var exclusivePending = false
    /// Threads currently inside a transaction of this store.
    private var activeThreads: [pthread_t] = []

    init() {}

    /// Whether the store has been closed (or is closing).
    var isClosed: Bool {
        condition.lock(); defer { condition.unlock() }
        return closing || closed
    }

    /// Runs `body` as a reader: admitted unless the store is closed or this thread is already
    /// inside a transaction of this store.
    func withRead<R>(_ body: () throws -> R) throws -> R {
        condition.lock()
        do {
            try admitThisThread()
            while exclusivePending { condition.wait() }
            if closing || closed { throw EngineError.closed }
        } catch {
            condition.unlock()
            throw error
        }
        readers += 1
        activeThreads.append(pthread_self())
        condition.unlock()
        defer { leave { readers -= 1 } }
        return try body()
    }

    /// Runs `body` as the single writer, waiting while another writer runs.
    func withWrite<R>(_ body: () throws -> R) throws -> R {
        condition.lock()
        do {
            try admitThisThread()
            while writerActive && !closing && !closed { condition.wait() }
            if closing || closed { throw EngineError.closed }
        } catch {
            condition.unlock()
            throw error
        }
        writerActive = true
        activeThreads.append(pthread_self())
        condition.unlock()
        defer { leave { writerActive = false } }
        return try body()
    }

    /// Called by the running writer: waits until no reader of this process is inside a
    /// transaction (holding new readers back meanwhile), then runs `body` alone.
    /// LMDB needs this to remap a grown map file under no live pointers.
    ///
    /// Throws ``EngineError/mustRetry(reason:)`` when readers are still running after `timeout`
    /// seconds: a reader that waits for this writer (directly or through another thread) would
    /// otherwise deadlock the store. With `timeout` nil it waits for as long as readers run.
    func withReadersDrained<R>(timeout: Double? = 10, _ body: () throws -> R) throws -> R {
        condition.lock()
        exclusivePending = true
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        while readers > 0 {
            guard let deadline, let timeout else {
                condition.wait()
                continue
            }
            if !condition.wait(until: deadline) && readers > 0 {
                exclusivePending = false
                condition.broadcast()
                condition.unlock()
                throw EngineError.mustRetry(reason: "read transactions of this process did not end within \(Int(timeout)) s")
            }
        }
        condition.unlock()
        defer {
            condition.lock()
            exclusivePending = false
            condition.broadcast()
            condition.unlock()
        }
        return try body()
    }

    /// Refuses new transactions, waits for the running ones to end, then runs `release`
    /// (which frees the engine's handles) once. Later calls do nothing.
    func close(_ release: () throws -> Void) throws {
        condition.lock()
        if closed || closing { condition.unlock(); return }
        if activeThreads.contains(where: { pthread_equal($0, pthread_self()) != 0 }) {
            condition.unlock()
            throw EngineError.nestedTransaction
        }
        closing = true
        condition.broadcast()
        while readers > 0 || writerActive { condition.wait() }
        condition.unlock()
        defer {
            condition.lock()
            closed = true
            closing = false
            condition.broadcast()
            condition.unlock()
        }
        try release()
    }

    // Called with the lock held.
    private func admitThisThread() throws {
        if closing || closed { throw EngineError.closed }
        if activeThreads.contains(where: { pthread_equal($0, pthread_self()) != 0 }) {
            throw EngineError.nestedTransaction
        }
    }

    private func leave(_ update: () -> Void) {
        condition.lock()
        update()
        if let i = activeThreads.firstIndex(where: { pthread_equal($0, pthread_self()) != 0 }) {
            activeThreads.remove(at: i)
        }
        condition.broadcast()
        condition.unlock()
    }
}
