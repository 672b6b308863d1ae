import CLibCrypto
import Foundation
@_spi(StrataInternals) import StrataEngine

// OpenSSL's libcrypto, as this module uses it: AES-256-GCM with contexts keyed once per key and
// reused (a context keyed per value cost four times the cipher: Benchmark.md, "Encryption"),
// HMAC-SHA256, HKDF-SHA256 and the kernel-seeded generator. Every call's result goes through
// `check`; pointers are lent only inside closures.

/// A libcrypto call that failed, with the library's own reason.
struct LibCryptoError: Error, CustomStringConvertible {
    let call: String
    let reason: String
    var description: String { "libcrypto: \(call) failed: \(reason)" }
}

/// Throws for a libcrypto result other than 1 (its success), with the reason the library queued.
@inline(__always)
func check(_ result: Int32, _ call: @autoclosure () -> String) throws {
    guard result == 1 else { throw LibCryptoError(call: call(), reason: LibCrypto.takeErrors()) }
}

enum LibCrypto {
    /// The reasons queued on this thread, oldest first, and the queue emptied.
    static func takeErrors() -> String {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            reasons.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? "no reason given" : reasons.joined(separator: "; ")
    }

    /// `count` bytes from libcrypto's generator (seeded by the kernel, reseeded after a fork).
    static func randomBytes(_ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBytes { RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count)) }
        try check(result, "RAND_bytes")
        return bytes
    }

    /// HMAC-SHA256 of `data` under `key`.
    static func hmacSHA256(key: UnsafeRawBufferPointer, _ data: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let made = data.withUnsafeBytes { data in
            code.withUnsafeMutableBytes { out in
                HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), data.baseAddress?.assumingMemoryBound(to: UInt8.self), data.count,
                     out.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)
            }
        }
        // HMAC fails only when it cannot allocate its context: nothing sensible is left to do.
        precondition(made != nil && length == 32, "libcrypto: HMAC-SHA256 failed: \(takeErrors())")
        return code
    }

    /// HKDF-SHA256 (RFC 5869) of `key` with `salt` and `info`: `count` bytes.
    static func hkdfSHA256(key: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8], count: Int) throws -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new_id(strata_evp_pkey_hkdf(), nil) else {
            throw LibCryptoError(call: "EVP_PKEY_CTX_new_id(HKDF)", reason: takeErrors())
        }
        defer { EVP_PKEY_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: count)
        var length = count
        try check(EVP_PKEY_derive_init(context), "EVP_PKEY_derive_init")
        try check(EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()), "EVP_PKEY_CTX_set_hkdf_md")
        // No salt is HKDF's zeros (RFC 5869, 2.2), the same as an empty one; libcrypto refuses a
        // null salt pointer, which an empty Swift array may lend, so an empty salt is not set.
        if !salt.isEmpty {
            try check(salt.withUnsafeBufferPointer { EVP_PKEY_CTX_set1_hkdf_salt(context, $0.baseAddress, Int32($0.count)) }, "EVP_PKEY_CTX_set1_hkdf_salt")
        }
        // An empty key (an empty passphrase) is lent through a non-null pointer: libcrypto takes a
        // null one for no key at all.
        let none: UInt8 = 0
        let setKey = withUnsafePointer(to: none) { placeholder in
            EVP_PKEY_CTX_set1_hkdf_key(context, key.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? placeholder, Int32(key.count))
        }
        try check(setKey, "EVP_PKEY_CTX_set1_hkdf_key")
        try check(info.withUnsafeBufferPointer { EVP_PKEY_CTX_add1_hkdf_info(context, $0.baseAddress, Int32($0.count)) }, "EVP_PKEY_CTX_add1_hkdf_info")
        try check(output.withUnsafeMutableBufferPointer { EVP_PKEY_derive(context, $0.baseAddress, &length) }, "EVP_PKEY_derive")
        guard length == count else { throw LibCryptoError(call: "EVP_PKEY_derive", reason: "\(length) bytes derived, not \(count)") }
        return output
    }
}

/// 32 secret bytes, wiped when their owner lets them go. Immutable once made, so it may cross
/// threads (`@unchecked Sendable`: its pointer is never written after `init`).
final class SecretBytes: @unchecked Sendable {
    private let bytes: UnsafeMutableRawBufferPointer

    init(_ source: UnsafeRawBufferPointer) {
        bytes = .allocate(byteCount: source.count, alignment: 16)
        bytes.copyMemory(from: source)
    }

    deinit {
        OPENSSL_cleanse(bytes.baseAddress, bytes.count)
        bytes.deallocate()
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(bytes))
    }
}

/// One AES-256-GCM key with its cipher contexts: each keyed once (the key schedule and GHASH's
/// tables are made then) and lent to one caller at a time, so a value costs only its own work.
final class AESGCMKey: Sendable {
    static let nonceLength = 12, tagLength = 16

    private let key: SecretBytes
    private let sealers = CipherContexts()
    private let openers = CipherContexts()

    init(_ key: SecretBytes) { self.key = key }

    /// Appends `plaintext` sealed under `nonce` (12 bytes) with `aad` authenticated: the
    /// ciphertext, then the 16-byte tag. Encrypts in place in `output`, nothing else allocated.
    func seal(_ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
              appendingTo output: inout [UInt8]) throws {
        try Self.checkLengths(plaintext.count, aad.count)
        let start = output.count
        output.append(contentsOf: plaintext)
        output.append(contentsOf: repeatElement(0, count: Self.tagLength))
        do {
            try sealers.withContext(keyedBy: key, encrypting: true) { context in
                try check(EVP_EncryptInit_ex(context, nil, nil, nil, nonce.baseAddress?.assumingMemoryBound(to: UInt8.self)), "EVP_EncryptInit_ex(nonce)")
                var written: Int32 = 0
                try check(EVP_EncryptUpdate(context, nil, &written, aad.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(aad.count)),
                          "EVP_EncryptUpdate(aad)")
                try output.withUnsafeMutableBytes { out in
                    let text = out.baseAddress!.advanced(by: start).assumingMemoryBound(to: UInt8.self)
                    try check(EVP_EncryptUpdate(context, text, &written, text, Int32(plaintext.count)), "EVP_EncryptUpdate")
                    var last: Int32 = 0
                    try check(EVP_EncryptFinal_ex(context, text + Int(written), &last), "EVP_EncryptFinal_ex")
                    try check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagLength), text + plaintext.count), "EVP_CTRL_GCM_GET_TAG")
                }
            }
        } catch {
            output.removeLast(output.count - start)
            throw error
        }
    }

    /// Appends the plaintext `sealed` (ciphertext, then the tag) holds and returns `true`; returns
    /// `false` with `output` as it was when the tag does not authenticate it under `nonce` and
    /// `aad` (altered, moved, or sealed under another key).
    func open(_ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
              appendingTo output: inout [UInt8]) throws -> Bool {
        precondition(sealed.count >= Self.tagLength, "a sealed value holds its tag")
        try Self.checkLengths(sealed.count, aad.count)
        let start = output.count, textLength = sealed.count - Self.tagLength
        output.append(contentsOf: UnsafeRawBufferPointer(rebasing: sealed[..<textLength]))
        var tag = (UInt64(0), UInt64(0))
        withUnsafeMutableBytes(of: &tag) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: sealed[textLength...])) }
        let authentic: Bool
        do {
            authentic = try openers.withContext(keyedBy: key, encrypting: false) { context -> Bool in
                try check(EVP_DecryptInit_ex(context, nil, nil, nil, nonce.baseAddress?.assumingMemoryBound(to: UInt8.self)), "EVP_DecryptInit_ex(nonce)")
                var written: Int32 = 0
                try check(EVP_DecryptUpdate(context, nil, &written, aad.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(aad.count)),
                          "EVP_DecryptUpdate(aad)")
                return try output.withUnsafeMutableBytes { out -> Bool in
                    let text = out.baseAddress!.advanced(by: start).assumingMemoryBound(to: UInt8.self)
                    try check(EVP_DecryptUpdate(context, text, &written, text, Int32(textLength)), "EVP_DecryptUpdate")
                    try check(withUnsafeMutableBytes(of: &tag) { EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagLength), $0.baseAddress) },
                              "EVP_CTRL_GCM_SET_TAG")
                    var last: Int32 = 0
                    // Fails exactly when the tag does not authenticate the ciphertext and the aad.
                    guard EVP_DecryptFinal_ex(context, text + Int(written), &last) == 1 else {
                        ERR_clear_error()
                        return false
                    }
                    return true
                }
            }
        } catch {
            output.removeLast(output.count - start)
            throw error
        }
        // The plaintext of a forgery is never handed on.
        if !authentic { output.removeLast(output.count - start) }
        return authentic
    }
}

extension AESGCMKey {
    /// libcrypto counts the bytes of one call in an `Int32`: longer text or authenticated data
    /// is refused, never truncated.
    static func checkLengths(_ text: Int, _ aad: Int) throws {
        guard text <= Int(Int32.max) - tagLength, aad <= Int(Int32.max) else {
            throw LibCryptoError(call: "AES-256-GCM", reason: "\(text) bytes of text and \(aad) of authenticated data: libcrypto takes at most 2 GiB in one call")
        }
    }
}

/// A pool of cipher contexts of one key and direction: ``withContext(keyedBy:encrypting:_:)``
/// lends one, keyed when made (``ContextPool``).
final class CipherContexts: Sendable {
    private final class Context: @unchecked Sendable {
        let pointer: OpaquePointer
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
        deinit { EVP_CIPHER_CTX_free(pointer) }
    }

    private let pool = ContextPool<Context>()

    func withContext<T>(keyedBy key: SecretBytes, encrypting: Bool,
                        _ body: (OpaquePointer) throws -> T) throws -> T {
        try pool.withContext(make: { try Self.make(key, encrypting: encrypting) }) { try body($0.pointer) }
    }

    private static func make(_ key: SecretBytes, encrypting: Bool) throws -> Context {
        guard let pointer = EVP_CIPHER_CTX_new() else { throw LibCryptoError(call: "EVP_CIPHER_CTX_new", reason: LibCrypto.takeErrors()) }
        let context = Context(pointer)
        try key.withUnsafeBytes { key in
            let bytes = key.baseAddress?.assumingMemoryBound(to: UInt8.self)
            if encrypting {
                try check(EVP_EncryptInit_ex(pointer, EVP_aes_256_gcm(), nil, bytes, nil), "EVP_EncryptInit_ex(aes-256-gcm)")
            } else {
                try check(EVP_DecryptInit_ex(pointer, EVP_aes_256_gcm(), nil, bytes, nil), "EVP_DecryptInit_ex(aes-256-gcm)")
            }
        }
        return context
    }
}
