import Foundation
import StrataEngine
import StrataKeyCodec

// A Foundation `Predicate` as terms the planner can read: comparisons of a stored property with a
// value become `compare`, `in` a literal array `oneOf`, a collection property's `contains` a value
// `contains`; `&&`, `||` and `!` keep their shape; anything else is `opaque` and evaluated by
// Foundation. Terms are built once per query, when the query is made.
//
// Semantics (the Querying article): a comparison of a property with a value compares their key
// encodings, which is the order every index and the key keep (strings by Unicode scalars, so NFC
// and NFD spellings differ, as in SQLite). Only types whose encoding orders as Swift's `<` and `==`
// do (integers, `Bool`, `String`, `Data`, optionals of those) become such terms; a `Double`,
// `Float` or `Date` comparison is opaque (Swift's answer: NaN matches no comparison).

/// A comparison's operator.
@usableFromInline
enum TermOperator: Sendable {
    case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual

    /// The operator with its operands swapped (`5 < x` is `x > 5`).
    var swapped: TermOperator {
        switch self {
        case .equal, .notEqual: self
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        }
    }

    /// The operator of the negated comparison (`!(x < 5)` is `x >= 5`).
    var negated: TermOperator {
        switch self {
        case .equal: .notEqual
        case .notEqual: .equal
        case .less: .greaterOrEqual
        case .lessOrEqual: .greater
        case .greater: .lessOrEqual
        case .greaterOrEqual: .less
        }
    }

    var symbol: String {
        switch self {
        case .equal: "=="
        case .notEqual: "!="
        case .less: "<"
        case .lessOrEqual: "<="
        case .greater: ">"
        case .greaterOrEqual: ">="
        }
    }

    /// Whether `order` (the sign of a bytewise comparison of the property with the value) satisfies it.
    @inlinable
    func holds(_ order: Int) -> Bool {
        switch self {
        case .equal: order == 0
        case .notEqual: order != 0
        case .less: order < 0
        case .lessOrEqual: order <= 0
        case .greater: order > 0
        case .greaterOrEqual: order >= 0
        }
    }
}

/// A stored property a term reads: its key path, name and the encoding of its value in a record.
///
/// `@unchecked Sendable`: the closure captures only a key path, which is immutable.
@usableFromInline
struct PropertyReference<R>: @unchecked Sendable {
    let keyPath: AnyKeyPath
    /// The property's name (from ``Record/storedKeyPaths``), or the key path as Swift prints it.
    let name: String
    /// The type of the values (elements, for a collection), as the key and indexes check it.
    let typeID: ObjectIdentifier
    /// Calls `visit` with the key encoding of each value of the property in a record (one for a
    /// plain property, each element for a collection) until it returns `true`; returns whether it did.
    let encode: (R, ([UInt8]) -> Bool) -> Bool
    /// The stored format of the property's type (of the collection, for elements): a view reads
    /// the property in place only from a field stored in it (``ViewFilter``).
    var fieldFormat: String? = nil
}

/// A predicate as the planner reads it (see the top of this file).
///
/// `@unchecked Sendable`: opaque terms hold closures over a Foundation predicate expression
/// (`Sendable`) and property references (see ``PropertyReference``).
@usableFromInline
indirect enum PredicateTerm<R>: @unchecked Sendable {
    /// The property (single-valued) compared with an encoded value.
    case compare(PropertyReference<R>, TermOperator, [UInt8], text: String)
    /// The property (single-valued) equals one of the encoded values (sorted, distinct).
    case oneOf(PropertyReference<R>, [[UInt8]], texts: [String])
    /// The collection property has an element equal to the encoded value.
    case contains(PropertyReference<R>, [UInt8], text: String)
    case and([PredicateTerm])
    case or([PredicateTerm])
    case not(PredicateTerm)
    case constant(Bool)
    /// A part the planner does not read: Foundation evaluates it on the record.
    case opaque(String, (R) throws -> Bool)

    /// Whether `record` matches.
    @usableFromInline
    func matches(_ record: R) throws -> Bool {
        switch self {
        case let .compare(property, op, value, _):
            return property.encode(record) { op.holds(Bytewise.compare($0, value)) }
        case let .oneOf(property, values, _):
            return property.encode(record) { encoded in values.contains { Bytewise.compare(encoded, $0) == 0 } }
        case let .contains(property, value, _):
            return property.encode(record) { Bytewise.compare($0, value) == 0 }
        case .and(let terms):
            for term in terms where try !term.matches(record) { return false }
            return true
        case .or(let terms):
            for term in terms where try term.matches(record) { return true }
            return false
        case .not(let term): return try !term.matches(record)
        case .constant(let value): return value
        case let .opaque(_, evaluate): return try evaluate(record)
        }
    }

    /// The term in words: `age > 30 && (name == "Jane" || name in ["A", "B"])`.
    var description: String {
        func grouped(_ term: PredicateTerm) -> String {
            switch term {
            case .and, .or: "(\(term.description))"
            default: term.description
            }
        }
        switch self {
        case let .compare(property, op, _, text): return "\(property.name) \(op.symbol) \(text)"
        case let .oneOf(property, _, texts): return "\(property.name) in [\(texts.joined(separator: ", "))]"
        case let .contains(property, _, text): return "\(property.name) contains \(text)"
        case .and(let terms): return terms.map(grouped).joined(separator: " && ")
        case .or(let terms): return terms.map(grouped).joined(separator: " || ")
        case .not(let term): return "!" + grouped(term)
        case .constant(let value): return "\(value)"
        case .opaque(let text, _): return text
        }
    }

    /// The terms that must all hold (the operands of a top-level `&&`, `!` pushed inside
    /// comparisons), in order.
    var conjuncts: [PredicateTerm] {
        switch self {
        case .and(let terms): terms.flatMap(\.conjuncts)
        case .constant(true): []
        case let .not(.compare(property, op, value, text)): [.compare(property, op.negated, value, text: text)]
        case .not(.or(let terms)): terms.flatMap { PredicateTerm.not($0).conjuncts }
        case .not(.not(let term)): term.conjuncts
        default: [self]
        }
    }

    /// The terms of which one must hold (the operands of a top-level `||`), in order.
    var disjuncts: [PredicateTerm] {
        switch self {
        case .or(let terms): terms.flatMap(\.disjuncts)
        default: [self]
        }
    }

    /// The conjunction of `terms` (`true` when there are none).
    static func all(_ terms: [PredicateTerm]) -> PredicateTerm {
        terms.isEmpty ? .constant(true) : terms.count == 1 ? terms[0] : .and(terms)
    }
}

// MARK: Reading Foundation's expression tree

/// What the terms are built with: the predicate's variable and the record type's property names.
struct TermContext<R: Record> {
    let variable: PredicateExpressions.Variable<R>
    let names: [AnyKeyPath: String]

    init(_ predicate: Predicate<R>) {
        variable = predicate.variable
        var names: [AnyKeyPath: String] = [:]
        for (name, keyPath) in R.storedKeyPaths { names[keyPath] = name }
        self.names = names
    }

    func bindings(_ record: R) -> PredicateBindings { PredicateBindings((variable, record)) }

    /// The term of `expression`, or an opaque one Foundation evaluates.
    func term<E: PredicateExpression>(_ expression: E) -> PredicateTerm<R> where E.Output == Bool {
        if let readable = expression as? any ReadableExpression, let term = readable.term(self) { return term }
        return .opaque(Self.text(of: expression)) { record in try expression.evaluate(bindings(record)) }
    }

    /// An opaque part in words: its expression type's name, without the module paths.
    static func text(of expression: Any) -> String {
        "{" + "\(type(of: expression))".replacingOccurrences(of: "PredicateExpressions.", with: "") + "}"
    }
}

/// An expression the planner reads (conformed to by Foundation's expression types below).
protocol ReadableExpression {
    func term<R: Record>(_ context: TermContext<R>) -> PredicateTerm<R>?
}

/// A stored property of the predicate's variable: `$0.age`.
protocol PropertyExpression {
    /// The property's reference when the expression reads the variable's stored property and its
    /// type is ordered as Swift orders it (see the top of this file); `elements` asks for a
    /// collection property's elements.
    func reference<R: Record>(_ context: TermContext<R>, elements: Bool) -> PropertyReference<R>?
    /// The key encoding of `value` as the property's type (or element type), if it is one.
    func encodeValue(_ value: Any, elements: Bool) -> [UInt8]?
}

/// A constant: `30`, `nil`, `["Jane", "Joan"]`.
protocol ConstantExpression {
    var constant: Any { get }
}

extension PredicateExpressions.Value: ConstantExpression {
    var constant: Any { value }
}

extension PredicateExpressions.NilLiteral: ConstantExpression {
    var constant: Any { Optional<Wrapped>.none as Any }
}

/// A negative literal: `#Predicate { $0.age > -10 }` negates the value 10. A value whose negation
/// overflows (`-Int.min`) is no constant: Foundation evaluates the term (and traps, as Swift would).
extension PredicateExpressions.UnaryMinus: ConstantExpression where Wrapped: ConstantExpression {
    var constant: Any {
        guard let value = wrapped.constant as? Wrapped.Output else { return NotAConstant() }
        if let integer = value as? any FixedWidthInteger, Self.overflows(integer) { return NotAConstant() }
        return -value
    }

    private static func overflows<I: FixedWidthInteger>(_ value: I) -> Bool {
        I.isSigned ? value == I.min : value != 0
    }
}

/// What a constant expression gives when it cannot be computed: encodes as no property's value.
private struct NotAConstant {}

/// A type whose key encoding orders and equates as Swift's `<` and `==` do.
protocol OrderedAsSwift: KeyComponent {}
extension Int: OrderedAsSwift {}
extension Int8: OrderedAsSwift {}
extension Int16: OrderedAsSwift {}
extension Int32: OrderedAsSwift {}
extension Int64: OrderedAsSwift {}
extension UInt: OrderedAsSwift {}
extension UInt8: OrderedAsSwift {}
extension UInt16: OrderedAsSwift {}
extension UInt32: OrderedAsSwift {}
extension UInt64: OrderedAsSwift {}
extension Bool: OrderedAsSwift {}
extension String: OrderedAsSwift {}
extension Data: OrderedAsSwift {}
extension Optional: OrderedAsSwift where Wrapped: OrderedAsSwift {}

extension OrderedAsSwift {
    static func encoded(_ value: Any) -> [UInt8]? {
        guard let value = value as? Self else { return nil }
        var writer = KeyWriter(capacity: 16)
        writer.append(value)
        return writer.bytes
    }

    static func reference<R>(_ keyPath: AnyKeyPath, name: String) -> PropertyReference<R>? {
        guard let keyPath = keyPath as? KeyPath<R, Self> else { return nil }
        var reference: PropertyReference<R> = PropertyReference(keyPath: keyPath, name: name, typeID: ObjectIdentifier(Self.self)) { record, visit in
            var writer = KeyWriter(capacity: 16)
            writer.append(record[keyPath: keyPath])
            return visit(writer.bytes)
        }
        reference.fieldFormat = (Self.self as? any FieldValue.Type)?.fieldFormat.descriptor
        return reference
    }

    static func elementsReference<R, C: Sequence>(_ keyPath: KeyPath<R, C>, name: String) -> PropertyReference<R>? {
        var reference: PropertyReference<R> = PropertyReference(keyPath: keyPath, name: name, typeID: ObjectIdentifier(Self.self)) { record, visit in
            for element in record[keyPath: keyPath] {
                guard let element = element as? Self else { continue }
                var writer = KeyWriter(capacity: 16)
                writer.append(element)
                if visit(writer.bytes) { return true }
            }
            return false
        }
        reference.fieldFormat = (C.self as? any FieldValue.Type)?.fieldFormat.descriptor
        return reference
    }
}

extension PredicateExpressions.KeyPath: PropertyExpression {
    func reference<R: Record>(_ context: TermContext<R>, elements: Bool) -> PropertyReference<R>? {
        guard let variable = root as? PredicateExpressions.Variable<R>, variable.key == context.variable.key else { return nil }
        let name = context.names[keyPath] ?? "\(keyPath)"
        if !elements {
            return (Output.self as? any OrderedAsSwift.Type)?.reference(keyPath, name: name)
        }
        guard let sequence = Output.self as? any Sequence.Type else { return nil }
        return elementReference(sequence, name: name)
    }

    private func elementReference<R, S: Sequence>(_: S.Type, name: String) -> PropertyReference<R>? {
        guard let keyPath = keyPath as? KeyPath<R, S> else { return nil }
        return (S.Element.self as? any OrderedAsSwift.Type)?.elementsReference(keyPath, name: name)
    }

    func encodeValue(_ value: Any, elements: Bool) -> [UInt8]? {
        if !elements { return (Output.self as? any OrderedAsSwift.Type)?.encoded(value) }
        guard let sequence = Output.self as? any Sequence.Type else { return nil }
        return Self.encodeElement(value, sequence)
    }

    private static func encodeElement<S: Sequence>(_ value: Any, _: S.Type) -> [UInt8]? {
        (S.Element.self as? any OrderedAsSwift.Type)?.encoded(value)
    }
}

/// `$0.active` alone: the property is `true`.
extension PredicateExpressions.KeyPath: ReadableExpression {
    func term<R: Record>(_ context: TermContext<R>) -> PredicateTerm<R>? {
        guard Output.self == Bool.self, let property = reference(context, elements: false),
              let value = encodeValue(true, elements: false) else { return nil }
        return .compare(property, .equal, value, text: "true")
    }
}

extension PredicateExpressions.Value: ReadableExpression {
    func term<R: Record>(_ context: TermContext<R>) -> PredicateTerm<R>? {
        (value as? Bool).map { .constant($0) }
    }
}

extension PredicateExpressions.Conjunction: ReadableExpression {
    func term<R: Record>(_ context: TermContext<R>) -> PredicateTerm<R>? { .and([context.term(lhs), context.term(rhs)]) }
}

extension PredicateExpressions.Disjunction: ReadableExpression {
    func term<R: Record>(_ context: TermContext<R>) -> PredicateTerm<R>? { .or([context.term(lhs), context.term(rhs)]) }
}

extension PredicateExpressions.Negation: ReadableExpression {
    func term<R: Record>(_ context: TermContext<R>) -> PredicateTerm<R>? { .not(context.term(wrapped)) }
}

/// `property op value` or `value op property`, as a comparison term.
private func comparison<R: Record>(_ lhs: Any, _ op: TermOperator, _ rhs: Any, _ context: TermContext<R>) -> PredicateTerm<R>? {
    func read(_ property: Any, _ op: TermOperator, _ constant: Any) -> PredicateTerm<R>? {
        guard let property = property as? any PropertyExpression, let constant = (constant as? any ConstantExpression)?.constant,
              let reference = property.reference(context, elements: false),
              let value = property.encodeValue(constant, elements: false) else { return nil }
        return .compare(reference, op, value, text: describeConstant(constant))
    }
    return read(lhs, op, rhs) ?? read(rhs, op.swapped, lhs)
}

/// A constant as a predicate would spell it: `"Jane"`, `30`, `nil`.
func describeConstant(_ value: Any) -> String {
    if let string = value as? String { return "\"\(string)\"" }
    if let optional = value as? any OptionalIndexValue, optional.isNil { return "nil" }
    if let optional = value as? any UnwrappableOptional, let wrapped = optional.wrapped { return describeConstant(wrapped) }
    return "\(value)"
}

/// An optional whose value can be taken as `Any`, to describe it without `Optional(…)`.
protocol UnwrappableOptional {
    var wrapped: Any? { get }
}

extension Optional: UnwrappableOptional {
    var wrapped: Any? { self.map { $0 as Any } }
}

extension PredicateExpressions.Equal: ReadableExpression {
    func term<R: Record>(_ context: TermContext<R>) -> PredicateTerm<R>? { comparison(lhs, .equal, rhs, context) }
}

extension PredicateExpressions.NotEqual: ReadableExpression {
    func term<R: Record>(_ context: TermContext<R>) -> PredicateTerm<R>? { comparison(lhs, .notEqual, rhs, context) }
}

extension PredicateExpressions.Comparison: ReadableExpression {
    func term<R: Record>(_ context: TermContext<R>) -> PredicateTerm<R>? {
        let operators: [(PredicateExpressions.ComparisonOperator, TermOperator)] =
            [(.lessThan, .less), (.lessThanOrEqual, .lessOrEqual), (.greaterThan, .greater), (.greaterThanOrEqual, .greaterOrEqual)]
        guard let op = operators.first(where: { $0.0 == self.op })?.1 else { return nil }
        return comparison(lhs, op, rhs, context)
    }
}

/// `["Jane", "Joan"].contains($0.name)` (a `oneOf`) or `$0.tags.contains("x")` (a `contains`).
extension PredicateExpressions.SequenceContains: ReadableExpression {
    func term<R: Record>(_ context: TermContext<R>) -> PredicateTerm<R>? {
        if let property = element as? any PropertyExpression, let constants = (sequence as? any ConstantExpression)?.constant as? any Sequence,
           let reference = property.reference(context, elements: false) {
            var values: [(bytes: [UInt8], text: String)] = []
            for constant in constants {
                guard let value = property.encodeValue(constant, elements: false) else { return nil }
                values.append((value, describeConstant(constant)))
            }
            var seen = Set<[UInt8]>()
            let distinct = values.filter { seen.insert($0.bytes).inserted }.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            return .oneOf(reference, distinct.map(\.bytes), texts: distinct.map(\.text))
        }
        if let property = sequence as? any PropertyExpression, let constant = (element as? any ConstantExpression)?.constant,
           let reference = property.reference(context, elements: true), let value = property.encodeValue(constant, elements: true) {
            return .contains(reference, value, text: describeConstant(constant))
        }
        return nil
    }
}
