import CThreadSanitizerHooks
import Synchronization

/// A value behind a lock: the standard library's `Mutex`, told to ThreadSanitizer.
///
/// On Linux, `Mutex` waits on a futex through atomics compiled into the standard library, which
/// ThreadSanitizer does not instrument, so it reports every value a `Mutex` guards as raced
/// (`make sanitize-thread` did, first in `ObserverRegistry`). Each `withLock` tells it of the lock
/// taken and released (`__tsan_acquire`/`__tsan_release` on the mutex's address), two calls to
/// empty functions outside a ThreadSanitizer build. Every lock of the package is a `Locked`, or a
/// lock ThreadSanitizer sees by itself (`NSLock`, `NSCondition`, pthread's).
///
/// Declared `public` behind the `StrataInternals` SPI (modules of the package import it with
/// `@_spi(StrataInternals) import StrataEngine`), not `package`: Swift 6.3 does not specialize an
/// `@inlinable package` generic in another module, so every `withLock` there called the generic
/// entry point and looked up `Mutex<Value>`'s metadata, about 900 instructions a lock (callgrind:
/// `Store.withTransaction`, `Catalog.check`, the Codable record types' cache). A `public` one is
/// specialized and inlined in its caller; the SPI keeps it out of the documented surface.
@_spi(StrataInternals)
public struct Locked<Value: ~Copyable>: ~Copyable {
    @usableFromInline let mutex: Mutex<Value>

    @inlinable
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// The mutex's address, which identifies the lock to ThreadSanitizer. Taken from a borrow of
    /// the mutex (a read): taking the value's address inside the lock was itself a modifying
    /// access before the acquire, which ThreadSanitizer reported. `Mutex` is address-only and not
    /// copyable, so the borrow is the mutex where it lies.
    @inlinable
    public var lockAddress: UnsafeMutableRawPointer {
        withUnsafePointer(to: mutex) { UnsafeMutableRawPointer(mutating: $0) }
    }

    /// Runs `body` with the value, the lock held (`Mutex.withLock`).
    @inlinable
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let address = lockAddress
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            strata_tsan_acquire(address)
            defer { strata_tsan_release(address) }
            return try body(&value)
        }
    }

    /// Runs `body` with the value if the lock is free, else returns `nil` at once
    /// (`Mutex.withLockIfAvailable`).
    @inlinable
    public borrowing func withLockIfAvailable<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        let address = lockAddress
        return try mutex.withLockIfAvailable { (value: inout sending Value) throws(E) -> sending Result in
            strata_tsan_acquire(address)
            defer { strata_tsan_release(address) }
            return try body(&value)
        }
    }
}

extension Locked: @unchecked Sendable where Value: ~Copyable {}
