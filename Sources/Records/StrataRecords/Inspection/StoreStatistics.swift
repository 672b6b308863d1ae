import StrataEngine
import StrataKeyCodec

/// What a store holds (``Store/statistics(progress:)``): its manifest, its catalog and how many records and
/// bytes each keyspace and index has. `strata stats` prints it.
public struct StoreStatistics: Sendable, Encodable {
    /// The manifest (RecordFormat.md, "Manifest").
    public struct Manifest: Sendable, Hashable, Encodable {
        /// The engine that wrote the store: `lmdb`, `leveldb`, `sqlite`, `memory`, or another engine's name.
        public let engine: String
        /// The key encoding's name (`strata-tuple`).
        public let keyCodec: String
        /// The key encoding's version (1).
        public let keyCodecVersion: UInt32
        /// The store format's version (2 for this build).
        public let format: UInt32
        /// The value transforms records are sealed with, in order (``ValueTransform/name``: `zstd`,
        /// `aes-256-gcm key 6070e29a`); empty for a store that keeps its values as written.
        public let transforms: [String]
        /// While a key rotation runs (``Store/rotateKeys(batchSize:onBatch:)``): the chain it retires.
        public let retiring: [String]
    }

    /// One index of a keyspace.
    public struct Index: Sendable, Hashable, Encodable {
        /// The index's name, unique within its keyspace.
        public let name: String
        /// `email: String, each tags: String`.
        public let layout: String
        /// Whether no two records may have the same indexed values.
        public let unique: Bool
        /// Whether each entry holds a copy of its record's stored value.
        public let covering: Bool
        /// The ``IndexState`` as text: `readable`, `disabled`, or write-only with a hint to build it.
        public let state: String
        /// The current generation, part of its entries' keys; a changed definition gets the next one.
        public let generation: Int
        /// Older generations whose entries are still stored.
        public let retired: [Int]
        /// The readable generation a changed definition replaced, queried while this one is built.
        public let previous: Int?
        /// Entries of the current generation, and their key and value bytes.
        public var entries = 0
        /// The key and value bytes of the current generation's entries, in total.
        public var bytes = 0
        /// Entries of the ``previous`` generation.
        public var previousEntries = 0
    }

    /// What a store's value transforms make of one keyspace's record values (compression's gain,
    /// a cipher's overhead), counted over the values they open.
    public struct TransformedValues: Sendable, Hashable, Encodable {
        /// The values opened.
        public var opened = 0
        /// Their bytes as stored.
        public var storedBytes = 0
        /// The bytes they would take without the transforms (the same checksum and version, the
        /// fields as the records wrote them).
        public var plainBytes = 0
        /// Values that could not be opened (damaged, or sealed under a key the store was not
        /// opened with), left out of both sums.
        public var unopened = 0
    }

    /// One schema version written to a keyspace.
    public struct Schema: Sendable, Hashable, Encodable {
        /// The schema version number, as stored at the start of its record values.
        public let version: UInt32
        /// `name: format` per field, or `nil` when the writing type did not describe its fields.
        public let fields: [String]?
    }

    /// One keyspace.
    public struct Keyspace: Sendable, Hashable, Encodable {
        /// The keyspace's name.
        public let name: String
        /// `lastName: String, firstName: String`.
        public let key: String
        /// Features its catalog entry lists, which a build must know to use the keyspace.
        public let features: [String]
        /// The schema versions written to it, in the order first written.
        public let schemas: [Schema]
        /// Its indexes, in name order.
        public var indexes: [Index]
        /// How many records it holds.
        public var records = 0
        /// The key bytes of its records, in total.
        public var keyBytes = 0
        /// The value bytes of its records, in total.
        public var valueBytes = 0
        /// In a store with value transforms (``Manifest/transforms``): what they make of its
        /// records' values. `nil` without transforms, and for a keyspace without records.
        public var transformed: TransformedValues?
    }

    /// The manifest; `nil` when the store holds none.
    public let manifest: Manifest?
    /// Store-wide features.
    public let features: [String]
    /// Keyspaces in name order (those with records but no catalog entry included, with an empty layout).
    public var keyspaces: [Keyspace]
    /// Online jobs with stored progress (an unfinished format upgrade or index build).
    public var jobs: [String]
    /// Keys of the store's own (manifest, catalog, jobs), index entries excluded.
    public var systemKeys = 0
    /// Keys that are neither Strata's nor record-shaped (another program's).
    public var foreignKeys = 0
}

extension Store {
    /// Reads what the store holds in one read transaction: manifest, features, the catalog
    /// (keyspaces, key layouts, schema versions, indexes and their states), records and bytes
    /// per keyspace (with value transforms, every value opened to weigh what they make of it),
    /// entries and bytes per index, and unfinished jobs. Reads every pair once;
    /// with `progress`, twice (the first pass counts them) and reports every 1,000 pairs.
    public func statistics(progress: ((InspectionProgress) -> Void)? = nil) throws -> StoreStatistics {
        try engine.read { tx in
            var ticker = try ProgressTicker(tx, .all, progress)
            let catalog = try CatalogSnapshot(tx, envelope: envelope)
            let manifest = try StrataRecords.Manifest.stored(in: tx)
            let features = try StrataRecords.Manifest.storeFeatures(in: tx)
            var keyspaces: [String: StoreStatistics.Keyspace] = [:]
            func keyspace(_ name: String) -> StoreStatistics.Keyspace {
                let entry = catalog.keyspaces[name]
                let indexes = (catalog.indexes[name] ?? []).map { name, index in
                    StoreStatistics.Index(name: name, layout: index.definition.layout, unique: index.definition.unique,
                                          covering: index.definition.covering, state: "\(index.state)", generation: index.generation,
                                          retired: index.retired, previous: index.previous?.generation)
                }
                return StoreStatistics.Keyspace(
                    name: name, key: entry?.key.map { "\($0.name): \($0.type)" }.joined(separator: ", ") ?? "",
                    features: entry?.features ?? [],
                    schemas: entry?.schemas.map { StoreStatistics.Schema(version: $0.version, fields: $0.fields?.map { "\($0.name): \($0.format)" }) } ?? [],
                    indexes: indexes)
            }
            for name in catalog.keyspaces.keys { keyspaces[name] = keyspace(name) }
            for name in catalog.indexes.keys where keyspaces[name] == nil { keyspaces[name] = keyspace(name) }

            var stats = StoreStatistics(
                manifest: manifest.map { .init(engine: $0.engine, keyCodec: $0.codec, keyCodecVersion: $0.codecVersion, format: $0.format,
                                                transforms: $0.transforms, retiring: $0.retiring) },
                features: features, keyspaces: [], jobs: [])
            try tx.scan(SystemKey.nonSystem, reverse: false, limit: nil) { key, value in
                try ticker.tick()
                guard let (name, _) = CatalogSnapshot.keyspace(of: key) else {
                    stats.foreignKeys += 1
                    return true
                }
                if keyspaces[name] == nil { keyspaces[name] = keyspace(name) }  // records without a catalog entry
                keyspaces[name]!.records += 1
                keyspaces[name]!.keyBytes += key.count
                keyspaces[name]!.valueBytes += value.count
                if !envelope.isPlain {
                    var transformed = keyspaces[name]!.transformed ?? .init()
                    if let plain = envelope.plainLength(key: key, value: value) {
                        transformed.opened += 1
                        transformed.storedBytes += value.count
                        transformed.plainBytes += plain
                    } else {
                        transformed.unopened += 1
                    }
                    keyspaces[name]!.transformed = transformed
                }
                return true
            }
            try tx.scan(.prefix(SystemKey.prefix), reverse: false, limit: nil) { key, value in
                try ticker.tick()
                if key.starts(with: SystemKey.jobs) {
                    var reader = KeyReader(UnsafeRawBufferPointer(rebasing: key[SystemKey.jobs.count...]))
                    stats.jobs.append((try? reader.read(String.self)) ?? StoredValue.hex(key))
                }
                guard key.starts(with: SystemKey.allIndexEntries) else {
                    stats.systemKeys += 1
                    return true
                }
                guard let (name, index, generation, _) = SystemKey.indexEntry(key),
                      let i = keyspaces[name]?.indexes.firstIndex(where: { $0.name == index }) else { return true }
                if keyspaces[name]!.indexes[i].previous == generation { keyspaces[name]!.indexes[i].previousEntries += 1 }
                guard keyspaces[name]!.indexes[i].generation == generation else { return true }
                keyspaces[name]!.indexes[i].entries += 1
                keyspaces[name]!.indexes[i].bytes += key.count + value.count
                return true
            }
            stats.keyspaces = keyspaces.keys.sorted().map { keyspaces[$0]! }
            try ticker.finish()
            return stats
        }
    }
}
