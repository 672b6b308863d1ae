import Dispatch

/// Threads for transactions started from async code. A transaction body is synchronous and
/// may wait (for the writer slot, for another process's lock, for fsync), so it runs here
/// rather than on Swift's cooperative pool, which has only as many threads as cores.
private let transactionQueue = DispatchQueue(label: "strata.transactions", attributes: .concurrent)

extension KeyValueEngine {
    /// Runs `body` in a read transaction on a thread outside the cooperative pool.
    public func read<R: Sendable>(_ body: @Sendable (any KeyValueReader) throws -> R) async throws -> R {
        // `body` runs and is released before this returns, so it does not really escape.
        try await withoutActuallyEscaping(body) { body in
            try await onTransactionThread(ClosureBox(body)) { try self.read($0) }
        }
    }

    /// Runs `body` in a write transaction on a thread outside the cooperative pool; waiting for
    /// the writer slot suspends the caller without holding a cooperative thread.
    public func write<R: Sendable>(_ body: @Sendable (any KeyValueWriter) throws -> R) async throws -> R {
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
    try await withCheckedThrowingContinuation { continuation in
        transactionQueue.async {
            let result = Result { try transaction(box.take()) }
            continuation.resume(with: result)
        }
    }
}

/// Holds a closure until the worker takes it out, leaving nothing behind.
private final class ClosureBox<Body>: @unchecked Sendable {
    private var body: Body?
    init(_ body: Body) { self.body = body }
    func take() -> Body {
        defer { body = nil }
        return body!
    }
}
