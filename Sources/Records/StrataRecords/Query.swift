import StrataEngine
import StrataKeyCodec

/// A condition on the last key component of a query.
///
/// `range` and `closedRange` exist for `Comparable` values: `.range("A"..<"L")`.
public enum Comparison<Value: KeyComponent & Sendable>: Sendable {
    /// Keys whose component equals the value.
    case equals(Value)
    /// Keys whose component sorts below the value; nearest first (descending) by default.
    case lessThan(Value)
    /// Keys whose component sorts at or below the value; descending by default.
    case lessThanOrEqual(Value)
    /// Keys whose component sorts above the value.
    case greaterThan(Value)
    /// Keys whose component sorts at or above the value.
    case greaterThanOrEqual(Value)
    /// From `lower` (inclusive) to `upper` (inclusive when `upperInclusive`).
    case between(Value, Value, upperInclusive: Bool)
    /// Any of these values; missing ones are skipped.
    case oneOf([Value])
}

extension Comparison where Value: Comparable {
    /// `lower ..< upper`
    public static func range(_ range: Range<Value>) -> Comparison { .between(range.lowerBound, range.upperBound, upperInclusive: false) }
    /// `lower ... upper`
    public static func closedRange(_ range: ClosedRange<Value>) -> Comparison { .between(range.lowerBound, range.upperBound, upperInclusive: true) }
}

/// Ascending or descending key order.
///
/// A query without an explicit order returns the nearest records first: descending when its last
/// component is `lessThan` or `lessThanOrEqual` (walking down from the bound, as Empire does),
/// ascending otherwise. An explicit `order:` always wins.
public enum Order: Sendable {
    /// `ascending`: the lowest key first; `descending`: the highest first. Keys sort by their encoded
    /// bytes (KeyEncoding.md): numbers by value, strings by Unicode scalars, not by Swift's `String <`.
    case ascending, descending
}

// A comparison where a plain value belongs (before the last component, or in delete, fetch or
// exists) resolves to these instead of Comparison's cases: the compiler then says why.
extension KeyComponent {
    @available(*, unavailable, message: "only the last key component of a select or count may be a comparison; give this one a plain value (delete, fetch and exists take plain values only)")
    public static func lessThan(_ value: Self) -> Self { fatalError() }
    @available(*, unavailable, message: "only the last key component of a select or count may be a comparison; give this one a plain value (delete, fetch and exists take plain values only)")
    public static func lessThanOrEqual(_ value: Self) -> Self { fatalError() }
    @available(*, unavailable, message: "only the last key component of a select or count may be a comparison; give this one a plain value (delete, fetch and exists take plain values only)")
    public static func greaterThan(_ value: Self) -> Self { fatalError() }
    @available(*, unavailable, message: "only the last key component of a select or count may be a comparison; give this one a plain value (delete, fetch and exists take plain values only)")
    public static func greaterThanOrEqual(_ value: Self) -> Self { fatalError() }
    @available(*, unavailable, message: "only the last key component of a select or count may be a comparison; give this one a plain value (delete, fetch and exists take plain values only)")
    public static func equals(_ value: Self) -> Self { fatalError() }
    @available(*, unavailable, message: "only the last key component of a select or count may be a comparison; give this one a plain value (delete, fetch and exists take plain values only)")
    public static func between(_ lower: Self, _ upper: Self, upperInclusive: Bool) -> Self { fatalError() }
    @available(*, unavailable, message: "only the last key component of a select or count may be a comparison; give this one a plain value (delete, fetch and exists take plain values only)")
    public static func oneOf(_ values: [Self]) -> Self { fatalError() }
}

extension KeyComponent where Self: Comparable {
    @available(*, unavailable, message: "only the last key component of a select or count may be a comparison; give this one a plain value (delete, fetch and exists take plain values only)")
    public static func range(_ range: Range<Self>) -> Self { fatalError() }
    @available(*, unavailable, message: "only the last key component of a select or count may be a comparison; give this one a plain value (delete, fetch and exists take plain values only)")
    public static func closedRange(_ range: ClosedRange<Self>) -> Self { fatalError() }
}

/// A query on a record type's key: equality on leading components, optionally a comparison on
/// the next one. Only the last component of a query may be a range, and no component may be
/// skipped; the macro's generated methods make other shapes compile errors, and for
/// hand-written queries ``TransactionContext`` checks the shape against ``RecordType/key``.
public struct RecordQuery: Sendable {
    /// Types of the components, in order, for the run-time check.
    @usableFromInline var componentTypes: [ObjectIdentifier] = []
    @usableFromInline var prefix: [UInt8] = []
    /// Key ranges after the prefix, in ascending key order (several for `oneOf`).
    @usableFromInline var bounds: [[ComponentBound]] = [[]]
    /// `oneOf` with no values: nothing matches.
    @usableFromInline var isEmpty = false
    /// Whether a comparison was given; a component after it makes the query invalid.
    @usableFromInline var hasComparison = false
    /// Set when `equal` or `then` follows `then`: refused by the run-time check.
    @usableFromInline var continuesAfterComparison = false
    /// The order without an explicit one: nearest first (see ``Order``).
    @usableFromInline var defaultOrder = Order.ascending

    /// Every record of the type.
    public static var all: RecordQuery { RecordQuery() }

    /// Adds an equality on the next key component.
    public func equal<V: KeyComponent>(_ value: V) -> RecordQuery {
        var query = self
        if hasComparison { query.continuesAfterComparison = true }
        query.componentTypes.append(ObjectIdentifier(V.self))
        var writer = KeyWriter()
        writer.append(value)
        query.prefix += writer.bytes
        return query
    }

    /// Adds a comparison on the next key component; it must be the last.
    public func then<V>(_ comparison: Comparison<V>) -> RecordQuery {
        var query = self
        if hasComparison { query.continuesAfterComparison = true }
        query.hasComparison = true
        query.componentTypes.append(ObjectIdentifier(V.self))
        func e(_ v: V) -> [UInt8] {
            var writer = KeyWriter()
            writer.append(v)
            return writer.bytes
        }
        switch comparison {
        case .equals(let v): query.bounds = [[.above(e(v), inclusive: true), .below(e(v), inclusive: true)]]
        case .lessThan(let v):
            query.bounds = [[.below(e(v), inclusive: false)]]
            query.defaultOrder = .descending
        case .lessThanOrEqual(let v):
            query.bounds = [[.below(e(v), inclusive: true)]]
            query.defaultOrder = .descending
        case .greaterThan(let v): query.bounds = [[.above(e(v), inclusive: false)]]
        case .greaterThanOrEqual(let v): query.bounds = [[.above(e(v), inclusive: true)]]
        case let .between(lower, upper, upperInclusive):
            query.bounds = [[.above(e(lower), inclusive: true), .below(e(upper), inclusive: upperInclusive)]]
        case .oneOf(let values):
            // Each value once, in key order; an empty set selects nothing.
            let keys = Set(values.map(e)).sorted { $0.lexicographicallyPrecedes($1) }
            query.bounds = keys.map { [.above($0, inclusive: true), .below($0, inclusive: true)] }
            query.isEmpty = keys.isEmpty
        }
        return query
    }

    /// Whether the query is equalities only (no comparison, not an empty `oneOf`): one range of
    /// the keys that start with ``prefix``.
    @inlinable var isEquality: Bool { !isEmpty && bounds.count == 1 && bounds[0].isEmpty }

    /// Equalities on `components` components whose encodings are `prefix`.
    @usableFromInline init(equalityPrefix prefix: [UInt8], components: Int) {
        self.prefix = prefix
        componentTypes = Array(repeating: ObjectIdentifier(RecordQuery.self), count: components)
    }

    init() {}

    /// The byte ranges to scan for records in `keyspacePrefix`, in ascending order.
    @usableFromInline func ranges(keyspacePrefix: [UInt8]) -> [KeyRange] {
        if isEmpty { return [] }
        let prefix = keyspacePrefix + self.prefix
        return bounds.map { KeyRange.components(prefix: prefix, $0) }
    }
}
