import CZstd
import Foundation
import StrataRecords

/// A zstd dictionary: what values of one kind have in common, given to ``RecordCompression`` so
/// that each value need not carry it. Short values, which compress poorly alone, gain most (with a
/// dictionary, values from 16 bytes on are compressed, not from 64).
///
/// Train one from a sample of a store's records (``train(from:keyspace:samples:size:)``), keep
/// its ``bytes`` with your application (as you would a schema), and make the transform with it:
/// every later open needs the same dictionary, as the store's manifest names its ``id``.
public struct ZstdDictionary: Sendable, Hashable {
    /// The dictionary, in zstd's format (RFC 8878, "Dictionary Format").
    public let bytes: [UInt8]
    /// The identifier zstd wrote into the dictionary, and into each frame made with it.
    public let id: UInt32

    /// The dictionary `bytes` hold; refuses bytes that are not a zstd dictionary with an
    /// identifier (raw content, another file) and a dictionary zstd cannot load (truncated,
    /// damaged tables).
    public init(bytes: [UInt8]) throws(ZstdDictionaryError) {
        let id = bytes.withUnsafeBytes { ZDICT_getDictID($0.baseAddress, $0.count) }
        guard id != 0 else { throw .notADictionary(bytes.count) }
        // The header names an identifier; only loading the tables shows they are whole.
        let loads = bytes.withUnsafeBytes { raw in
            let tables = (ZSTD_createCDict(raw.baseAddress, raw.count, 3), ZSTD_createDDict(raw.baseAddress, raw.count))
            defer {
                ZSTD_freeCDict(tables.0)
                ZSTD_freeDDict(tables.1)
            }
            return tables.0 != nil && tables.1 != nil
        }
        guard loads else { throw .damaged(id: id, bytes.count) }
        (self.bytes, self.id) = (bytes, id)
    }

    /// A dictionary of at most `size` bytes trained on `samples` (each one value's fields). zstd
    /// needs a few hundred samples, and about a hundred times `size` in all, to train well.
    public static func train(samples: [[UInt8]], size: Int = 16 * 1024) throws(ZstdDictionaryError) -> ZstdDictionary {
        let joined = samples.flatMap { $0 }
        var sizes = samples.map(\.count)
        var dictionary = [UInt8](repeating: 0, count: size)
        let made = dictionary.withUnsafeMutableBytes { out in
            joined.withUnsafeBytes { ZDICT_trainFromBuffer(out.baseAddress, size, $0.baseAddress, &sizes, UInt32(samples.count)) }
        }
        guard ZDICT_isError(made) == 0 else {
            throw .trainingFailed(String(cString: ZDICT_getErrorName(made)) + " (\(samples.count) samples, \(joined.count) bytes)")
        }
        return try ZstdDictionary(bytes: Array(dictionary.prefix(made)))
    }

    /// A dictionary of at most `size` bytes trained on the fields of up to `samples` records of
    /// `store` drawn at random (all of them, or those of `keyspace`), as the records wrote them
    /// (`Store.fieldSamples(keyspace:limit:)`).
    public static func train(from store: Store, keyspace: String? = nil, samples: Int = 1_000, size: Int = 16 * 1024) throws -> ZstdDictionary {
        try train(samples: try store.fieldSamples(keyspace: keyspace, limit: samples), size: size)
    }

    /// The identifier as eight hexadecimal digits, as the transform's name shows it.
    public var idDescription: String { Self.describe(id) }

    static func describe(_ id: UInt32) -> String { String(format: "%08x", id) }
}

/// Why a ``ZstdDictionary`` could not be made.
public enum ZstdDictionaryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes are not a zstd dictionary with an identifier.
    case notADictionary(Int)
    /// zstd could not train a dictionary on the samples (too few, or too small).
    case trainingFailed(String)
    /// A dictionary's header names an identifier, but zstd cannot load its tables (truncated, or damaged).
    case damaged(id: UInt32, Int)

    public var description: String {
        switch self {
        case let .notADictionary(count): return "\(count) bytes that are not a zstd dictionary with an identifier"
        case let .trainingFailed(reason): return "zstd could not train a dictionary: \(reason)"
        case let .damaged(id, count): return "\(count) bytes of zstd dictionary \(ZstdDictionary.describe(id)) that zstd cannot load (truncated or damaged)"
        }
    }
}

/// A dictionary digested for one level: its compression and decompression tables made once,
/// freed with their owner. Immutable once made and only read by zstd, so it may cross threads.
final class DigestedDictionary: @unchecked Sendable {
    let compressing: OpaquePointer
    let decompressing: OpaquePointer

    init(_ dictionary: ZstdDictionary, level: Int32) {
        let made = dictionary.bytes.withUnsafeBytes { bytes in
            (ZSTD_createCDict(bytes.baseAddress, bytes.count, level), ZSTD_createDDict(bytes.baseAddress, bytes.count))
        }
        // ZstdDictionary(bytes:) loaded these tables once: failing now is being out of memory for
        // a few hundred kilobytes, with nothing sensible left to do.
        guard let compressing = made.0, let decompressing = made.1 else { preconditionFailure("zstd could not digest a dictionary") }
        (self.compressing, self.decompressing) = (compressing, decompressing)
    }

    deinit {
        ZSTD_freeCDict(compressing)
        ZSTD_freeDDict(decompressing)
    }
}
