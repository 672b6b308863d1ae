import StrataEngine
import StrataKeyCodec

// A predicate's filter evaluated on a borrowing view (``RecordView``) before the record is
// decoded, so a row the filter rejects costs no decoding and no allocation.
//
// A comparison (`compare`, `oneOf`, `contains`) reads its property in place when the property is
// a key component, or a stored field whose catalog format is the property type's own and whose
// bytes, and those of every field before it, the format describes (`i64`, `string`,
// `optional(string)`, `array(string)`, …): the field's key encoding is written into a buffer the
// scan reuses and compared with the term's value exactly as the record path compares them. Any
// other term (Foundation's own, a field in a codec's format) decodes the record, once per row,
// and only when the evaluation reaches it. A view of an older version is decoded (its fields are
// laid out as that version's). It rests on ``Record/storedKeyPaths``' promise: the field of a
// property's name stores that property in its type's own format.
//
// Every row's checksum is verified (the view is made after it); a row the filter rejects is not
// decoded, so damage only decoding finds (a string that is not UTF-8, a field's stray bytes) is
// reported by the reads that decode the row, not by a query that rejects it.

/// A term's property read from a view.
enum ViewProbe: Sendable {
    /// The key component at this position (after the keyspace name): already a key encoding.
    case key(Int)
    /// The stored field at `position`; `layouts` are the fields up to and including it.
    case field(position: Int, layouts: [FieldLayout])
}

/// A filter (a ``PredicateTerm``) evaluated on views: see the top of this file.
@usableFromInline
struct ViewFilter<R: Record>: Sendable {
    /// The filter as the record path evaluates it: for views of another version.
    let term: PredicateTerm<R>
    /// The filter's shape, not generic (a generic enum costs metadata lookups per row).
    let root: ViewTest
    /// The parts evaluated on the decoded record, by ``ViewTest/record(_:)``'s number.
    let recordTerms: [PredicateTerm<R>]

    init(_ term: PredicateTerm<R>) {
        self.term = term
        var recordTerms: [PredicateTerm<R>] = []
        root = ViewTest.of(term, &recordTerms)
        self.recordTerms = recordTerms
    }

    /// Whether the row `view` shows matches. `record` holds the row's decoded record once a part
    /// needed it (callers reuse it); `scratch` is the buffer field encodings are written into.
    @usableFromInline
    func matches(_ view: RecordView<R>, record: inout R?, scratch: inout KeyWriter) throws -> Bool {
        // The view's parts taken once: in unspecialized code each access of a generic view's
        // property asks the runtime for its type (a fifth of a rejected row's instructions).
        let (key, fields, isCurrent) = (view.key, view.fields, view.isCurrent)
        guard isCurrent else { return try term.matches(Self.decoded(view, &record)) }
        do {
            return try root.evaluate(key: key, fields: fields, &scratch) { try recordTerms[$0].matches(Self.decoded(view, &record)) }
        } catch let error as KeyDecodingError {
            throw RecordError.corruptRecord(type: "\(R.self)", detail: "key: \(error)")
        } catch let error as FieldDecodingError {
            throw RecordError.corruptRecord(type: "\(R.self)", detail: "value: \(error)")
        }
    }

    static func decoded(_ view: RecordView<R>, _ record: inout R?) throws -> R {
        if let record { return record }
        let decoded = try view.record()
        record = decoded
        return decoded
    }
}

/// One part of a ``ViewFilter``.
indirect enum ViewTest: Sendable {
    case compare(ViewProbe, TermOperator, [UInt8])
    case oneOf(ViewProbe, [[UInt8]])
    /// A collection field (`array(F)` or `set(F)`) with an element equal to the value.
    case contains(ViewProbe, [UInt8])
    case and([ViewTest])
    case or([ViewTest])
    case not(ViewTest)
    case constant(Bool)
    /// The filter's record term of this number, evaluated on the decoded record.
    case record(Int)

    /// The test of `term`: each comparison whose property a view holds in place reads it there;
    /// the other parts are appended to `records`.
    static func of<R: Record>(_ term: PredicateTerm<R>, _ records: inout [PredicateTerm<R>]) -> ViewTest {
        func record() -> ViewTest {
            records.append(term)
            return .record(records.count - 1)
        }
        switch term {
        case let .compare(property, op, value, _):
            return probe(property, elements: false).map { .compare($0, op, value) } ?? record()
        case let .oneOf(property, values, _):
            return probe(property, elements: false).map { .oneOf($0, values) } ?? record()
        case let .contains(property, value, _):
            return probe(property, elements: true).map { .contains($0, value) } ?? record()
        case .and(let terms): return .and(terms.map { of($0, &records) })
        case .or(let terms): return .or(terms.map { of($0, &records) })
        case .not(let term): return .not(of(term, &records))
        case .constant(let value): return .constant(value)
        case .opaque: return record()
        }
    }

    /// Where a view of `R` holds `property`, when it holds it in place.
    private static func probe<R: Record>(_ property: PropertyReference<R>, elements: Bool) -> ViewProbe? {
        let type = R.recordType
        if !elements, let i = type.key.firstIndex(where: { $0.name == property.name }) {
            return type.key[i].typeID == property.typeID ? .key(i) : nil
        }
        guard let fields = type.fields, let format = property.fieldFormat,
              let position = fields.firstIndex(where: { $0.name == property.name }), fields[position].format.descriptor == format
        else { return nil }
        let layouts = fields[...position].map { FieldLayout($0.format) }
        guard layouts.dropLast().allSatisfy(\.isDescribed) else { return nil }
        let value = elements ? layouts[position].collectionElement : layouts[position]
        return value?.hasKeyTranscoding == true ? .field(position: position, layouts: layouts) : nil
    }

    /// Whether the row (its key components and its current-version fields) passes; `record`
    /// evaluates a record term by number.
    func evaluate(key: UnsafeRawBufferPointer, fields: UnsafeRawBufferPointer, _ scratch: inout KeyWriter,
                  _ record: (Int) throws -> Bool) throws -> Bool {
        switch self {
        case let .compare(probe, op, value):
            return try value.withUnsafeBytes { value in
                try Self.anyValue(probe, key, fields, &scratch) { op.holds(Bytewise.compare($0, value)) }
            }
        case let .oneOf(probe, values):
            return try Self.anyValue(probe, key, fields, &scratch) { encoded in
                values.contains { $0.withUnsafeBytes { Bytewise.compare(encoded, $0) == 0 } }
            }
        case let .contains(probe, value):
            return try value.withUnsafeBytes { value in
                try Self.anyValue(probe, key, fields, &scratch, elements: true) { Bytewise.compare($0, value) == 0 }
            }
        case .and(let tests):
            for test in tests where try !test.evaluate(key: key, fields: fields, &scratch, record) { return false }
            return true
        case .or(let tests):
            for test in tests where try test.evaluate(key: key, fields: fields, &scratch, record) { return true }
            return false
        case .not(let test): return try !test.evaluate(key: key, fields: fields, &scratch, record)
        case .constant(let value): return value
        case .record(let number): return try record(number)
        }
    }

    /// Whether `test` holds for the key encoding of the probe's value (of any element, with
    /// `elements`), read in place.
    private static func anyValue(_ probe: ViewProbe, _ key: UnsafeRawBufferPointer, _ fields: UnsafeRawBufferPointer,
                                 _ scratch: inout KeyWriter, elements: Bool = false,
                                 _ test: (UnsafeRawBufferPointer) -> Bool) throws -> Bool {
        switch probe {
        case .key(let position):
            var reader = KeyReader(key)
            for _ in 0..<position { try reader.skipComponent() }
            let start = reader.offset
            try reader.skipComponent()
            return test(UnsafeRawBufferPointer(rebasing: key[start..<reader.offset]))
        case let .field(position, layouts):
            var reader = FieldReader(fields)
            for i in 0..<position { try layouts[i].skip(&reader) }
            guard elements else { return try layouts[position].transcode(&reader, &scratch, test) }
            guard let element = layouts[position].collectionElement else { return false }
            for _ in 0..<(try reader.readCount()) where try element.transcode(&reader, &scratch, test) { return true }
            return false
        }
    }
}

extension FieldLayout {
    /// The elements' layout of an `array(F)` or `set(F)`.
    var collectionElement: FieldLayout? {
        switch self {
        case .array(let element), .set(let element): element
        default: nil
        }
    }

    /// Whether ``transcode(_:_:_:)`` turns values of this layout into their key encodings: the
    /// layouts of the types a predicate compares (integers, `Bool`, `String`, bytes, optionals).
    var hasKeyTranscoding: Bool {
        switch self {
        case .bool, .signed, .unsigned, .string, .bytes: true
        case .optional(let inner): inner.hasKeyTranscoding
        default: false
        }
    }

    /// Reads past one value (for a described layout: ``isDescribed``), allocating nothing.
    func skip(_ r: inout FieldReader) throws(FieldDecodingError) {
        switch self {
        case .bool, .f32, .f64, .uuid, .date, .signed, .unsigned:
            _ = try read(&r)  // fixed size or a varint: no allocation
        case .string, .bytes, .url, .json: _ = try r.readBytes()
        case .optional(let inner): if try r.read(Bool.self) { try inner.skip(&r) }
        case .array(let element), .set(let element):
            for _ in 0..<(try r.readCount()) { try element.skip(&r) }
        case .map(let key, let value):
            for _ in 0..<(try r.readCount()) {
                try key.skip(&r)
                try value.skip(&r)
            }
        case .raw(let inner): try inner.skip(&r)
        case .opaque(let name): throw FieldDecodingError(offset: r.offset, reason: "the format \(name) is not described in the catalog")
        }
    }

    /// Reads one value (of a layout with ``hasKeyTranscoding``), writes its key encoding into
    /// `scratch` (emptied first) and returns `test` of it: the encoding `KeyWriter.append` gives
    /// the Swift value, without making the value.
    func transcode(_ r: inout FieldReader, _ scratch: inout KeyWriter, _ test: (UnsafeRawBufferPointer) -> Bool) throws -> Bool {
        scratch.removeAll()
        try transcode(&r, into: &scratch)
        return scratch.bytes.withUnsafeBytes(test)
    }

    private func transcode(_ r: inout FieldReader, into scratch: inout KeyWriter) throws {
        switch self {
        case .bool: scratch.write(try r.read(Bool.self) ? TypeCode.true : TypeCode.false)
        case .signed:
            let v = try r.read(Int64.self)
            scratch.writeInteger(negative: v < 0, magnitude: v.magnitude)
        case .unsigned: scratch.writeInteger(negative: false, magnitude: try r.read(UInt64.self))
        case .string, .bytes:
            // Not checked for UTF-8 here (the checksum held; a record that is decoded is checked).
            let content = try r.readBytes()
            if case .string = self { scratch.write(TypeCode.string) } else { scratch.write(TypeCode.bytes) }
            if content.contains(0) {
                scratch.writeEscaped(content)
            } else {
                scratch.write(contentsOf: content)
                scratch.write(0)
            }
        case .optional(let inner):
            if try r.read(Bool.self) { try inner.transcode(&r, into: &scratch) } else { scratch.write(TypeCode.null) }
        default:
            throw FieldDecodingError(offset: r.offset, reason: "a \(self) field has no key encoding here")
        }
    }
}
