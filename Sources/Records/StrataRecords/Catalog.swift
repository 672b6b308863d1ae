import Foundation
@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec

/// A keyspace's catalog entry (RecordFormat.md, "Catalog"): what a tool needs to decode its
/// records without the Swift type.
struct CatalogEntry: Equatable {
    struct Schema: Equatable {
        var version: UInt32
        /// Field names and format descriptors in stored order; `nil` when the type did not describe them.
        var fields: [RecordType.FieldInfo]?
    }

    /// Features a build must know to use the keyspace (none in format 2).
    var features: [String] = []
    /// Key component names and Swift type names, in key order.
    var key: [(name: String, type: String)]
    /// Every schema version written to the keyspace, in the order first written.
    var schemas: [Schema] = []

    static func == (a: CatalogEntry, b: CatalogEntry) -> Bool {
        a.features == b.features && a.key.elementsEqual(b.key, by: { $0 == $1 }) && a.schemas == b.schemas
    }

    func encoded() -> [UInt8] {
        var w = FieldWriter()
        w.write(features)
        w.writeVarint(UInt64(key.count))
        for component in key {
            w.write(component.name)
            w.write(component.type)
        }
        w.writeVarint(UInt64(schemas.count))
        for schema in schemas {
            w.write(schema.version)
            if let fields = schema.fields {
                w.write(true)
                w.writeVarint(UInt64(fields.count))
                for field in fields {
                    w.write(field.name)
                    w.write(field.format.descriptor)
                }
            } else {
                w.write(false)
            }
        }
        return w.bytes
    }

    init(key: [(name: String, type: String)], schemas: [Schema] = []) {
        self.key = key
        self.schemas = schemas
    }

    init(decoding bytes: [UInt8], keyspace: String) throws {
        do {
            self = try bytes.withUnsafeBytes { raw in
                var r = FieldReader(raw)
                let entry = try Self.read(from: &r)
                try r.finish()
                return entry
            }
        } catch {
            throw RecordError.corruptCatalog(keyspace: keyspace, detail: "\(error)")
        }
    }

    private static func read(from r: inout FieldReader) throws(FieldDecodingError) -> CatalogEntry {
        let features = try r.read([String].self)
        var key: [(name: String, type: String)] = []
        for _ in 0..<(try r.readCount()) { key.append((try r.read(String.self), try r.read(String.self))) }
        var schemas: [Schema] = []
        for _ in 0..<(try r.readCount()) {
            let version = try r.read(UInt32.self)
            var fields: [RecordType.FieldInfo]?
            if try r.read(Bool.self) {
                var list: [RecordType.FieldInfo] = []
                for _ in 0..<(try r.readCount()) {
                    list.append(RecordType.FieldInfo(name: try r.read(String.self), format: FieldFormat(try r.read(String.self))))
                }
                fields = list
            }
            schemas.append(Schema(version: version, fields: fields))
        }
        var entry = CatalogEntry(key: key, schemas: schemas)
        entry.features = features
        return entry
    }

    /// Format 1 stored only the key layout, as text: `lastName: String, firstName: String`.
    init(formatOneLayout bytes: [UInt8], keyspace: String) throws {
        guard let text = String(validating: bytes, as: UTF8.self), !text.isEmpty else {
            throw RecordError.corruptCatalog(keyspace: keyspace, detail: "the format-1 key layout is not text")
        }
        var key: [(name: String, type: String)] = []
        for part in Self.splitOutsideBrackets(text) {
            guard let colon = part.range(of: ": ") else {
                throw RecordError.corruptCatalog(keyspace: keyspace, detail: "the format-1 key layout \"\(text)\" is malformed")
            }
            key.append((String(part[..<colon.lowerBound]), String(part[colon.upperBound...])))
        }
        self.init(key: key)
    }

    /// `a: Int, b: Pair<Int, String>` → `a: Int`, `b: Pair<Int, String>`: a generic type's name
    /// may hold ", " itself.
    private static func splitOutsideBrackets(_ text: String) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var depth = 0
        var index = text.startIndex
        while index < text.endIndex {
            switch text[index] {
            case "<", "(", "[": depth += 1
            case ">", ")", "]": depth -= 1
            case "," where depth == 0 && text[text.index(after: index)...].hasPrefix(" "):
                parts.append(text[start..<index])
                start = text.index(index, offsetBy: 2)
                index = start
                continue
            default: break
            }
            index = text.index(after: index)
        }
        parts.append(text[start...])
        return parts
    }
}

/// Which record type owns which keyspace: in this process (two types may not share one) and in
/// the store (the key layout stored at first write must match the type's). Records each schema
/// version a type writes, with its fields, in the keyspace's catalog entry.
@usableFromInline final class Catalog: Sendable {
    private struct State {
        var owners: [String: (ObjectIdentifier, String)] = [:]
        /// Types whose keyspace claim is checked and whose committed catalog entry is known to be
        /// complete, with the versions of the same fields: their later checks are one lookup.
        var verified: [ObjectIdentifier: Set<UInt32>] = [:]
        /// Each type's indexes as a transaction that found the index catalog settled for it saw
        /// them, with the catalog bytes they were derived from and where those are read
        /// (``IndexCatalog/prepare(_:keyspacePrefix:in:writer:remembered:envelope:)``).
        var prepared: [ObjectIdentifier: PreparedIndexes] = [:]
    }
    private let state = Locked(State())
    typealias PreparedIndexes = (catalog: IndexCatalog.CatalogRange, stored: [UInt8], indexes: [ActiveIndex])

    /// `R`'s indexes as last remembered; valid for exactly the catalog bytes they hold.
    func preparedIndexes<R: Record>(_: R.Type) -> PreparedIndexes? { state.withLock { $0.prepared[ObjectIdentifier(R.self)] } }

    func remember<R: Record>(_: R.Type, _ indexes: PreparedIndexes) { state.withLock { $0.prepared[ObjectIdentifier(R.self)] = indexes } }

    /// Checks `R`'s claim on its keyspace; records its schema in the store on its first write.
    /// Returns the other versions whose stored schema has exactly `R`'s fields (names and
    /// formats, in order) when `R`'s version is derived: their values have `R`'s layout, so they
    /// read as current. That is how a record stored under format 1's spelled-type version keeps
    /// reading after the type is respelled, once the type has written under format 2 (which
    /// records both numbers). An explicit version is never one of a set: the same field list
    /// does not mean the same bytes (a type inside a JSON field may have changed), so every
    /// other version goes to `migrate`.
    @usableFromInline func check<R: Record>(_: R.Type, in tx: any KeyValueReader, writer: (any KeyValueWriter)?) throws -> Set<UInt32> {
        let me = ObjectIdentifier(R.self)
        if let sameFields = state.withLock({ $0.verified[me] }) { return sameFields }
        let type = R.recordType
        try state.withLock { (state: inout State) throws(RecordError) in
            if let (owner, name) = state.owners[type.keyspace], owner != me {
                throw RecordError.keyspaceClash(keyspace: type.keyspace, detail: "used by \(name) and by \(R.self) in this process")
            }
            state.owners[type.keyspace] = (me, "\(R.self)")
        }
        let key = SystemKey.keyspace(type.keyspace)
        let declared = type.key.map { (name: $0.name, type: $0.typeName) }
        let schema = CatalogEntry.Schema(version: type.version, fields: type.fields)
        guard let stored = try tx.get(key) else {
            // A new keyspace. Only what is committed is marked verified: a rolled-back first
            // write leaves it unmarked.
            try writer?.put(CatalogEntry(key: declared, schemas: [schema]).encoded(), forKey: key)
            return []
        }
        var entry = try CatalogEntry(decoding: stored, keyspace: type.keyspace)
        try Manifest.refuseUnknown(entry.features, in: "keyspace \"\(type.keyspace)\"")
        guard entry.key.elementsEqual(declared, by: { $0 == $1 }) else {
            let layout = entry.key.map { "\($0.name): \($0.type)" }.joined(separator: ", ")
            throw RecordError.keyspaceClash(keyspace: type.keyspace, detail: "the store holds keys (\(layout)) but \(R.self) declares (\(type.keyLayout))")
        }
        let sameFields = type.versionIsExplicit ? []
            : Set(entry.schemas.lazy.filter { $0.version != type.version && $0.fields != nil && $0.fields == type.fields }.map(\.version))
        var missing: [CatalogEntry.Schema] = []
        if !entry.schemas.contains(where: { $0.version == type.version }) { missing.append(schema) }
        // A keyspace upgraded from format 1 holds records under the format-1 number of the same
        // declaration: describe those too.
        if let old = type.formatOneVersion, entry.schemas.isEmpty {
            missing.append(CatalogEntry.Schema(version: old, fields: type.fields))
        }
        if missing.isEmpty {
            state.withLock { $0.verified[me] = sameFields }
        } else if let writer {
            entry.schemas += missing
            try writer.put(entry.encoded(), forKey: key)
        }
        return sameFields
    }
}

/// A keyspace as the store's catalog describes it (RecordFormat.md, "Catalog"): enough to decode
/// its records without the Swift type.
public struct KeyspaceDescription: Sendable, Hashable {
    /// One schema version written to the keyspace.
    public struct Schema: Sendable, Hashable {
        /// The version number, as stored at the start of each of its record values.
        public let version: UInt32
        /// The fields in stored order; `nil` when the writing type did not describe them.
        public let fields: [RecordType.FieldInfo]?
    }

    /// The keyspace's name: the first component of every record key in it.
    public let name: String
    /// Key component names and Swift type names, in key order.
    public let key: [KeyComponentDescription]
    /// Every schema version written, in the order first written.
    public let schemas: [Schema]
    /// Features the keyspace requires (none in format 2).
    public let features: [String]
}

/// A key component as the catalog stores it.
public struct KeyComponentDescription: Sendable, Hashable {
    /// The key component's property name.
    public let name: String
    /// The component's Swift type name as Swift prints it at run time (`String`, `Optional<Date>`).
    public let type: String
    /// A component named `name` of the Swift type named `type`, as ``KeyspaceDescription/key`` lists them.
    public init(name: String, type: String) {
        self.name = name
        self.type = type
    }
}

extension Store {
    /// Every keyspace in the store's catalog, in name order.
    public func keyspaces() throws -> [KeyspaceDescription] {
        try engine.read { tx in
            try tx.pairs(SystemKey.keyspaces).map { key, value in
                let name = try FormatUpgrade.keyspaceName(ofCatalogKey: key)
                let entry = try CatalogEntry(decoding: value, keyspace: name)
                return KeyspaceDescription(
                    name: name, key: entry.key.map { KeyComponentDescription(name: $0.name, type: $0.type) },
                    schemas: entry.schemas.map { KeyspaceDescription.Schema(version: $0.version, fields: $0.fields) },
                    features: entry.features)
            }
        }
    }
}
