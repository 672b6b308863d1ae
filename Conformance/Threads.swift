import Foundation
@_spi(StrataInternals) import StrataEngine

/// Runs `body` on a new thread; `join()` waits for it and rethrows what it threw.
public final class BackgroundThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var error: Error?

    /// Starts `body` on a new thread.
    public init(_ body: @escaping @Sendable () throws -> Void) {
        let thread = Thread { [self] in
            do { try body() } catch { self.error = error }
            done.signal()
        }
        thread.start()
    }

    /// Waits for the body to return; rethrows what it threw.
    public func join() throws {
        done.wait()
        if let error { throw error }
    }
}

/// Runs async work to completion from synchronous code, on threads outside the caller's: on
/// `executor` when one is given (see ``ThreadExecutor``), else on the cooperative pool.
public func blockingAwait<T: Sendable>(on executor: (any TaskExecutor)? = nil, _ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: Result<T, Error>?
    Task(executorPreference: executor) {
        do { result = .success(try await body()) } catch { result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try result!.get()
}

/// A one-shot signal between threads.
final class Signal: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func fire() { semaphore.signal() }
    /// Waits for the signal; a signal that does not come within a minute (the other side
    /// failed, or the engine deadlocked) fails the case instead of hanging the suite.
    func wait(_ what: String = "a signal from another thread") throws {
        if semaphore.wait(timeout: .now() + 60) == .timedOut {
            throw ConformanceFailure("waited 60 s for \(what): deadlock, or the other thread failed")
        }
    }
}

/// A flag shared between threads.
final class Flag: Sendable {
    private let value = Locked(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// An engine reference that may cross threads (engines are Sendable; `any` keeps it so).
typealias SharedEngine = any KeyValueEngine

extension Array where Element == UInt8 {
    /// An unsigned 64-bit counter stored big-endian.
    init(counter: UInt64) { self = Swift.withUnsafeBytes(of: counter.bigEndian) { Array($0) } }
    var counter: UInt64 { reduce(0) { $0 << 8 | UInt64($1) } }
}

/// A `TaskExecutor` with a thread of its own: tasks started with it as their preference
/// (`Task(executorPreference:)`) run there, however long other work holds the cooperative pool.
///
/// Cases run on a thread of their own and block it; the async work they start and wait for
/// (observations' iterators) runs here, so a test suite whose other tests hold every thread of
/// the pool cannot stall a case into a false failure.
///
/// ```swift
/// let executor = ThreadExecutor()
/// defer { executor.shutdown() }
/// let task = Task(executorPreference: executor) { try await work() }
/// ```
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    /// Starts the thread (named `name`), which runs until ``shutdown()``.
    public init(name: String = "strata-conformance-executor") {
        // The thread holds the executor until `shutdown()`: jobs never outlive it.
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Queues `job` to run on the thread, after the jobs queued before it; after ``shutdown()``,
    /// runs it on a thread of its own (a task a failing case left behind still ends).
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let late = condition.withLock {
            if stopped { return true }
            jobs.append(job)
            condition.signal()
            return false
        }
        if late {
            let executor = asUnownedTaskExecutor()
            Thread { job.runSynchronously(on: executor) }.start()
        }
    }

    /// Ends the thread once the jobs queued so far have run; jobs queued later each run on a
    /// thread of their own.
    public func shutdown() {
        condition.withLock {
            stopped = true
            condition.signal()
        }
    }

    private func run() {
        while true {
            let batch: [UnownedJob] = condition.withLock {
                while jobs.isEmpty && !stopped { condition.wait() }
                defer { jobs = [] }
                return jobs
            }
            if batch.isEmpty { return }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}
