import Foundation

/// Where an online job stands: pairs handled so far and in all, and what it is doing.
///
/// A preparation (``Store/prepare(_:batchSize:onBatch:)``) counts records, each pass over them
/// again (one per index to build and one to migrate); a key rotation (``Store/rotateKeys(batchSize:onBatch:)``)
/// counts record values, then covering index entries.
public struct JobProgress: Sendable, Hashable {
    /// Handled so far, over every pass.
    public var done = 0
    /// To handle in all, as counted at the start (raised when the work outgrows it).
    public var total = 0
    /// What the job is doing: `building index byEmail`, `clearing index byOld`, `migrating
    /// records`, `re-sealing records`, `re-sealing covering entries`, then `done` or `cancelled`.
    public var phase = "starting"

    /// Progress at the start.
    public init() {}
}

/// An online job running on a thread of its own (``Store/prepare(_:batchSize:onBatch:)``,
/// ``Store/rotateKeys(batchSize:onBatch:)``): its progress, its outcome, a way to stop it.
///
/// `@unchecked Sendable`: every variable is guarded by `condition`.
public final class OnlineJob<Report: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var current: JobProgress
    private var outcome: Result<Report, any Error>?
    private var cancelled = false
    private var waiters: [CheckedContinuation<Report, any Error>] = []

    init(starting progress: JobProgress) {
        current = progress
    }

    /// Where the job stands now.
    public var progress: JobProgress { condition.withLock { current } }

    /// Whether it has finished (done, failed or cancelled).
    public var isFinished: Bool { condition.withLock { outcome != nil } }

    /// Stops the job after the batch in flight (whose work commits); a later start continues.
    public func cancel() { condition.withLock { cancelled = true } }

    /// Blocks until the job finishes; returns its report or throws what stopped it.
    @discardableResult
    public func wait() throws -> Report {
        condition.lock()
        defer { condition.unlock() }
        while outcome == nil { condition.wait() }
        return try outcome!.get()
    }

    /// The job's report, once it finishes (or what stopped it).
    public var report: Report {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                condition.lock()
                if let outcome {
                    condition.unlock()
                    continuation.resume(with: outcome)
                } else {
                    waiters.append(continuation)
                    condition.unlock()
                }
            }
        }
    }

    var isCancelled: Bool { condition.withLock { cancelled } }

    @discardableResult
    func update(_ change: (inout JobProgress) -> Void) -> JobProgress {
        condition.withLock {
            change(&current)
            return current
        }
    }

    func finish(_ result: Result<Report, any Error>) {
        condition.lock()
        outcome = result
        let waiting = waiters
        waiters = []
        condition.broadcast()
        condition.unlock()
        for waiter in waiting { waiter.resume(with: result) }
    }

    /// Starts `work` on a thread of its own, this job watching it.
    static func start(_ progress: JobProgress, _ work: @escaping (OnlineJob) throws -> Report) -> OnlineJob {
        let job = OnlineJob(starting: progress)
        let body = UncheckedSendable(work)
        Thread.detachNewThread { job.finish(Result { try body.value(job) }) }
        return job
    }
}
