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
    /// One catalog entry per keyspace: key layout, schemas, features.
    static func keyspace(_ name: String) -> [UInt8] { prefix + KeyCodec.encode("keyspace", name) }
    static let keyspaces = KeyRange.prefix(prefix + KeyCodec.encode("keyspace"))
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

    /// Every key that is not a system key: where records live.
    static let nonSystem = KeyRange(lower: .inclusive([TypeCode.null + 1]), upper: .unbounded)
}

/// Features a store or keyspace may require (RecordFormat.md, "Features"). A build refuses a
/// store or keyspace that requires one it does not know: an older build must never write records
/// without maintaining what a newer one added (index entries, for one).
enum KnownFeatures {
    static let all: Set<String> = [IndexCatalog.feature]
}
