@_spi(StrataInternals) import StrataEngine

/// A value read and written under a lock: the transport's counters, which the tests read while
/// the transport's threads count (and the tests' own fault switches).
@propertyWrapper
final class Guarded<Value: Sendable>: Sendable {
    private let value: Locked<Value>

    init(wrappedValue: Value) { value = Locked(wrappedValue) }

    var wrappedValue: Value {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }

    /// Reads and changes the value in one locked step.
    func update<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}

extension Guarded where Value == Int {
    /// Uses one of a fault's remaining occurrences, if any: whether there was one.
    func take() -> Bool {
        update { count in
            guard count > 0 else { return false }
            count -= 1
            return true
        }
    }
}
