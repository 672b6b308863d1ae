import Dispatch

/// Threads for transactions started from async code. A transaction body is synchronous and
/// may wait (for the writer slot, for another process's lock, for fsync), so it runs here
/// rather than on Swift's cooperative pool, which has only as many threads as cores.
private let transactionQueue = DispatchQueue(label: "strata.transactions", attributes: .concurrent)

extension KeyValueEngine {
    /// Runs `body` in a read transaction on a thread outside the cooperative pool.
    public func read<R: Sendable>(_ body: @Sendable (any KeyValueReader) throws -> R) async throws -> R {
        // The body runs and ends before this function returns, so it does not really escape.
        try await withoutActuallyEscaping(body) { body in
            try await withCheckedThrowingContinuation { continuation in
                transactionQueue.async {
                    continuation.resume(with: Result { try self.read(body) })
                }
            }
        }
    }

    /// Runs `body` in a write transaction on a thread outside the cooperative pool; waiting for
    /// the writer slot suspends the caller without holding a cooperative thread.
    public func write<R: Sendable>(_ body: @Sendable (any KeyValueWriter) throws -> R) async throws -> R {
        try await withoutActuallyEscaping(body) { body in
            try await withCheckedThrowingContinuation { continuation in
                transactionQueue.async {
                    continuation.resume(with: Result { try self.write(body) })
                }
            }
        }
    }
}
