import CZstd
import StrataRecords

/// Compression of every record value at rest with zstd (the system's libzstd), a
/// `ValueTransform` of the record layer, so it works the same on every engine.
///
/// ```swift
/// let store = try Store(.lmdb(path: path), transforms: [RecordCompression()])
/// // Compressed, then encrypted (compressing ciphertext would gain nothing):
/// let sealed = try Store(.lmdb(path: other), transforms: [RecordCompression(), RecordEncryption(key: key)])
/// ```
///
/// Each value starts with one flag byte (RecordFormat.md, "Compressed values"): `00` and the
/// fields as they are, for values too short to gain or that zstd does not shrink; `01` and a zstd
/// frame (which records the fields' length) otherwise; `02` and a frame made with the
/// ``dictionary``, when there is one. The level changes only how hard writes work: every level
/// reads every other's values, so it is not part of the ``name``; the dictionary is.
public struct RecordCompression: ValueTransform {
    /// The level new values are compressed at (zstd's: 1 fastest, 19 smallest; 3 by default).
    public let level: Int32
    /// Values of fewer bytes than this are stored as they are.
    public let minimumLength: Int
    /// The dictionary new values are compressed with, if any.
    public let dictionary: ZstdDictionary?
    private let digested: DigestedDictionary?
    /// The largest fields a zstd frame may declare (a frame that claims more is refused, unread,
    /// so a damaged or forged length cannot make a read allocate without bound): 64 MiB. Longer
    /// fields are stored as they are, never compressed, so every value written stays readable.
    public static let maximumFieldsLength = 64 << 20

    static let compressors = ZstdContexts(compressing: true)
    static let decompressors = ZstdContexts(compressing: false)

    /// Compression at zstd level `level` of values of at least `minimumLength` bytes (by
    /// default 64, or 16 with a dictionary, which makes short values gain), with `dictionary` if
    /// one is given (``ZstdDictionary/train(from:keyspace:samples:size:)``).
    public init(level: Int32 = 3, minimumLength: Int? = nil, dictionary: ZstdDictionary? = nil) {
        self.level = level
        self.minimumLength = minimumLength ?? (dictionary == nil ? 64 : 16)
        self.dictionary = dictionary
        digested = dictionary.map { DigestedDictionary($0, level: level) }
    }

    /// `zstd`, or `zstd dictionary <identifier>` with a ``dictionary``: a store written with
    /// one opens only with it.
    public var name: String { dictionary.map { "zstd dictionary \($0.idDescription)" } ?? "zstd" }

    /// Its own name, and with a dictionary also `zstd`: the values of a store compressed without
    /// one are read as they are, so opening that store with a dictionary begins a rotation
    /// (`Store.rotateKeys(batchSize:onBatch:)` compresses every value again, with it).
    public func reads(valuesNamed storedName: String) throws -> Bool {
        storedName == name || storedName == "zstd"
    }

    /// Appends `00 ‖ fields`, or `01 ‖ zstd frame` (`02` with the dictionary) when that is shorter.
    public func apply(_ fields: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) throws {
        let start = output.count
        if fields.count >= minimumLength && fields.count <= Self.maximumFieldsLength {
            let bound = ZSTD_compressBound(fields.count)
            output.append(digested == nil ? 1 : 2)
            output.append(contentsOf: [UInt8](repeating: 0, count: bound))  // one memset (a repeatElement appends byte by byte)
            let written = Self.compressors.withContext { context in
                output.withUnsafeMutableBytes { out in
                    let frame = out.baseAddress! + start + 1
                    if let digested {
                        return ZSTD_compress_usingCDict(context.compressor, frame, bound, fields.baseAddress, fields.count, digested.compressing)
                    }
                    return ZSTD_compressCCtx(context.compressor, frame, bound, fields.baseAddress, fields.count, level)
                }
            }
            if zstdError(written) == nil && written < fields.count {
                output.removeLast(bound - written)
                return
            }
            output.removeLast(output.count - start)  // an error or no gain: stored as it is
        }
        output.append(0)
        output.append(contentsOf: fields)
    }

    /// Appends the fields `stored` holds; refuses an unknown flag, a frame zstd cannot read, a
    /// frame made with a dictionary this transform does not hold, and a frame whose fields would
    /// be larger than ``maximumFieldsLength``.
    public func reverse(_ stored: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) throws {
        guard let flag = stored.first else { throw ValueTransformError(.malformed, "an empty value, without its flag byte") }
        let body = UnsafeRawBufferPointer(rebasing: stored[1...])
        switch flag {
        case 0:
            output.append(contentsOf: body)
        case 1:
            try Self.decompress(body, with: nil, to: &output)
        case 2:
            let needed = ZSTD_getDictID_fromFrame(body.baseAddress, body.count)
            guard needed != 0 else {
                throw ValueTransformError(.malformed, "flag 2 (zstd with a dictionary) before bytes that are not a zstd frame naming its dictionary")
            }
            guard let digested, let dictionary, needed == dictionary.id else {
                throw ValueTransformError(.missingKey, "a zstd frame made with dictionary \(ZstdDictionary.describe(needed)), "
                                          + (dictionary.map { "not with this transform's \($0.idDescription)" } ?? "and this transform has none"))
            }
            try Self.decompress(body, with: digested, to: &output)
        default:
            throw ValueTransformError(.malformed, "flag byte \(flag), neither 0 (stored as is), 1 (zstd) nor 2 (zstd with a dictionary)")
        }
    }

    /// Appends the fields the zstd frame `body` holds, decompressed with `dictionary` if given.
    private static func decompress(_ body: UnsafeRawBufferPointer, with dictionary: DigestedDictionary?, to output: inout [UInt8]) throws {
        let declared = ZSTD_getFrameContentSize(body.baseAddress, body.count)
        guard declared != ZSTD_CONTENTSIZE_ERROR, declared != ZSTD_CONTENTSIZE_UNKNOWN else {
            throw ValueTransformError(.malformed, "a zstd frame whose fields' length cannot be read")
        }
        guard declared <= UInt64(maximumFieldsLength) else {
            throw ValueTransformError(.malformed, "a zstd frame declaring \(declared) bytes of fields, over the \(maximumFieldsLength) a value may hold")
        }
        let length = Int(declared)
        var read = 0
        // Straight into a new buffer (no zero-filling, no copy) when `output` is empty, as it
        // is for the last transform of a chain; after it otherwise.
        let fields = [UInt8](unsafeUninitializedCapacity: max(length, 1)) { buffer, initialized in
            read = decompressors.withContext { context in
                if let dictionary {
                    return ZSTD_decompress_usingDDict(context.decompressor, buffer.baseAddress, length, body.baseAddress, body.count,
                                                      dictionary.decompressing)
                }
                return ZSTD_decompressDCtx(context.decompressor, buffer.baseAddress, length, body.baseAddress, body.count)
            }
            initialized = zstdError(read) == nil && read == length ? length : 0
        }
        if let error = zstdError(read) { throw ValueTransformError(.malformed, "zstd: \(error)") }
        guard read == length else { throw ValueTransformError(.malformed, "a zstd frame declaring \(length) bytes of fields holds \(read)") }
        if output.isEmpty { output = fields } else { output.append(contentsOf: fields) }
    }
}
