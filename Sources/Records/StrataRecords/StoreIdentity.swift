import StrataEngine

/// A store's identity (RecordFormat.md, "Identity"): a random number below 2^53 (so that every
/// JSON parser holds a page token's copy exactly), drawn when the store is made, or first opened
/// for writing by a build that has identities. Page tokens carry it, so a token is refused by
/// every other store (a shard, a copy: `strata copy` gives the copy its own; a backup of the files
/// keeps it). It is no secret: it tells stores apart, it does not authenticate anything.
enum StoreIdentity {
    /// The identity stored in `engine`, drawn and stored first when there is none and the store
    /// is writable. `nil` when the store has none and cannot get one now (opened read-only, a full
    /// disk) or its identity is damaged: page tokens then read it in their own transaction (absent
    /// reads as 0, damaged throws), so every process agrees on what the store holds.
    static func load(_ engine: any KeyValueEngine, readOnly: Bool) -> UInt64? {
        if let stored = try? engine.read({ tx in try tx.get(SystemKey.identity) }) { return try? decode(stored) }
        guard !readOnly else { return nil }
        return try? engine.write { tx in
            if let stored = try tx.get(SystemKey.identity) { return try decode(stored) }  // another process drew it meanwhile
            return try drawNew(in: tx)
        }
    }

    /// Draws a new identity and stores it (a new store, a copy, an older store's first writable open).
    @discardableResult
    static func drawNew(in tx: any KeyValueWriter) throws -> UInt64 {
        let identity = UInt64.random(in: 1..<(1 << 53))
        try tx.put(encode(identity), forKey: SystemKey.identity)
        return identity
    }

    /// The identity `tx` sees: 0 when the store has none.
    static func read(in tx: any KeyValueReader) throws -> UInt64 {
        try tx.get(SystemKey.identity).map(decode) ?? 0
    }

    static func encode(_ identity: UInt64) -> [UInt8] { withUnsafeBytes(of: identity.littleEndian) { Array($0) } }

    /// Eight bytes, little-endian, not zero.
    static func decode(_ bytes: [UInt8]) throws -> UInt64 {
        guard bytes.count == 8 else {
            throw RecordError.manifestMismatch(detail: "the store's identity is \(bytes.count) bytes, not 8")
        }
        let identity = bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        guard identity != 0, identity < 1 << 53 else { throw RecordError.manifestMismatch(detail: "the store's identity \(identity) is out of range") }
        return identity
    }
}
