import StrataEngine
import StrataKeyCodec

/// What a store was written with (RecordFormat.md, "Manifest"): checked at every open, written
/// into a new store.
enum Manifest {
    static let formatVersion: UInt32 = 2

    struct Contents: Equatable {
        var engine: String
        var codec: String
        var codecVersion: UInt32
        var format: UInt32
        /// The names of the value transforms records are sealed with (``RecordEnvelope``), in
        /// order. Stored only when there are any, so a store without transforms has the manifest
        /// it always had, and a Strata that predates them refuses a store that has some.
        var transforms: [String] = []
    }

    static func current(_ engine: any KeyValueEngine, transforms: [String]) -> Contents {
        Contents(engine: engine.engineName, codec: KeyCodec.name, codecVersion: UInt32(KeyCodec.version), format: formatVersion,
                 transforms: transforms)
    }

    static func encode(_ c: Contents) -> [UInt8] {
        var w = FieldWriter()
        w.write(c.engine)
        w.write(c.codec)
        w.write(c.codecVersion)
        w.write(c.format)
        if !c.transforms.isEmpty { w.write(c.transforms) }
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> Contents {
        try bytes.withUnsafeBytes { raw in
            var r = FieldReader(raw)
            do {
                var c = Contents(engine: try r.read(), codec: try r.read(), codecVersion: try r.read(), format: try r.read())
                if !r.isAtEnd { c.transforms = try r.read() }
                try r.finish()
                return c
            } catch {
                throw RecordError.manifestMismatch(detail: "the manifest is unreadable: \(error)")
            }
        }
    }

    /// What opening found, for ``Store`` to act on.
    enum Found {
        case current
        /// A format-1 store, or a format-2 store whose upgrade was interrupted.
        case needsUpgrade(from: UInt32)
    }

    /// Checks the manifest and the store-wide features; writes both into an empty store.
    static func check(_ engine: any KeyValueEngine, readOnly: Bool, transforms: [String]) throws -> Found {
        let expected = current(engine, transforms: transforms)
        let found = try engine.read { tx -> (Contents?, Bool, [String], Bool) in
            let stored = try tx.get(SystemKey.manifest)
            let features = try storeFeatures(in: tx)
            let upgrading = try tx.exists(SystemKey.job(FormatUpgrade.jobName))
            return (try stored.map(decode), try tx.keys(.all, limit: 1).isEmpty, features, upgrading)
        }
        if let stored = found.0 {
            try compare(stored, expected)
            try refuseUnknown(found.2, in: "the store")
            if stored.format < expected.format { return .needsUpgrade(from: stored.format) }
            return found.3 ? .needsUpgrade(from: stored.format) : .current
        }
        if !found.1 { throw RecordError.manifestMismatch(detail: "the store holds data but no Strata manifest") }
        if readOnly { return .current }  // an empty store opened read-only: nothing to check, nothing to write
        return try engine.write { tx in
            if let stored = try tx.get(SystemKey.manifest) {  // another process created it meanwhile
                let contents = try decode(stored)
                try compare(contents, expected)
                return contents.format < expected.format ? .needsUpgrade(from: contents.format) : .current
            }
            try tx.put(encode(expected), forKey: SystemKey.manifest)
            // A new store gets its identity (and its transforms their salt) with its manifest: no
            // reader ever sees it without them.
            try StoreIdentity.drawNew(in: tx)
            if !transforms.isEmpty { try StoreSalt.drawNew(in: tx) }
            return .current
        }
    }

    static func compare(_ stored: Contents, _ expected: Contents) throws {
        if stored.format > expected.format {
            throw RecordError.manifestMismatch(detail: "format version \(stored.format) is newer than this Strata's \(expected.format)")
        }
        if !FormatUpgrade.upgradable.contains(stored.format) && stored.format != expected.format {
            throw RecordError.manifestMismatch(detail: "unknown format version \(stored.format)")
        }
        if stored.engine != expected.engine {
            throw RecordError.manifestMismatch(detail: "written by engine \(stored.engine), opened with \(expected.engine)")
        }
        if stored.codec != expected.codec || stored.codecVersion != expected.codecVersion {
            throw RecordError.manifestMismatch(detail: "keys encoded with \(stored.codec) v\(stored.codecVersion), this Strata reads \(expected.codec) v\(expected.codecVersion)")
        }
        if stored.transforms != expected.transforms {
            throw RecordError.manifestMismatch(detail: "values written with the transforms \(describe(stored.transforms)), opened with \(describe(expected.transforms))")
        }
    }

    /// A transform chain for messages: `[zstd, aes-gcm]`, or `none`.
    static func describe(_ transforms: [String]) -> String {
        transforms.isEmpty ? "none" : "[" + transforms.joined(separator: ", ") + "]"
    }

    /// The store-wide features listed in the store (RecordFormat.md, "Features").
    static func storeFeatures(in tx: any KeyValueReader) throws -> [String] {
        try tx.get(SystemKey.features).map(decodeFeatures) ?? []
    }

    /// Lists `feature` among the store-wide features, or takes it off the list.
    static func setStoreFeature(_ feature: String, listed: Bool, in tx: any KeyValueReader, writer: any KeyValueWriter) throws {
        let features = try storeFeatures(in: tx)
        guard features.contains(feature) != listed else { return }
        try writer.put(encodeFeatures(listed ? features + [feature] : features.filter { $0 != feature }), forKey: SystemKey.features)
    }

    static func encodeFeatures(_ features: [String]) -> [UInt8] {
        var w = FieldWriter()
        w.write(features)
        return w.bytes
    }

    static func decodeFeatures(_ bytes: [UInt8]) throws -> [String] {
        try bytes.withUnsafeBytes { raw in
            var r = FieldReader(raw)
            do {
                let features = try r.read([String].self)
                try r.finish()
                return features
            } catch {
                throw RecordError.manifestMismatch(detail: "the store's feature list is unreadable: \(error)")
            }
        }
    }

    static func refuseUnknown(_ features: [String], in scope: String) throws {
        if let unknown = features.first(where: { !KnownFeatures.all.contains($0) }) {
            throw RecordError.unsupportedFeature(feature: unknown, scope: scope)
        }
    }
}
