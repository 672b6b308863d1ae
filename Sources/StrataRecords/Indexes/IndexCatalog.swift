import StrataEngine
import StrataKeyCodec

/// Where an index stands (stored in its catalog entry).
public enum IndexState: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// Maintained on every write, not yet complete: queries throw ``RecordError/indexNotReady(type:index:state:)``.
    case writeOnly = 0
    /// Complete and maintained: queries use it.
    case readable = 1
    /// No longer declared by the record type: not maintained; cleared by the next `Store.prepare`.
    case disabled = 2

    public var description: String {
        switch self {
        case .writeOnly: return "write-only (not built yet: run Store.prepare)"
        case .readable: return "readable"
        case .disabled: return "disabled"
        }
    }
}

/// An index's catalog entry (RecordFormat.md, "Indexes"): its definition, state and the
/// generation its entries are written under.
struct StoredIndex: Equatable {
    var features: [String] = []
    /// Part of the entries' prefix: a changed definition gets a new generation, so the old
    /// entries can be cleared later without being mistaken for new ones.
    var generation: Int
    var state: IndexState
    var definition: IndexDefinition
    /// Older generations whose entries are still stored (cleared by the next `Store.prepare`).
    var retired: [Int] = []

    func encoded() -> [UInt8] {
        var w = FieldWriter()
        w.write(features)
        w.write(generation)
        w.write(definition.unique)
        w.write(definition.covering)
        w.writeVarint(UInt64(definition.components.count))
        for component in definition.components {
            w.write(component.name)
            w.write(component.type)
            w.write(component.multiValued)
        }
        w.write(state.rawValue)
        w.write(retired)
        return w.bytes
    }

    init(generation: Int, state: IndexState, definition: IndexDefinition, retired: [Int] = []) {
        self.generation = generation
        self.state = state
        self.definition = definition
        self.retired = retired
    }

    init(decoding bytes: UnsafeRawBufferPointer, keyspace: String, name: String) throws {
        do throws(FieldDecodingError) {
            var r = FieldReader(bytes)
            features = try r.read([String].self)
            generation = try r.read(Int.self)
            let unique = try r.read(Bool.self)
            let covering = try r.read(Bool.self)
            var components: [IndexDefinition.Component] = []
            for _ in 0..<(try r.readCount()) {
                components.append(.init(name: try r.read(String.self), type: try r.read(String.self), multiValued: try r.read(Bool.self)))
            }
            definition = IndexDefinition(components: components, unique: unique, covering: covering)
            let rawState = try r.read(UInt8.self)
            guard let state = IndexState(rawValue: rawState) else { throw FieldDecodingError(offset: r.offset, reason: "unknown index state \(rawState)") }
            self.state = state
            retired = try r.read([Int].self)
            try r.finish()
        } catch {
            throw RecordError.corruptCatalog(keyspace: keyspace, detail: "index \"\(name)\": \(error)")
        }
        try Manifest.refuseUnknown(features, in: "index \"\(name)\" of keyspace \"\(keyspace)\"")
    }
}

/// One of a record type's declared indexes as this transaction sees it. Writes keep every one
/// (a declared index is never disabled: a write transaction registers it anew).
@usableFromInline
struct ActiveIndex {
    /// Position in `R.indexes`.
    let position: Int
    let name: String
    /// `00 enc("ix", keyspace, name, generation)`: every entry starts with it.
    let prefix: [UInt8]
    let generation: Int
    let state: IndexState
    let unique: Bool
    let covering: Bool
    let componentCount: Int
}

enum IndexCatalog {
    /// The feature a keyspace with indexes lists in its catalog entry: a build that does not
    /// know it would write records without their index entries, so it refuses the keyspace.
    static let feature = "indexes"

    static func entriesPrefix(keyspace: String, name: String, generation: Int) -> [UInt8] {
        SystemKey.indexEntries(keyspace: keyspace, name: name, generation: generation)
    }

    /// Every index stored for `keyspace`, by name.
    static func stored(keyspace: String, in tx: any KeyValueReader) throws -> [(name: String, index: StoredIndex)] {
        let prefix = SystemKey.prefix + KeyCodec.encode("index", keyspace)
        var found: [(String, StoredIndex)] = []
        try tx.scan(KeyRange.components(prefix: prefix), reverse: false, limit: nil) { key, value in
            var reader = KeyReader(UnsafeRawBufferPointer(rebasing: key[prefix.count...]))
            let name: String
            do { name = try reader.read(String.self); try reader.finish() } catch {
                throw RecordError.corruptCatalog(keyspace: keyspace, detail: "index key: \(error)")
            }
            found.append((name, try StoredIndex(decoding: value, keyspace: keyspace, name: name)))
            return true
        }
        return found
    }

    /// Reconciles `R`'s declared indexes with the store's (RecordFormat.md, "Indexes"): in a write
    /// transaction a new or changed index is registered (readable at once on an empty keyspace,
    /// else write-only under a new generation) and an index `R` no longer declares is disabled.
    /// Returns the declared indexes as this transaction sees them (a read transaction sees an
    /// unregistered one as write-only: not queryable, nothing to maintain).
    static func prepare<R: Record>(_: R.Type, keyspacePrefix: [UInt8], in tx: any KeyValueReader,
                                   writer: (any KeyValueWriter)?) throws -> [ActiveIndex] {
        let keyspace = R.recordType.keyspace
        let declared = R.indexes
        let stored = try stored(keyspace: keyspace, in: tx)
        if declared.isEmpty && stored.isEmpty { return [] }
        var names = Set<String>()
        for index in declared where !names.insert(index.name).inserted {
            throw RecordError.invalidIndex(type: "\(R.self)", index: index.name, detail: "two indexes of the type have this name")
        }
        var keyspaceIsEmpty: Bool?
        func isEmpty() throws -> Bool {
            if let keyspaceIsEmpty { return keyspaceIsEmpty }
            let empty = try tx.keys(KeyRange.components(prefix: keyspacePrefix), limit: 1).isEmpty
            keyspaceIsEmpty = empty
            return empty
        }
        var active: [ActiveIndex] = []
        var registered = false
        for (position, index) in declared.enumerated() {
            let definition = index.definition
            var current = stored.first { $0.name == index.name }?.index
            if current == nil || current!.definition != definition || current!.state == .disabled {
                if let writer {
                    var next = StoredIndex(generation: 1, state: try isEmpty() ? .readable : .writeOnly, definition: definition)
                    if let old = current {
                        next.generation = old.generation + 1
                        next.retired = old.retired + [old.generation]
                    }
                    try writer.put(next.encoded(), forKey: SystemKey.index(keyspace: keyspace, name: index.name))
                    current = next
                    registered = true
                } else {
                    current = StoredIndex(generation: 0, state: .writeOnly, definition: definition)
                }
            }
            active.append(ActiveIndex(
                position: position, name: index.name,
                prefix: entriesPrefix(keyspace: keyspace, name: index.name, generation: current!.generation),
                generation: current!.generation, state: current!.state, unique: index.unique, covering: index.covering, componentCount: index.components.count))
        }
        if let writer {
            for (name, var index) in stored where index.state != .disabled && !names.contains(name) {
                index.state = .disabled
                try writer.put(index.encoded(), forKey: SystemKey.index(keyspace: keyspace, name: name))
            }
            if registered { try Catalog.require(feature, keyspace: keyspace, in: tx, writer: writer) }
        }
        return active
    }
}

extension Catalog {
    /// Adds `feature` to the keyspace's catalog entry (written earlier in this transaction or before).
    static func require(_ feature: String, keyspace: String, in tx: any KeyValueReader, writer: any KeyValueWriter) throws {
        let key = SystemKey.keyspace(keyspace)
        guard let bytes = try tx.get(key) else { return }
        var entry = try CatalogEntry(decoding: bytes, keyspace: keyspace)
        guard !entry.features.contains(feature) else { return }
        entry.features.append(feature)
        try writer.put(entry.encoded(), forKey: key)
    }
}
