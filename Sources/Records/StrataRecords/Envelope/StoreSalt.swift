import StrataEngine

/// The salt a store's value transforms are bound to (RecordFormat.md, "Keys" and "Encrypted values"): 16
/// random bytes drawn with the manifest of a store made with transforms, never changed. A copy
/// of the store made byte for byte keeps it (its values stay readable; a copy that re-seals its
/// values with other transforms draws its own); another store has its own, so a cipher that
/// derives its key from it refuses values taken from another store.
enum StoreSalt {
    static let length = 16

    /// Draws the salt of a new store with transforms, in the transaction that writes its manifest.
    static func drawNew(in tx: any KeyValueWriter) throws {
        try tx.put(draw(), forKey: SystemKey.transformSalt)
    }

    /// A new salt.
    static func draw() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// `transforms`, each bound to the salt stored in `engine`. A store that has no manifest yet
    /// (an empty store opened read-only: nothing to read) binds them to no salt.
    static func bind(_ transforms: [any ValueTransform], in engine: any KeyValueEngine) throws -> [any ValueTransform] {
        let (salt, hasManifest) = try engine.read { tx in (try tx.get(SystemKey.transformSalt), try tx.exists(SystemKey.manifest)) }
        guard let salt else {
            if !hasManifest { return try transforms.map { try $0.bound(toStore: []) } }
            throw RecordError.manifestMismatch(detail: "the store's values pass through transforms, but it holds no transform salt")
        }
        guard salt.count == length else {
            throw RecordError.manifestMismatch(detail: "the store's transform salt is \(salt.count) bytes, not \(length)")
        }
        return try transforms.map { try $0.bound(toStore: salt) }
    }
}
