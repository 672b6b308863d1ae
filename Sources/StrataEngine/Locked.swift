import CThreadSanitizerHooks
import Synchronization

/// A value behind a lock: the standard library's `Mutex`, told to ThreadSanitizer.
///
/// On Linux, `Mutex` waits on a futex through atomics compiled into the standard library, which
/// ThreadSanitizer does not instrument, so it reports every value a `Mutex` guards as raced
/// (`make sanitize-thread` did, first in `ObserverRegistry`). Each `withLock` tells it of the lock
/// taken and released (`__tsan_acquire`/`__tsan_release` on the value's address), two calls that do
/// nothing outside a ThreadSanitizer build. Every lock of the package is a `Locked`, or a lock
/// ThreadSanitizer sees by itself (`NSLock`, `NSCondition`, pthread's).
///
/// The value's address identifies the lock to ThreadSanitizer: an empty value (`()`) has no
/// address of its own, so give every lock a value.
package struct Locked<Value: ~Copyable>: ~Copyable {
    @usableFromInline let mutex: Mutex<Value>

    @inlinable
    package init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value, the lock held (`Mutex.withLock`).
    @inlinable
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            let address = withUnsafeMutablePointer(to: &value) { UnsafeMutableRawPointer($0) }
            strata_tsan_acquire(address)
            defer { strata_tsan_release(address) }
            return try body(&value)
        }
    }

    /// Runs `body` with the value if the lock is free, else returns `nil` at once
    /// (`Mutex.withLockIfAvailable`).
    @inlinable
    package borrowing func withLockIfAvailable<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        try mutex.withLockIfAvailable { (value: inout sending Value) throws(E) -> sending Result in
            let address = withUnsafeMutablePointer(to: &value) { UnsafeMutableRawPointer($0) }
            strata_tsan_acquire(address)
            defer { strata_tsan_release(address) }
            return try body(&value)
        }
    }
}

extension Locked: @unchecked Sendable where Value: ~Copyable {}
