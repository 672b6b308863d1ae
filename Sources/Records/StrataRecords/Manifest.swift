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
        /// order. Stored only when there are any (or a `retiring` list follows), so a store without
        /// transforms has the manifest it always had, and a Strata that predates them refuses a
        /// store that has some.
        var transforms: [String] = []
        /// While a key rotation runs (``Store/rotateKeys(batchSize:onBatch:)``): the chain it
        /// retires, whose values are not all re-sealed yet. Stored only then, after `transforms`.
        var retiring: [String] = []
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
        // The list of transforms is written whenever the retiring list follows it, even empty:
        // the reader tells the two lists apart by their order only.
        if !c.transforms.isEmpty || !c.retiring.isEmpty { w.write(c.transforms) }
        if !c.retiring.isEmpty { w.write(c.retiring) }
        return w.bytes
    }

    /// The manifest `tx` reads, `nil` in a store without one (an empty store).
    static func stored(in tx: any KeyValueReader) throws -> Contents? {
        try tx.get(SystemKey.manifest).map(decode)
    }

    /// The manifest `tx` reads; a store without one is refused as unreadable.
    static func required(in tx: any KeyValueReader) throws -> Contents {
        try decode(try tx.get(SystemKey.manifest) ?? [])
    }

    static func decode(_ bytes: [UInt8]) throws -> Contents {
        try bytes.withUnsafeBytes { raw in
            var r = FieldReader(raw)
            do {
                var c = Contents(engine: try r.read(), codec: try r.read(), codecVersion: try r.read(), format: try r.read())
                if !r.isAtEnd { c.transforms = try r.read() }
                if !r.isAtEnd { c.retiring = try r.read() }
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
        /// A current store opened for writing with transforms that read its own under other
        /// names: ``beginRotation(_:from:to:)`` once every other check of the open passed.
        case rotates(from: Contents)
        /// A format-1 store, or a format-2 store whose upgrade was interrupted.
        case needsUpgrade(from: UInt32)
    }

    /// Checks the manifest and the store-wide features; writes both into an empty store. A
    /// writable open with transforms that read the stored ones under other names (a cipher given a
    /// new key and the old one) begins a key rotation: the manifest names the new chain and
    /// retires the stored one.
    static func check(_ engine: any KeyValueEngine, readOnly: Bool, transforms opened: [any ValueTransform]) throws -> Found {
        let transforms = opened.map(\.name)
        let expected = current(engine, transforms: transforms)
        let found = try engine.read { tx -> (Contents?, Bool, [String], Bool) in
            let stored = try stored(in: tx)
            let features = try storeFeatures(in: tx)
            let upgrading = try tx.exists(SystemKey.job(FormatUpgrade.jobName))
            return (stored, try tx.keys(.all, limit: 1).isEmpty, features, upgrading)
        }
        if let stored = found.0 {
            try compare(stored, expected)
            let rotates = try rotationBegins(stored, opened: opened) && !readOnly
            try refuseUnknown(found.2, in: "the store")
            // A store of an older format has no transforms: it begins no rotation.
            if stored.format < expected.format || found.3 { return .needsUpgrade(from: stored.format) }
            return rotates ? .rotates(from: stored) : .current
        }
        if !found.1 { throw RecordError.manifestMismatch(detail: "the store holds data but no Strata manifest") }
        if readOnly { return .current }  // an empty store opened read-only: nothing to check, nothing to write
        return try engine.write { tx in
            if let contents = try stored(in: tx) {  // another process created it meanwhile
                try compare(contents, expected)
                if contents.transforms != transforms { throw writtenWith(contents.transforms, openedWith: transforms) }
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
    }

    /// Whether opening a store whose manifest is `stored` with `opened` begins a key rotation:
    /// the chains differ in names but `opened` reads the stored one. Refuses transforms that
    /// cannot read the store's values (the stored chain's, and while a rotation runs the chain it
    /// retires), and a second rotation while one runs: a store holds values under at most two.
    static func rotationBegins(_ stored: Contents, opened: [any ValueTransform]) throws -> Bool {
        let names = opened.map(\.name)
        if stored.transforms == names {
            guard try stored.retiring.isEmpty || reads(opened, stored.retiring) else {
                throw RecordError.manifestMismatch(detail: "a key rotation from \(describe(stored.retiring)) to \(describe(names)) is under way "
                    + "(Store.rotateKeys): values not yet re-sealed need \(describe(stored.retiring)), which the transforms given cannot read")
            }
            return false
        }
        guard try reads(opened, stored.transforms) else {
            throw writtenWith(stored.transforms, openedWith: names)
        }
        guard stored.retiring.isEmpty else {
            throw RecordError.manifestMismatch(detail: "a key rotation from \(describe(stored.retiring)) to \(describe(stored.transforms)) is under way: "
                + "finish it (Store.rotateKeys) with \(describe(stored.transforms)) before opening with \(describe(names)) (a store holds values under at most two keys)")
        }
        return true
    }

    /// Whether each of `opened` reads the values of the transform named at its place in `names`.
    static func reads(_ opened: [any ValueTransform], _ names: [String]) throws -> Bool {
        guard opened.count == names.count else { return false }
        for (transform, name) in zip(opened, names) where !(try transform.reads(valuesNamed: name)) { return false }
        return true
    }

    /// Names `transforms` in the manifest and retires the chain `stored` names, unless another
    /// process did so first; a manifest changed otherwise meanwhile is refused (open again).
    static func beginRotation(_ engine: any KeyValueEngine, from stored: Contents, to transforms: [String]) throws {
        try engine.write { tx in
            let now = try required(in: tx)
            if now.transforms == transforms && now.retiring == stored.transforms { return }
            guard now == stored else {
                throw RecordError.manifestMismatch(detail: "the manifest changed while the store opened (another process rotated its key?): open it again")
            }
            var rotating = stored
            rotating.transforms = transforms
            rotating.retiring = stored.transforms
            try tx.put(encode(rotating), forKey: SystemKey.manifest)
        }
    }

    /// The refusal of a store whose values were written with the chain `stored`, opened with another.
    static func writtenWith(_ stored: [String], openedWith opened: [String]) -> RecordError {
        .manifestMismatch(detail: "values written with the transforms \(describe(stored)), opened with \(describe(opened))")
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
