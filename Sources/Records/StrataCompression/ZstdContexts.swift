import CZstd
import Foundation
@_spi(StrataInternals) import StrataEngine

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

/// A pool of contexts of one kind: ``withContext(_:)`` lends one, made when none is free.
final class ZstdContexts: Sendable {
    private let compressing: Bool
    private let pool = ContextPool<ZstdContext>()

    init(compressing: Bool) { self.compressing = compressing }

    func withContext<T>(_ body: (ZstdContext) throws -> T) rethrows -> T {
        try pool.withContext(make: { ZstdContext(compressing: compressing) }, body)
    }
}

/// zstd's result codes: the error's name, for a result that is one.
func zstdError(_ result: Int) -> String? {
    ZSTD_isError(result) != 0 ? String(cString: ZSTD_getErrorName(result)) : nil
}
