import Crypto
import Foundation
import StrataEngine
import StrataRecords

/// Encryption of every record value at rest: AES-256-GCM (swift-crypto), a `ValueTransform` of
/// the record layer, so it works the same on every engine.
///
/// ```swift
/// let key = try EncryptionKey(bytes: secretBytes)   // 32 bytes from your keychain
/// let store = try Store(.lmdb(path: path), transforms: [RecordEncryption(key: key)])
/// ```
///
/// Each record value (and each covering index entry, which holds its record's value) is sealed
/// under a key of its store, derived with HKDF-SHA256 from your key and the store's salt, with a
/// random 96-bit nonce, and the record's key and the value's schema version as authenticated data
/// (RecordFormat.md, "Encrypted values"). So a value altered on disk (its version included), moved
/// to another key, or taken from another store is
/// refused on read with `RecordError.valueRefused(type:key:transform:reason:)`, never decoded.
/// The manifest names the key's identifier: a store opened with another key, or without
/// encryption, is refused at open with `RecordError.manifestMismatch(detail:)`.
///
/// Keys, their order and their sizes stay visible (an ordered store must compare them):
/// the article "Encrypting a store" says what an observer of the files learns.
public struct RecordEncryption: ValueTransform {
    /// The algorithm's part of the ``name``.
    public static let algorithm = "aes-256-gcm"
    /// Bytes each sealed value adds: the key's identifier (4), the nonce (12) and the tag (16).
    public static let overhead = 32

    /// The key new values are sealed under.
    let current: EncryptionKey
    /// The store's key derived from ``current`` (before binding: from no salt).
    let currentStoreKey: SymmetricKey
    /// Earlier keys, looked up by identifier and derived for the store once.
    let ring: KeyRing
    /// For the format's test vectors only: the nonce of every seal.
    var fixedNonce: [UInt8]?

    /// Encryption under `key` alone.
    public init(key: EncryptionKey) {
        self.init(current: key, provider: StaticKeys(current: key))
    }

    /// Encryption under `keys`' current key, reading values sealed under its earlier keys too.
    /// Throws what the provider throws for the current key.
    public init(keys: some KeyProvider) throws {
        self.init(current: try keys.currentKey(), provider: keys)
    }

    init(current: EncryptionKey, provider: any KeyProvider, salt: [UInt8] = []) {
        self.current = current
        currentStoreKey = Self.storeKey(current, salt: salt)
        ring = KeyRing(provider, salt: salt)
    }

    /// `aes-256-gcm key <identifier>`: opening the store with another key is refused at open.
    public var name: String { "\(Self.algorithm) key \(current.idDescription)" }

    /// Whether `storedName` names this encryption under a key the provider holds (the current
    /// one or an earlier one): opening a store sealed under an earlier key then begins a key
    /// rotation to the current one (`Store.rotateKeys`).
    public func reads(valuesNamed storedName: String) throws -> Bool {
        let prefix = "\(Self.algorithm) key "
        guard storedName.hasPrefix(prefix), let id = UInt32(storedName.dropFirst(prefix.count), radix: 16) else { return false }
        return try id == current.id || ring.provider.key(withID: id)?.id == id
    }

    /// This encryption for the store whose salt is `storeSalt`: its keys are derived from yours
    /// and the salt, so values of another store (another salt) are refused.
    public func bound(toStore storeSalt: [UInt8]) throws -> any ValueTransform {
        var bound = RecordEncryption(current: current, provider: ring.provider, salt: storeSalt)
        bound.fixedNonce = fixedNonce
        return bound
    }

    /// The store's key derived from `key` and the store's salt.
    static func storeKey(_ key: EncryptionKey, salt: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key.key, salt: salt, info: Array("strata aes-256-gcm record values".utf8), outputByteCount: 32)
    }

    /// Appends `key identifier (4, big-endian) ‖ nonce (12) ‖ ciphertext ‖ tag (16)`.
    public func apply(_ fields: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) throws {
        let nonce = try fixedNonce.map { try AES.GCM.Nonce(data: $0) } ?? NonceSource.next()
        let box = try AES.GCM.seal(fields, using: currentStoreKey, nonce: nonce, authenticating: header)
        output.reserveCapacity(output.count + fields.count + Self.overhead)
        withUnsafeBytes(of: current.id.bigEndian) { output.append(contentsOf: $0) }
        // nonce ‖ ciphertext ‖ tag, as the box holds them (its parts one by one cost a copy each).
        box.combined!.withUnsafeBytes { output.append(contentsOf: $0) }  // a 12-byte nonce always has a combined form
    }

    /// Appends the fields `stored` seals with `header`; refuses bytes too short to be sealed, sealed
    /// under a key the provider does not hold (or could not give now), or failing authentication.
    public func reverse(_ stored: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) throws {
        guard stored.count >= Self.overhead else {
            throw ValueTransformError(.malformed, "\(stored.count) bytes, fewer than the \(Self.overhead) of a sealed value's header and tag")
        }
        let id = EncryptionKey.identifier(stored.prefix(4))
        let storeKey: SymmetricKey
        if id == current.id {
            storeKey = currentStoreKey
        } else {
            let earlier: SymmetricKey?
            do {
                earlier = try ring.storeKey(id)
            } catch {
                throw ValueTransformError(.keyUnavailable, "the key provider failed to give key \(EncryptionKey.describe(id)): \(error)")
            }
            guard let earlier else {
                throw ValueTransformError(.missingKey, "sealed under key \(EncryptionKey.describe(id)), which the key provider does not hold")
            }
            storeKey = earlier
        }
        let opened: Data
        do {
            let box = try AES.GCM.SealedBox(combined: UnsafeRawBufferPointer(rebasing: stored[4...]))
            opened = try AES.GCM.open(box, using: storeKey, authenticating: header)
        } catch {
            throw ValueTransformError(.authenticationFailed, "the value under key \(EncryptionKey.describe(id)) was altered, moved from another "
                                      + "record or store, or sealed with another key of that identifier")
        }
        opened.withUnsafeBytes { output.append(contentsOf: $0) }
    }
}

/// The earlier keys of a ``KeyProvider``, asked for once each and derived for one store.
final class KeyRing: Sendable {
    let provider: any KeyProvider
    let salt: [UInt8]
    private let derived = Locked<[UInt32: SymmetricKey]>([:])

    init(_ provider: any KeyProvider, salt: [UInt8]) {
        self.provider = provider
        self.salt = salt
    }

    /// The store's key for the provider's key `id`, or `nil` when the provider has none.
    func storeKey(_ id: UInt32) throws -> SymmetricKey? {
        if let known = derived.withLock({ $0[id] }) { return known }
        guard let key = try provider.key(withID: id), key.id == id else { return nil }
        let storeKey = RecordEncryption.storeKey(key, salt: salt)
        derived.withLock { $0[id] = storeKey }
        return storeKey
    }
}
