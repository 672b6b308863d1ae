import CLibCrypto
import Foundation

/// A 256-bit key for ``RecordEncryption``, and its identifier.
///
/// Make one from 32 bytes you keep elsewhere (a keychain, a secrets manager), draw a new one
/// with ``random()``, or derive one from a long random passphrase with
/// ``init(passphrase:salt:)``. Strata never stores the key: only its ``id``, in the store's
/// manifest and before every sealed value, so that a store refuses to open with another key and
/// a value names the key it needs.
public struct EncryptionKey: Sendable {
    /// The key's 32 bytes, wiped when the last copy of the key is let go.
    let key: SecretBytes
    /// The key's identifier: the first four bytes of HMAC-SHA256(key, "strata key identifier"),
    /// read big-endian (RecordFormat.md, "Encrypted values"). It names the key, it reveals nothing
    /// of it.
    public let id: UInt32

    /// The key made of `bytes`, which must be 32 bytes long.
    public init(bytes: some ContiguousBytes) throws(EncryptionKeyError) {
        let count = bytes.withUnsafeBytes { $0.count }
        guard count == 32 else { throw EncryptionKeyError.wrongLength(count) }
        self.init(bytes.withUnsafeBytes { SecretBytes($0) })
    }

    init(_ key: SecretBytes) {
        self.key = key
        id = Self.identifier(key.withUnsafeBytes { LibCrypto.hmacSHA256(key: $0, Array("strata key identifier".utf8)) }.prefix(4))
    }

    /// The identifier four bytes hold, read big-endian (as the manifest and messages show it).
    static func identifier(_ bytes: some Collection<UInt8>) -> UInt32 {
        bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A new random key. Keep its bytes (``withUnsafeBytes(_:)``): a store encrypted with it
    /// cannot be read without them.
    public static func random() -> EncryptionKey {
        // libcrypto's generator fails only when the kernel gives it no entropy: no key can be made.
        var bytes: [UInt8]
        do { bytes = try LibCrypto.randomBytes(32) } catch { preconditionFailure("\(error)") }
        defer { bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        return EncryptionKey(bytes.withUnsafeBytes { SecretBytes($0) })
    }

    /// The key derived from `passphrase` with HKDF-SHA256 (`salt` as its salt): the same
    /// passphrase and salt give the same key.
    ///
    /// HKDF does not slow down guessing: use a long random passphrase (a generated one, a secret
    /// from a vault), not a password a person chose and types; derive a key from a password with
    /// a password hash (scrypt, Argon2) and pass its bytes to ``init(bytes:)``.
    public init(passphrase: String, salt: String) {
        self.init(RecordEncryption.derive(Array(passphrase.utf8), salt: Array(salt.utf8), info: "strata passphrase key"))
    }

    /// Lends the key's 32 bytes to `body`, to keep them where you keep secrets.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try key.withUnsafeBytes(body)
    }

    /// The identifier as eight hexadecimal digits, as error messages and the manifest show it.
    public var idDescription: String { Self.describe(id) }

    static func describe(_ id: UInt32) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }
}

/// A key that cannot be used.
public enum EncryptionKeyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Key bytes of another length than 32.
    case wrongLength(Int)

    public var description: String {
        switch self {
        case let .wrongLength(count): return "an encryption key is 32 bytes, not \(count)"
        }
    }
}

/// Where ``RecordEncryption`` gets its keys: the key new values are sealed under, and earlier
/// keys by identifier for values sealed under them (after a rotation).
///
/// ``StaticKeys`` holds them in memory; implement this protocol to fetch them from a keychain or
/// a secrets manager. The current key is asked for once, when ``RecordEncryption`` is made; an
/// earlier key the first time a value sealed under it is read.
public protocol KeyProvider: Sendable {
    /// The key new values are sealed under.
    func currentKey() throws -> EncryptionKey
    /// The key whose identifier is `id`, or `nil` when the provider does not hold it.
    func key(withID id: UInt32) throws -> EncryptionKey?
}

/// Keys held in memory: a current one and, optionally, earlier ones.
public struct StaticKeys: KeyProvider {
    /// The key new values are sealed under.
    public let current: EncryptionKey
    /// Earlier keys, for values sealed under them.
    public let previous: [EncryptionKey]

    /// Keys sealing new values under `current`, reading values sealed under any of `previous` too.
    public init(current: EncryptionKey, previous: [EncryptionKey] = []) {
        self.current = current
        self.previous = previous
    }

    public func currentKey() -> EncryptionKey { current }

    public func key(withID id: UInt32) -> EncryptionKey? {
        ([current] + previous).first { $0.id == id }
    }
}
