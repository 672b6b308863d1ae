import Dispatch
import Foundation

/// Threads for transactions started from async code. A transaction body is synchronous and
/// may wait (for the writer slot, for another process's lock, for fsync), so it runs on a thread
/// of its own rather than on Swift's cooperative pool, which has only as many threads as cores.
/// Each transaction gets a serial queue: serial queues run on libdispatch's overcommitting
/// threads, which are added when all are busy; a shared concurrent queue would be limited to
/// about one thread per core and let blocked bodies starve the others.
private func transactionQueue() -> DispatchQueue { DispatchQueue(label: "strata.transaction") }

// Cancellation: a task cancelled before its transaction starts (also while it waits for a
// transaction thread) gets `CancellationError` and the transaction never starts. Once the body
// runs it runs to the end, as any synchronous code does, and commits or rolls back as usual.
extension KeyValueEngine {
    /// The default: see ``readOnTransactionThread(_:)``.
    public func read<R: Sendable>(_ body: @Sendable (any KeyValueReader) throws -> R) async throws -> R {
        try await readOnTransactionThread(body)
    }

    /// The default: see ``writeOnTransactionThread(_:)``.
    public func write<R: Sendable>(_ body: @Sendable (any KeyValueWriter) throws -> R) async throws -> R {
        try await writeOnTransactionThread(body)
    }

    /// Runs `body` in a read transaction (the synchronous `read`) on a thread outside the
    /// cooperative pool: what an engine's async `read` does.
    public func readOnTransactionThread<R: Sendable>(_ body: @Sendable (any KeyValueReader) throws -> R) async throws -> R {
        // `body` runs and is released before this returns, so it does not really escape.
        try await withoutActuallyEscaping(body) { body in
            try await onTransactionThread(ClosureBox(body)) { try self.read($0) }
        }
    }

    /// Runs `body` in a write transaction (the synchronous `write`) on a thread outside the
    /// cooperative pool; waiting for the writer slot suspends the caller without holding a
    /// cooperative thread: what an engine's async `write` does.
    public func writeOnTransactionThread<R: Sendable>(_ body: @Sendable (any KeyValueWriter) throws -> R) async throws -> R {
        try await withoutActuallyEscaping(body) { body in
            try await onTransactionThread(ClosureBox(body)) { try self.write($0) }
        }
    }
}

/// Runs `transaction` with the boxed body on a transaction thread and waits for it. The worker
/// empties the box *before* resuming the caller, so no reference to the body outlives
/// `withoutActuallyEscaping` (a dispatch block released after the resume would trip its escape
/// check: swiftlang/swift#84135).
private func onTransactionThread<Body, R: Sendable>(
    _ box: ClosureBox<Body>, _ transaction: @escaping @Sendable (Body) throws -> R
) async throws -> R {
    try Task.checkCancellation()
    let gate = StartGate()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            transactionQueue().async {
                guard gate.start() else {
                    _ = box.take()
                    continuation.resume(throwing: CancellationError())
                    return
                }
                let result = Result { try transaction(box.take()) }
                continuation.resume(with: result)
            }
        }
    } onCancel: {
        gate.cancel()
    }
}

/// Whether a queued transaction may still start: cancellation wins only before the start.
private final class StartGate: Sendable {
    private let state = Locked((started: false, cancelled: false))

    /// Marks the transaction started; false when it was cancelled first.
    func start() -> Bool {
        state.withLock { state in
            if state.cancelled { return false }
            state.started = true
            return true
        }
    }

    func cancel() { state.withLock { if !$0.started { $0.cancelled = true } } }
}

/// Holds a closure until the worker takes it out, leaving nothing behind.
///
/// `@unchecked Sendable`: the body is taken once, by the one thread that runs it.
private final class ClosureBox<Body>: @unchecked Sendable {
    private var body: Body?
    init(_ body: Body) { self.body = body }
    func take() -> Body {
        defer { body = nil }
        return body!
    }
}
