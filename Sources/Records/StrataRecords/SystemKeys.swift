import StrataKeyCodec

/// The store's own keys (RecordFormat.md, "Keys"). They start with `00`, which no record key (its
/// keyspace name, a string, starts with `02`) does. Keys reserved for later features are named
/// here too, so nothing else ever takes them.
enum SystemKey {
    static let prefix: [UInt8] = [TypeCode.null]
    /// Engine, key codec and format version.
    static let manifest = prefix + KeyCodec.encode("manifest")
    /// Store-wide features a build must know to open the store (none in format 2).
    static let features = prefix + KeyCodec.encode("features")
    /// The store's identity (``StoreIdentity``), which page tokens carry.
    static let identity = prefix + KeyCodec.encode("identity")
    /// The salt of a store's value transforms (``StoreSalt``); only in stores made with transforms.
    static let transformSalt = prefix + KeyCodec.encode("transform-salt")
    /// One catalog entry per keyspace: key layout, schemas, features.
    static func keyspace(_ name: String) -> [UInt8] { prefix + KeyCodec.encode("keyspace", name) }
    static let keyspaces = KeyRange.components(prefix: prefix + KeyCodec.encode("keyspace"))
    /// An index's catalog entry (definition, state, generation).
    static func index(keyspace: String, name: String) -> [UInt8] { prefix + KeyCodec.encode("index", keyspace, name) }
    /// The prefix of an index's entries of one generation, followed by the indexed values and
    /// the primary key.
    static func indexEntries(keyspace: String, name: String, generation: Int) -> [UInt8] {
        prefix + KeyCodec.encode("ix", keyspace, name, generation)
    }
    /// The progress of building an index generation (an online job).
    static func indexBuild(keyspace: String, name: String, generation: Int) -> [UInt8] {
        job("index/\(keyspace)/\(name)/\(generation)")
    }
    /// The progress of an online job (the format upgrade; later index builds).
    static func job(_ name: String) -> [UInt8] { prefix + KeyCodec.encode("job", name) }

    /// The change feed's settings (``ChangeLog/Settings``); absent while the feed is off.
    static let changeFeed = prefix + KeyCodec.encode("changefeed")
    /// What every change feed chunk's key starts with (then the feed, the version and the
    /// chunk's first change).
    static let changeLog = prefix + KeyCodec.encode("changes")

    /// What every index definition's key starts with (then keyspace and name).
    static let indexDefinitions = prefix + KeyCodec.encode("index")
    /// What every index entry's key starts with (then keyspace, name, generation, values, key).
    static let allIndexEntries = prefix + KeyCodec.encode("ix")
    /// What every job's progress key starts with (then the job's name).
    static let jobs = prefix + KeyCodec.encode("job")

    /// The index an entry key belongs to, and where its values start; `nil` for a key that is
    /// not an index entry or does not name an index.
    static func indexEntry(_ key: UnsafeRawBufferPointer) -> (keyspace: String, name: String, generation: Int, valuesStart: Int)? {
        guard key.starts(with: allIndexEntries) else { return nil }
        var reader = KeyReader(UnsafeRawBufferPointer(rebasing: key[allIndexEntries.count...]))
        guard let keyspace = try? reader.read(String.self), let name = try? reader.read(String.self),
              let generation = try? reader.read(Int.self) else { return nil }
        return (keyspace, name, generation, allIndexEntries.count + reader.offset)
    }

    /// Every key that is not a system key: where records live.
    static let nonSystem = KeyRange(lower: .inclusive([TypeCode.null + 1]), upper: .unbounded)
}

/// Features a store or keyspace may require (RecordFormat.md, "Features"). A build refuses a
/// store or keyspace that requires one it does not know: an older build must never write records
/// without maintaining what a newer one added (index entries, for one).
enum KnownFeatures {
    static let all: Set<String> = [IndexCatalog.feature, StoredIndex.previousFeature, StoredIndex.kindFeature, ChangeLog.feature]
}
