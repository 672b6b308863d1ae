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
    /// The generation a changed definition replaced, kept readable and maintained (its entries
    /// computed from the records' stored bytes through the catalog) until the new generation is
    /// built; then it is retired.
    struct Previous: Equatable {
        var generation: Int
        var definition: IndexDefinition
    }

    /// The feature an entry with a ``previous`` generation lists: a build that does not know it
    /// would leave that generation's entries behind its records.
    static let previousFeature = "previous-generation"
    /// The feature an entry lists when its definition (or its previous one) is of another kind
    /// than ``ValueIndex``: the kinds' names follow the rest (RecordFormat.md, "Indexes"), and a
    /// build that does not know kinds would read such an index as a value index.
    static let kindFeature = "index-kind"

    /// Features a build must know to use this entry: derived from what it holds.
    var features: [String] {
        var features = previous == nil ? [] : [Self.previousFeature]
        if hasKinds { features.append(Self.kindFeature) }
        return features
    }

    /// Whether a definition is of another kind than the value kind.
    private var hasKinds: Bool { definition.kind != IndexKinds.value || (previous.map { $0.definition.kind != IndexKinds.value } ?? false) }
    /// Part of the entries' prefix: a changed definition gets a new generation, so the old
    /// entries can be cleared later without being mistaken for new ones.
    var generation: Int
    var state: IndexState
    var definition: IndexDefinition
    /// Older generations whose entries are still stored (cleared by the next `Store.prepare`).
    var retired: [Int] = []
    /// The readable generation a changed definition replaced, while the new one is built.
    var previous: Previous?

    /// Moves the previous generation (if any) to the retired ones, whose entries the next
    /// `Store.prepare` clears.
    mutating func retirePrevious() {
        guard let previous else { return }
        retired.append(previous.generation)
        self.previous = nil
    }

    func encoded() -> [UInt8] {
        var w = FieldWriter()
        w.write(features)
        w.write(generation)
        Self.write(definition, to: &w)
        w.write(state.rawValue)
        w.write(retired)
        if let previous {
            w.write(previous.generation)
            Self.write(previous.definition, to: &w)
        }
        if hasKinds {
            w.write(definition.kind)
            if let previous { w.write(previous.definition.kind) }
        }
        return w.bytes
    }

    private static func write(_ definition: IndexDefinition, to w: inout FieldWriter) {
        w.write(definition.unique)
        w.write(definition.covering)
        w.writeVarint(UInt64(definition.components.count))
        for component in definition.components {
            w.write(component.name)
            w.write(component.type)
            w.write(component.multiValued)
        }
    }

    private static func readDefinition(_ r: inout FieldReader) throws(FieldDecodingError) -> IndexDefinition {
        let unique = try r.read(Bool.self)
        let covering = try r.read(Bool.self)
        var components: [IndexDefinition.Component] = []
        for _ in 0..<(try r.readCount()) {
            components.append(.init(name: try r.read(String.self), type: try r.read(String.self), multiValued: try r.read(Bool.self)))
        }
        return IndexDefinition(components: components, unique: unique, covering: covering)
    }

    init(generation: Int, state: IndexState, definition: IndexDefinition, retired: [Int] = [], previous: Previous? = nil) {
        self.generation = generation
        self.state = state
        self.definition = definition
        self.retired = retired
        self.previous = previous
    }

    init(decoding bytes: UnsafeRawBufferPointer, keyspace: String, name: String) throws {
        var r = FieldReader(bytes)
        let features: [String]
        do throws(FieldDecodingError) {
            features = try r.read([String].self)
        } catch {
            throw RecordError.corruptCatalog(keyspace: keyspace, detail: "index \"\(name)\": \(error)")
        }
        // Unknown features first: what follows them may be laid out differently.
        try Manifest.refuseUnknown(features, in: "index \"\(name)\" of keyspace \"\(keyspace)\"")
        do throws(FieldDecodingError) {
            generation = try r.read(Int.self)
            definition = try Self.readDefinition(&r)
            let rawState = try r.read(UInt8.self)
            guard let state = IndexState(rawValue: rawState) else { throw FieldDecodingError(offset: r.offset, reason: "unknown index state \(rawState)") }
            self.state = state
            retired = try r.read([Int].self)
            if features.contains(Self.previousFeature) {
                previous = Previous(generation: try r.read(Int.self), definition: try Self.readDefinition(&r))
            }
            if features.contains(Self.kindFeature) {
                definition.kind = try r.read(String.self)
                if previous != nil { previous!.definition.kind = try r.read(String.self) }
            }
            try r.finish()
        } catch {
            throw RecordError.corruptCatalog(keyspace: keyspace, detail: "index \"\(name)\": \(error)")
        }
    }
}

/// One of a record type's declared indexes as this transaction sees it. Writes keep every one
/// (a declared index is never disabled: a write transaction registers it anew).
@usableFromInline
struct ActiveIndex: Sendable {
    /// Position in `R.indexes`.
    @usableFromInline let position: Int
    @usableFromInline let name: String
    /// `00 enc("ix", keyspace, name, generation)`: every entry starts with it.
    @usableFromInline let prefix: [UInt8]
    let generation: Int
    let state: IndexState
    @usableFromInline let unique: Bool
    @usableFromInline let covering: Bool
    /// Whether it keeps a total per group (``IndexStorage/totals``) rather than an entry per record.
    @usableFromInline let totals: Bool
    let componentCount: Int
    /// The readable generation a changed definition replaced, while this one is built.
    @usableFromInline var previous: PreviousIndex?

    /// Whether queries can read it: readable, or being built with the generation it replaces
    /// standing in.
    var isQueryable: Bool { state == .readable || previous != nil }
}

/// A readable generation a changed definition replaced (``StoredIndex/previous``), as a
/// transaction sees it. Its definition is no longer any Swift type's, so its entries are
/// computed from the records' stored bytes through the catalog (``CatalogSnapshot/entries(of:generation:keyspace:name:record:keyLayout:primaryKey:)``).
/// Queries on the new definition read their candidates from it while the new one is built.
/// A class: every index query copies its ``ActiveIndex``, and a reference copies in one retain.
@usableFromInline
final class PreviousIndex: Sendable {
    let generation: Int
    let prefix: [UInt8]
    let definition: IndexDefinition
    /// How many leading components the new definition shares with it (name, type, multi-valued).
    let shared: Int
    /// Whether the new definition has exactly its components (only unique or covering changed):
    /// its entries, in order, are then the new definition's.
    let sameComponents: Bool
    let keyspace: String
    let name: String
    let catalog: CatalogSnapshot
    let keyLayout: [(name: String, type: String)]

    init(generation: Int, prefix: [UInt8], definition: IndexDefinition, shared: Int, sameComponents: Bool, keyspace: String, name: String,
         catalog: CatalogSnapshot, keyLayout: [(name: String, type: String)]) {
        (self.generation, self.prefix, self.definition, self.shared, self.sameComponents) = (generation, prefix, definition, shared, sameComponents)
        (self.keyspace, self.name, self.catalog, self.keyLayout) = (keyspace, name, catalog, keyLayout)
    }

    /// The entry keys the record stored as `key` (keyspace prefix included) and `value` calls for.
    func entries(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, keyspacePrefixLength: Int) throws(IndexUnverifiable) -> [[UInt8]] {
        let record: DecodedRecord
        do throws(RecordDecodingFailure) {
            record = try catalog.decode(key: key, value: value)
        } catch {
            throw IndexUnverifiable(reason: error.detail)
        }
        return try CatalogSnapshot.entries(of: definition, generation: generation, keyspace: keyspace, name: name, record: record,
                                           keyLayout: keyLayout, primaryKey: UnsafeRawBufferPointer(rebasing: key[keyspacePrefixLength...]))
    }
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
        try decodeStored(storedBytes(catalogRange(keyspace: keyspace), in: tx), keyspace: keyspace)
    }

    /// Where `keyspace`'s index catalog entries are: every key starting with `00 enc("index", keyspace)`.
    static func catalogRange(keyspace: String) -> CatalogRange {
        let prefix = SystemKey.prefix + KeyCodec.encode("index", keyspace)
        return CatalogRange(prefix: prefix, end: prefix + [0xFF])
    }

    /// The keys `[prefix, end)` of a keyspace's index catalog (`KeyRange.components(prefix:)`'s
    /// range of the prefix). Kept as two byte arrays rather than a `KeyRange`: a store remembers
    /// it (`Catalog`), and LeakSanitizer cannot follow an array held in `KeyBound`'s payload,
    /// whose tag is stored in the pointer's spare bits, so a remembered range read as leaked.
    struct CatalogRange {
        let prefix: [UInt8]
        let end: [UInt8]
        var range: KeyRange { KeyRange(lower: .inclusive(prefix), upper: .exclusive(end)) }
    }

    /// The index catalog entries in `catalog` (``catalogRange(keyspace:)``) as stored, in key
    /// order: each one's name (its key after the range's prefix) and its value, length-prefixed.
    /// What ``stored(keyspace:in:)`` decodes, and what a remembered ``prepare`` result was derived from.
    static func storedBytes(_ catalog: CatalogRange, in tx: any KeyValueReader) throws -> [UInt8] {
        var bytes = FieldWriter()
        let prefixLength = catalog.prefix.count
        try tx.scan(catalog.range, reverse: false, limit: nil) { key, value in
            bytes.writeBytes(UnsafeRawBufferPointer(rebasing: key[prefixLength...]))
            bytes.writeBytes(value)
            return true
        }
        return bytes.bytes
    }

    /// The entries ``storedBytes(_:in:)`` returned, decoded.
    static func decodeStored(_ bytes: [UInt8], keyspace: String) throws -> [(name: String, index: StoredIndex)] {
        try bytes.withUnsafeBytes { bytes in
            var rows = FieldReader(bytes)
            var found: [(String, StoredIndex)] = []
            while rows.offset < bytes.count {
                let (key, value) = try (rows.readBytes(), rows.readBytes())  // written here: cannot fail
                var reader = KeyReader(key)
                let name: String
                do { name = try reader.read(String.self); try reader.finish() } catch {
                    throw RecordError.corruptCatalog(keyspace: keyspace, detail: "index key: \(error)")
                }
                found.append((name, try StoredIndex(decoding: value, keyspace: keyspace, name: name)))
            }
            return found
        }
    }

    /// Reconciles `R`'s declared indexes with the store's (RecordFormat.md, "Indexes"): in a write
    /// transaction a new or changed index is registered (readable at once on an empty keyspace,
    /// else write-only under a new generation) and an index `R` no longer declares is disabled.
    /// Returns the declared indexes as this transaction sees them (a read transaction sees an
    /// unregistered one as readable and empty when the keyspace holds no record, else as
    /// write-only: not queryable, nothing to maintain). A changed definition
    /// keeps the readable generation it replaces as its ``StoredIndex/previous`` when that can
    /// serve it (``previousServes(_:_:of:)``).
    ///
    /// The result is a function of `R` and the catalog's bytes once the catalog is settled for
    /// `R` (every declared index stored as declared, none to disable, none being built over a
    /// previous generation): `memory` (the store's ``Catalog``) remembers it with those bytes,
    /// and a later transaction that reads the same bytes (they are read every time, so what
    /// another store or process changed is seen) takes it from there rather than decoding and
    /// reconciling again.
    static func prepare<R: Record>(_: R.Type, keyspacePrefix: [UInt8], in tx: any KeyValueReader,
                                   writer: (any KeyValueWriter)?, remembered memory: Catalog, envelope: RecordEnvelope) throws -> [ActiveIndex] {
        let keyspace = R.recordType.keyspace
        let remembered = memory.preparedIndexes(R.self)
        let catalogRange = remembered?.catalog ?? catalogRange(keyspace: keyspace)
        let bytes = try storedBytes(catalogRange, in: tx)
        if let remembered, remembered.stored == bytes { return remembered.indexes }
        let declared = R.indexes
        let stored = try decodeStored(bytes, keyspace: keyspace)
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
        var snapshot: CatalogSnapshot?
        func catalog() throws -> CatalogSnapshot {  // read once, for the previous generations' transcoding
            if let snapshot { return snapshot }
            let made = try previousCatalog(R.self, in: tx, envelope: envelope)
            snapshot = made
            return made
        }
        var active: [ActiveIndex] = []
        var registered = false
        // Stored indexes `R` no longer declares: disabled by a write transaction.
        let undeclared = stored.filter { $0.index.state != .disabled && !names.contains($0.name) }
        var settled = undeclared.isEmpty
        for (position, index) in declared.enumerated() {
            let definition = index.definition
            var current = stored.first { $0.name == index.name }?.index
            if current == nil || current!.definition != definition || current!.state == .disabled {
                settled = false
                // The readable generation being replaced (or the one it was itself replacing).
                let serving = current.flatMap { old -> StoredIndex.Previous? in
                    guard old.state != .disabled else { return nil }
                    let candidate = old.state == .readable ? StoredIndex.Previous(generation: old.generation, definition: old.definition) : old.previous
                    return candidate.flatMap { previousServes($0.definition, definition, of: R.recordType) ? $0 : nil }
                }
                if let writer {
                    var next = StoredIndex(generation: 1, state: try isEmpty() ? .readable : .writeOnly, definition: definition)
                    if let old = current {
                        next.generation = old.generation + 1
                        next.retired = old.retired + [old.generation] + (old.previous.map { [$0.generation] } ?? [])
                        if next.state == .writeOnly, let serving {
                            next.retired.removeAll { $0 == serving.generation }
                            next.previous = serving
                        }
                    }
                    try writer.put(next.encoded(), forKey: SystemKey.index(keyspace: keyspace, name: index.name))
                    // A build position left under this generation by an index of the same name that
                    // was dropped mid-build (its definition cleared, so generations start again) is
                    // not this build's: the build starts from the first record.
                    try writer.delete(SystemKey.indexBuild(keyspace: keyspace, name: index.name, generation: next.generation))
                    current = next
                    registered = true
                } else if try isEmpty() {
                    // Nothing to index: the next write registers it readable, and until then it is
                    // complete already (a generation that has no entries, read as empty).
                    current = StoredIndex(generation: (current?.generation ?? 0) + 1, state: .readable, definition: definition)
                } else {
                    current = StoredIndex(generation: 0, state: .writeOnly, definition: definition, previous: serving)
                }
            }
            let registeredIndex = current!
            if registeredIndex.previous != nil { settled = false }
            active.append(ActiveIndex(
                position: position, name: index.name,
                prefix: entriesPrefix(keyspace: keyspace, name: index.name, generation: registeredIndex.generation),
                generation: registeredIndex.generation, state: registeredIndex.state, unique: index.unique, covering: index.covering,
                totals: index.storage == .totals, componentCount: index.components.count,
                previous: try registeredIndex.previous.map { try previousIndex($0, of: R.self, name: index.name, for: definition, catalog: catalog()) }))
        }
        if let writer {
            for (name, var index) in undeclared {
                index.state = .disabled
                index.retirePrevious()
                try writer.put(index.encoded(), forKey: SystemKey.index(keyspace: keyspace, name: name))
            }
            if registered { try Catalog.require(feature, keyspace: keyspace, in: tx, writer: writer) }
        }
        if settled { memory.remember(R.self, (catalogRange, bytes, active)) }
        return active
    }

    /// Whether the readable generation `old` can stand in for `new` while `new` is built: it
    /// shares at least the first component (so a query's candidates are a range of it), every
    /// record with entries in `new` has one in it (its other components are single-valued), and
    /// each of its components is a key component or a field the catalog describes with a key
    /// encoding (so writes can keep it without the Swift type that declared it).
    static func previousServes(_ old: IndexDefinition, _ new: IndexDefinition, of type: RecordType) -> Bool {
        let shared = sharedComponents(old, new)
        // Only a value index's entries are exactly its components' values, one per combination, as
        // the catalog computes them: another kind may write other entries than its reading gives.
        guard shared > 0, old.kind == IndexKinds.value else { return false }
        if old.components[shared...].contains(where: \.multiValued) { return false }
        let fields = type.fields ?? []
        return old.components.allSatisfy { component in
            if !component.multiValued && type.key.contains(where: { $0.name == component.name }) { return true }
            guard let position = fields.firstIndex(where: { $0.name == component.name }),
                  fields[..<position].allSatisfy({ FieldLayout($0.format).isDescribed }) else { return false }
            var layout = FieldLayout(fields[position].format)
            if component.multiValued {
                switch layout {
                case .array(let element), .set(let element): layout = element
                default: return false
                }
            }
            return layout.hasKeyEncoding
        }
    }

    static func sharedComponents(_ a: IndexDefinition, _ b: IndexDefinition) -> Int {
        guard a.kind == b.kind else { return 0 }  // another kind's entries hold other values
        return zip(a.components, b.components).prefix { $0 == $1 }.count
    }

    /// The keyspace's catalog entry, with `R`'s current schema even before its first write: what
    /// previous generations decode stored records with.
    private static func previousCatalog<R: Record>(_: R.Type, in tx: any KeyValueReader, envelope: RecordEnvelope) throws -> CatalogSnapshot {
        let type = R.recordType
        var entry = try tx.get(SystemKey.keyspace(type.keyspace)).map { try CatalogEntry(decoding: $0, keyspace: type.keyspace) }
            ?? CatalogEntry(key: type.key.map { (name: $0.name, type: $0.typeName) })
        if !entry.schemas.contains(where: { $0.version == type.version }) {
            entry.schemas.append(CatalogEntry.Schema(version: type.version, fields: type.fields))
        }
        return CatalogSnapshot(keyspace: type.keyspace, entry: entry, envelope: envelope)
    }

    private static func previousIndex<R: Record>(_ previous: StoredIndex.Previous, of _: R.Type, name: String, for definition: IndexDefinition,
                                                 catalog: CatalogSnapshot) -> PreviousIndex {
        let type = R.recordType
        let shared = sharedComponents(previous.definition, definition)
        return PreviousIndex(
            generation: previous.generation,
            prefix: entriesPrefix(keyspace: type.keyspace, name: name, generation: previous.generation),
            definition: previous.definition, shared: shared,
            sameComponents: shared == previous.definition.components.count && shared == definition.components.count,
            keyspace: type.keyspace, name: name, catalog: catalog, keyLayout: type.key.map { (name: $0.name, type: $0.typeName) })
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
