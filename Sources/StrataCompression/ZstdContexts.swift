import CZstd
import Foundation

/// One zstd compression or decompression context, freed with its owner. A context is reused
/// for many values (making one allocates hundreds of kilobytes) but never by two threads at once:
/// ``ZstdContexts`` lends each to one caller at a time, which is why it may cross threads
/// (`@unchecked Sendable`): between two callers it rests in the pool's lock.
final class ZstdContext: @unchecked Sendable {
    let compressor: OpaquePointer?
    let decompressor: OpaquePointer?

    init(compressing: Bool) {
        compressor = compressing ? ZSTD_createCCtx() : nil
        decompressor = compressing ? nil : ZSTD_createDCtx()
        // Out of memory for a few hundred kilobytes: nothing sensible is left to do.
        precondition((compressing ? compressor : decompressor) != nil, "zstd could not allocate a context")
    }

    deinit {
        if let compressor { ZSTD_freeCCtx(compressor) }
        if let decompressor { ZSTD_freeDCtx(decompressor) }
    }
}

/// A pool of contexts of one kind: ``withContext(_:)`` lends one, made when none is free. The
/// lock is an `NSLock`, not the package's `Locked`, whose `withLock` is not specialized across
/// modules (900 instructions per lock, callgrind: Benchmark.md).
final class ZstdContexts: @unchecked Sendable {
    private let compressing: Bool
    private let lock = NSLock()
    private var free: [ZstdContext] = []  // guarded by `lock`

    init(compressing: Bool) { self.compressing = compressing }

    func withContext<T>(_ body: (ZstdContext) throws -> T) rethrows -> T {
        lock.lock()
        let resting = free.popLast()
        lock.unlock()
        let context = resting ?? ZstdContext(compressing: compressing)
        defer {
            lock.lock()
            if free.count < 8 { free.append(context) }
            lock.unlock()
        }
        return try body(context)
    }
}

/// zstd's result codes: the error's name, for a result that is one.
func zstdError(_ result: Int) -> String? {
    ZSTD_isError(result) != 0 ? String(cString: ZSTD_getErrorName(result)) : nil
}
