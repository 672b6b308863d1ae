import Foundation
@_spi(StrataInternals) import StrataEngine

/// Runs `body` on a new thread; `join()` waits for it and rethrows what it threw.
final class BackgroundThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var error: Error?

    init(_ body: @escaping @Sendable () throws -> Void) {
        let thread = Thread { [self] in
            do { try body() } catch { self.error = error }
            done.signal()
        }
        thread.start()
    }

    func join() throws {
        done.wait()
        if let error { throw error }
    }
}

/// Runs async work to completion from synchronous code, on threads outside the caller's.
func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: Result<T, Error>?
    Task.detached {
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
