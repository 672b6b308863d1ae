import StrataEngine
import StrataKeyCodec

/// The store's catalog as one read transaction sees it: every keyspace's entry and indexes.
/// Entries that cannot be decoded are kept as problems instead of ending the inspection.
struct CatalogSnapshot: Sendable {
    var keyspaces: [String: CatalogEntry] = [:]
    /// Each keyspace's index definitions, in name order.
    var indexes: [String: [(name: String, index: StoredIndex)]] = [:]
    var problems: [StoreProblem] = []
    /// How the store's values are sealed (its transforms).
    let envelope: RecordEnvelope

    /// A snapshot of one keyspace's entry (without indexes), to decode its records.
    init(keyspace: String, entry: CatalogEntry, envelope: RecordEnvelope) {
        keyspaces = [keyspace: entry]
        self.envelope = envelope
    }

    init(_ tx: any KeyValueReader, envelope: RecordEnvelope) throws {
        self.envelope = envelope
        for (key, value) in try tx.pairs(SystemKey.keyspaces) {
            do {
                let name = try FormatUpgrade.keyspaceName(ofCatalogKey: key)
                keyspaces[name] = try CatalogEntry(decoding: value, keyspace: name)
            } catch {
                problems.append(StoreProblem(.corruptCatalog, key: key, "\(error)"))
            }
        }
        let indexPrefix = SystemKey.indexDefinitions
        for (key, value) in try tx.pairs(KeyRange.components(prefix: indexPrefix)) {
            do {
                let (keyspace, name) = try key.withUnsafeBytes { raw throws -> (String, String) in
                    var reader = KeyReader(UnsafeRawBufferPointer(rebasing: raw[indexPrefix.count...]))
                    let names = (try reader.read(String.self), try reader.read(String.self))
                    try reader.finish()
                    return names
                }
                let index = try value.withUnsafeBytes { try StoredIndex(decoding: $0, keyspace: keyspace, name: name) }
                indexes[keyspace, default: []].append((name, index))
            } catch {
                problems.append(StoreProblem(.corruptCatalog, key: key, "index definition: \(error)"))
            }
        }
    }
}

/// A record read without its Swift type, through the catalog's key and field layouts.
public struct DecodedRecord: Sendable, Hashable {
    /// One field's name and value.
    public struct Field: Sendable, Hashable {
        /// The field's name, as the catalog records it.
        public let name: String
        /// The field's value; ``StoredValue/opaque(format:bytes:)`` for a format the catalog cannot describe.
        public let value: StoredValue
    }

    /// The keyspace the record is stored in: its key's first component.
    public let keyspace: String
    /// The key's components after the keyspace name, in key order.
    public let key: [StoredValue]
    /// The schema version the value was written under.
    public let version: UInt32
    /// The fields the catalog describes for `version`, in stored order. A field of a format the
    /// catalog cannot describe (a codec's or a type's own) comes as ``StoredValue/opaque(format:bytes:)``
    /// holding the rest of the value, and ends the list.
    public let fields: [Field]
    /// The value's bytes after the version when the catalog has no field layout for `version`.
    public let undescribed: [UInt8]?

    /// One line of JSON: `{"keyspace":…,"key":[…],"version":…,"fields":{…}}` (or `"undescribed"`
    /// with the value's bytes in hex).
    public var jsonLine: String {
        var out = "{\"keyspace\":"
        StoredValue.quote(keyspace, into: &out)
        out += ",\"key\":"
        StoredValue.array(key).writeJSON(to: &out)
        out += ",\"version\":\(version)"
        if let undescribed {
            out += ",\"undescribed\":\"\(StoredValue.hex(undescribed))\"}"
            return out
        }
        out += ",\"fields\":{"
        for (i, field) in fields.enumerated() {
            if i > 0 { out += "," }
            StoredValue.quote(field.name, into: &out)
            out += ":"
            field.value.writeJSON(to: &out)
        }
        out += "}}"
        return out
    }

    /// The value of the field or key component named `name`, if the record has one. A
    /// ``CodableRecord``'s properties are not fields: its index components come from key paths,
    /// and a property of the same name may hold another value, or the same one in another form
    /// (`Codable` writes a UUID as a string, a Date as a number), so they are not looked into.
    func value(named name: String, keyLayout: [(name: String, type: String)]) -> StoredValue? {
        if let field = fields.first(where: { $0.name == name }) {
            if case .opaque = field.value { return nil }
            return field.value
        }
        if let i = keyLayout.firstIndex(where: { $0.name == name }), i < key.count { return key[i] }
        return nil
    }
}

/// Why a record could not be decoded: the kind of problem `verify` reports, and what it says.
struct RecordDecodingFailure: Error {
    let kind: StoreProblem.Kind
    let detail: String
}

extension CatalogSnapshot {
    /// The keyspace of a record key (its first component), or `nil` for a key that is not
    /// record-shaped (another program's).
    static func keyspace(of key: UnsafeRawBufferPointer) -> (name: String, keyStart: Int)? {
        guard key.first == TypeCode.string else { return nil }
        var reader = KeyReader(key)
        guard let name = try? reader.read(String.self) else { return nil }
        return (name, reader.offset)
    }

    /// Decodes the record stored under `key` through the catalog: the key against the key
    /// layout, the checksum, and the fields against the layout of the value's schema version.
    func decode(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(RecordDecodingFailure) -> DecodedRecord {
        guard let (keyspace, keyStart) = Self.keyspace(of: key) else {
            throw RecordDecodingFailure(kind: .undecodableKey, detail: "the key does not start with a keyspace name")
        }
        guard let entry = keyspaces[keyspace] else {
            throw RecordDecodingFailure(kind: .uncataloguedRecord, detail: "keyspace \"\(keyspace)\" has no catalog entry")
        }
        let components: [StoredValue]
        do {
            components = try StoredValue.keyComponents(UnsafeRawBufferPointer(rebasing: key[keyStart...]))
        } catch {
            throw RecordDecodingFailure(kind: .undecodableKey, detail: "\(error)")
        }
        let layout = entry.key.map { "\($0.name): \($0.type)" }.joined(separator: ", ")
        guard components.count == entry.key.count, zip(entry.key, components).allSatisfy({ Self.keyValue($1, fits: $0.type) }) else {
            throw RecordDecodingFailure(kind: .undecodableKey, detail: "the key \(StoredValue.array(components).json) does not fit the layout (\(layout))")
        }
        let sealed: RecordEnvelope.Sealed
        do throws(RecordEnvelope.Damage) {
            sealed = try RecordEnvelope.open(key: key, value: value)
        } catch {
            throw RecordDecodingFailure(kind: error.kind == .checksum ? .checksumMismatch : .undecodableFields, detail: error.detail)
        }
        var scratch: [UInt8] = []
        let decoded: Result<DecodedRecord, any Error>
        do {
            decoded = try envelope.withFields(sealed, key: key, scratch: &scratch) { bytes, offset in
                Result { try Self.decodeFields(bytes, offset: offset, keyspace: keyspace, key: components, version: sealed.version, entry: entry) }
            }
        } catch let damage as RecordEnvelope.Damage {
            throw RecordDecodingFailure(kind: .undecodableFields, detail: damage.detail)
        } catch {
            throw RecordDecodingFailure(kind: .undecodableFields, detail: "\(error)")
        }
        switch decoded {
        case .success(let record): return record
        case .failure(let error): throw RecordDecodingFailure(kind: .undecodableFields, detail: "\(error)")
        }
    }

    /// Decodes the fields of schema version `version` from `bytes` (from `offset` on) with the
    /// layout the catalog gives that version; a version it does not describe keeps its bytes.
    private static func decodeFields(_ bytes: UnsafeRawBufferPointer, offset: Int, keyspace: String, key components: [StoredValue],
                                     version: UInt32, entry: CatalogEntry) throws -> DecodedRecord {
        var reader = FieldReader(bytes, offset: offset)
        guard let fields = entry.schemas.first(where: { $0.version == version })?.fields else {
            let rest = Array(UnsafeRawBufferPointer(rebasing: bytes[reader.offset...]))
            return DecodedRecord(keyspace: keyspace, key: components, version: version, fields: [], undescribed: rest)
        }
        var decoded: [DecodedRecord.Field] = []
        for field in fields {
            if field.format == CodableValueFormat.binary.fieldFormat, let id = components.first {
                // A CodableRecord's whole value: self-describing, read as maps and arrays.
                let rest = UnsafeRawBufferPointer(rebasing: bytes[reader.offset...])
                let value: StoredValue
                do {
                    value = try CodableValueDecoder.storedValue(from: rest, recordKey: id)
                } catch {
                    throw FieldDecodingError(offset: reader.offset, reason: CodableErrors.describe(error))
                }
                decoded.append(.init(name: field.name, value: value))
                return DecodedRecord(keyspace: keyspace, key: components, version: version, fields: decoded, undescribed: nil)
            }
            let layout = FieldLayout(field.format)
            guard layout.isDescribed else {
                let rest = Array(UnsafeRawBufferPointer(rebasing: bytes[reader.offset...]))
                decoded.append(.init(name: field.name, value: .opaque(format: field.format.descriptor, bytes: rest)))
                return DecodedRecord(keyspace: keyspace, key: components, version: version, fields: decoded, undescribed: nil)
            }
            decoded.append(.init(name: field.name, value: try layout.read(&reader)))
        }
        try reader.finish()
        return DecodedRecord(keyspace: keyspace, key: components, version: version, fields: decoded, undescribed: nil)
    }

    /// Whether a decoded key component can be a value of the Swift type named `type`; names of
    /// types the catalog cannot judge (enums, your own key types) accept any component.
    static func keyValue(_ value: StoredValue, fits type: String) -> Bool {
        if type.hasPrefix("Optional<") && type.hasSuffix(">") {
            if value == .null { return true }
            return keyValue(value, fits: String(type.dropFirst("Optional<".count).dropLast()))
        }
        guard let accepts = keyTypes[type] else { return true }
        return accepts(value)
    }

    /// The key component types the catalog can judge, by the name Swift prints: which decoded
    /// values each accepts (integers share one encoding; only `UInt` and `UInt64` hold values past `Int64.max`).
    private static let keyTypes: [String: @Sendable (StoredValue) -> Bool] = {
        var table: [String: @Sendable (StoredValue) -> Bool] = [
            "String": { if case .string = $0 { true } else { false } },
            "Bool": { if case .bool = $0 { true } else { false } },
            "Double": { if case .double = $0 { true } else { false } },
            "Float": { if case .float = $0 { true } else { false } },
            "UUID": { if case .uuid = $0 { true } else { false } },
            "Date": { if case .date = $0 { true } else { false } },
            "Data": { if case .bytes = $0 { true } else { false } },
            "Array<UInt8>": { if case .bytes = $0 { true } else { false } },
        ]
        for name in ["Int", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32"] {
            table[name] = { if case .int = $0 { true } else { false } }
        }
        for name in ["UInt", "UInt64"] {
            table[name] = { switch $0 { case .int, .uint: true; default: false } }
        }
        return table
    }()

    /// The entry keys an index of `definition` under `generation` calls for, computed from a
    /// decoded record without its Swift type; throws naming why not (a version whose fields the
    /// catalog does not describe, a component that is not a stored field or a key component, or
    /// whose format has no key encoding). An index of totals calls for its groups' keys instead:
    /// ``totalGroups(of:generation:keyspace:name:record:keyLayout:)``.
    static func entries(of definition: IndexDefinition, generation: Int, keyspace: String, name: String, record: DecodedRecord,
                        keyLayout: [(name: String, type: String)], primaryKey: UnsafeRawBufferPointer) throws(IndexUnverifiable) -> [[UInt8]] {
        if AggregateKinds.keepTotals(definition.kind) {
            throw IndexUnverifiable(reason: "index of totals (\(definition.kind)): it holds totals per group, not entries")
        }
        guard let reading = IndexKinds.reading(definition.kind) else {
            throw IndexUnverifiable(reason: "index kind \(definition.kind) is not registered (IndexKinds): its entries come from Swift code only")
        }
        return try componentKeys(of: definition, generation: generation, keyspace: keyspace, name: name, record: record, keyLayout: keyLayout,
                                 reading: reading).map { $0 + primaryKey }
    }

    /// The groups of an index of totals (kind `count` or `sum:field`) a record belongs to (each
    /// once: a multi-valued component counts a distinct element once), and the amount it adds to
    /// each: 0 for a count, the summed field's value for a sum (RecordFormat.md, "Totals").
    static func totalGroups(of definition: IndexDefinition, generation: Int, keyspace: String, name: String, record: DecodedRecord,
                            keyLayout: [(name: String, type: String)]) throws(IndexUnverifiable) -> (groups: [[UInt8]], amount: Int64) {
        var amount: Int64 = 0
        if definition.kind.hasPrefix(AggregateKinds.sum) {
            let field = String(definition.kind.dropFirst(AggregateKinds.sum.count))
            guard case .int(let value)? = record.value(named: field, keyLayout: keyLayout) else {
                throw IndexUnverifiable(reason: "the summed field \(field) is not a signed integer field the catalog describes")
            }
            amount = value
        }
        let groups = try componentKeys(of: definition, generation: generation, keyspace: keyspace, name: name, record: record,
                                       keyLayout: keyLayout, reading: { $0 })
        return (groups, amount)
    }

    /// The index's prefix followed by each combination of the record's component values (one per
    /// distinct element of a multi-valued component), as `reading` gives them.
    private static func componentKeys(of definition: IndexDefinition, generation: Int, keyspace: String, name: String, record: DecodedRecord,
                                      keyLayout: [(name: String, type: String)], reading: IndexKinds.CatalogReading) throws(IndexUnverifiable) -> [[UInt8]] {
        if record.undescribed != nil {
            throw IndexUnverifiable(reason: "records of version \(record.version) have no field layout in the catalog")
        }
        var combinations: [[UInt8]] = [SystemKey.indexEntries(keyspace: keyspace, name: name, generation: generation)]
        for component in definition.components {
            guard let value = record.value(named: component.name, keyLayout: keyLayout).flatMap({ component.multiValued ? $0 : reading($0) }) else {
                throw IndexUnverifiable(reason: "component \(component.name) is not a stored field or key component the catalog describes"
                    + " (a Codable record's indexes come from key paths: check them with verifyIndexes, which has the Swift type)")
            }
            var encodings: [[UInt8]] = []
            if component.multiValued {
                guard case .array(let elements) = value else {
                    throw IndexUnverifiable(reason: "multi-valued component \(component.name) is not an array or set field")
                }
                for element in elements {
                    guard let bytes = reading(element)?.keyEncoding else {
                        throw IndexUnverifiable(reason: "the elements of \(component.name) have no key encoding")
                    }
                    if !encodings.contains(bytes) { encodings.append(bytes) }
                }
            } else {
                guard let bytes = value.keyEncoding else {
                    throw IndexUnverifiable(reason: "component \(component.name) has no key encoding")
                }
                encodings = [bytes]
            }
            combinations = combinations.flatMap { head in encodings.map { head + $0 } }
        }
        return combinations
    }
}

/// Why an index cannot be recomputed without the Swift type.
struct IndexUnverifiable: Error {
    let reason: String
}
