/// Resting library contexts (zstd's, libcrypto's), lent one caller at a time: `withContext(make:_:)`
/// takes one from the pool or makes one (outside the lock: making may be slow), and puts it back
/// afterwards, keeping at most `keeping` of them. A context never serves two threads at once;
/// between callers it rests behind the pool's lock, which is why it may cross threads.
///
/// Public behind the `StrataInternals` SPI, inlinable, for the reason `Locked` is: it is on the
/// transforms' path of every value, in other modules.
@_spi(StrataInternals)
public final class ContextPool<Context: AnyObject & Sendable>: Sendable {
    @usableFromInline let resting: Locked<[Context]>
    @usableFromInline let keeping: Int

    /// An empty pool that keeps at most `keeping` resting contexts.
    public init(keeping: Int = 8) {
        resting = Locked([])
        self.keeping = keeping
    }

    /// Runs `body` with a resting context, or with one `make` makes when none rests.
    @inlinable
    public func withContext<T>(make: () throws -> Context, _ body: (Context) throws -> T) rethrows -> T {
        let context = try resting.withLock { $0.popLast() } ?? make()
        defer {
            resting.withLock { pool in
                if pool.count < keeping { pool.append(context) }
            }
        }
        return try body(context)
    }
}
