import CLibCrypto
import Foundation
@_spi(StrataInternals) import StrataEngine
import StrataRecords

/// Encryption of every record value at rest: AES-256-GCM (the system's OpenSSL libcrypto), a `ValueTransform` of
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
    /// The store's key derived from ``current`` (before binding: from no salt), with its cipher contexts.
    let currentStoreKey: AESGCMKey
    /// Earlier keys, looked up by identifier and derived for the store once.
    let ring: KeyRing
    /// For the format's test vectors only: the nonce of every seal (12 bytes).
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
    static func storeKey(_ key: EncryptionKey, salt: [UInt8]) -> AESGCMKey {
        AESGCMKey(key.key.withUnsafeBytes { derive($0, salt: salt, info: "strata aes-256-gcm record values") })
    }

    /// 32 bytes derived from `secret` with HKDF-SHA256.
    static func derive(_ secret: some ContiguousBytes, salt: [UInt8], info: String) -> SecretBytes {
        // HKDF fails only when libcrypto cannot allocate its context: nothing sensible is left to do.
        var derived: [UInt8]
        do {
            derived = try secret.withUnsafeBytes { try LibCrypto.hkdfSHA256(key: $0, salt: salt, info: Array(info.utf8), count: 32) }
        } catch {
            preconditionFailure("\(error)")
        }
        defer { derived.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        return derived.withUnsafeBytes { SecretBytes($0) }
    }

    /// Appends `key identifier (4, big-endian) ‖ nonce (12) ‖ ciphertext ‖ tag (16)`.
    public func apply(_ fields: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) throws {
        let nonce = fixedNonce.map(Nonce.init) ?? NonceSource.next()
        output.reserveCapacity(output.count + fields.count + Self.overhead)
        withUnsafeBytes(of: current.id.bigEndian) { output.append(contentsOf: $0) }
        try nonce.withUnsafeBytes { nonce in
            output.append(contentsOf: nonce)
            try currentStoreKey.seal(fields, nonce: nonce, aad: header, appendingTo: &output)
        }
    }

    /// Appends the fields `stored` seals with `header`; refuses bytes too short to be sealed, sealed
    /// under a key the provider does not hold (or could not give now), or failing authentication.
    public func reverse(_ stored: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) throws {
        guard stored.count >= Self.overhead else {
            throw ValueTransformError(.malformed, "\(stored.count) bytes, fewer than the \(Self.overhead) of a sealed value's header and tag")
        }
        let id = EncryptionKey.identifier(stored.prefix(4))
        let storeKey: AESGCMKey
        if id == current.id {
            storeKey = currentStoreKey
        } else {
            let earlier: AESGCMKey?
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
        let nonce = UnsafeRawBufferPointer(rebasing: stored[4..<(4 + AESGCMKey.nonceLength)])
        let sealed = UnsafeRawBufferPointer(rebasing: stored[(4 + AESGCMKey.nonceLength)...])
        let authentic: Bool
        do {
            authentic = try storeKey.open(sealed, nonce: nonce, aad: header, appendingTo: &output)
        } catch {
            // libcrypto failed to work (a context it could not allocate): the bytes may be sound.
            throw ValueTransformError(.keyUnavailable, "\(error)")
        }
        guard authentic else {
            throw ValueTransformError(.authenticationFailed, "the value under key \(EncryptionKey.describe(id)) was altered, moved from another "
                                      + "record or store, or sealed with another key of that identifier")
        }
    }
}

/// The earlier keys of a ``KeyProvider``, asked for once each and derived for one store.
final class KeyRing: Sendable {
    let provider: any KeyProvider
    let salt: [UInt8]
    private let derived = Locked<[UInt32: AESGCMKey]>([:])

    init(_ provider: any KeyProvider, salt: [UInt8]) {
        self.provider = provider
        self.salt = salt
    }

    /// The store's key for the provider's key `id`, or `nil` when the provider has none.
    func storeKey(_ id: UInt32) throws -> AESGCMKey? {
        if let known = derived.withLock({ $0[id] }) { return known }
        guard let key = try provider.key(withID: id), key.id == id else { return nil }
        let storeKey = RecordEncryption.storeKey(key, salt: salt)
        derived.withLock { $0[id] = storeKey }
        return storeKey
    }
}
