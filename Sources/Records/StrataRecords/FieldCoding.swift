import Foundation

/// A value that can be a record field: stored in a compact binary form (not ordered; fields are
/// never compared by bytes). The standard types are built in (RecordFormat.md); a `Codable` type
/// that is not one is stored as JSON when its field says `@Field(.json)`.
///
/// Conforming a type of your own gives it a binary format of your own: name it in
/// ``fieldFormat`` (the default, `custom(TypeName)`, changes when the type is renamed, and with
/// it the record's default schema version).
public protocol FieldValue {
    /// The format's descriptor, stored in the catalog and hashed into the default schema version.
    static var fieldFormat: FieldFormat { get }
    /// Appends the value's bytes in the type's format (``FieldValue/fieldFormat``). It cannot fail, so
    /// every value of the type must have bytes in the format (a ``FieldCodec`` may refuse values).
    func encode(to fields: inout FieldWriter)
    /// Reads one value written by ``FieldValue/encode(to:)``, leaving `fields` after its last byte.
    ///
    /// - Throws: ``FieldDecodingError`` for bytes that are not a value of the format (truncated,
    ///   malformed, out of range): reading the record then throws
    ///   ``RecordError/corruptRecord(type:detail:)``. Never trap on bad bytes.
    static func decode(from fields: inout FieldReader) throws(FieldDecodingError) -> Self
}

extension FieldValue {
    /// `custom(TypeName)`, with the type's name as Swift prints it: renaming the type changes the
    /// format, and with it the record's default schema version. Implement it to name a format that stays put.
    public static var fieldFormat: FieldFormat { FieldFormat("custom(\(Self.self))") }
}

/// Writes a record's fields, one after another.
public struct FieldWriter: Sendable {
    /// The bytes written so far, in order: the encoded fields.
    public var bytes: [UInt8] = []

    /// An empty writer.
    @inlinable
    public init() {}

    /// Appends a field.
    @inlinable
    public mutating func write<V: FieldValue>(_ value: V) { value.encode(to: &self) }

    /// Appends a field as length-prefixed JSON (format `json`), whatever conformances `V` has.
    public mutating func writeJSON<V: Encodable>(_ value: V) {
        do {
            let json = try JSONEncoder().encode(JSONBox(value))
            writeVarint(UInt64(json.count))
            bytes.append(contentsOf: json)
        } catch {
            // JSONEncoder refuses some values (a NaN Double, for one). Remember why: `insert`
            // refuses the record rather than store a field that cannot be read back.
            if encodingFailure == nil { encodingFailure = "cannot encode a \(V.self) field as JSON: \(error)" }
        }
    }

    /// Appends a field through `codec`.
    public mutating func write<C: FieldCodec>(_ value: C.Value, codec: C.Type) {
        do {
            try C.encode(value, to: &self)
        } catch {
            if encodingFailure == nil { encodingFailure = "cannot encode a field with \(C.self): \(error)" }
        }
    }

    /// Why a field could not be encoded, if one could not (until ``removeAll()``).
    public var failure: String? { encodingFailure }
    @usableFromInline var encodingFailure: String?

    /// Appends `value` as an unsigned LEB128 varint (RecordFormat.md, "varint"): 7 bits a byte, least
    /// significant first, 1 to 10 bytes.
    @inlinable
    public mutating func writeVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// Appends `content` after its byte count as a varint: the `bytes` format, read back by
    /// ``FieldReader/readBytes()``.
    @inlinable
    public mutating func writeBytes<C: Collection<UInt8>>(_ content: C) {
        writeVarint(UInt64(content.count))
        writeRaw(content)
    }

    /// Appends `content` as it is, with no length: the reader must know how many bytes to take
    /// (``FieldReader/readRaw(_:)``).
    @inlinable
    public mutating func writeRaw<C: Sequence<UInt8>>(_ content: C) {
        // Contiguous bytes are appended from their storage: appending an array itself first
        // copies it, an atomic reference count each way.
        if content.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil { bytes.append(contentsOf: content) }
    }

    /// Forgets the bytes written and any ``failure``, keeping the buffer (to encode many records
    /// without allocating).
    @inlinable
    public mutating func removeAll() { restart(after: 0) }

    /// Keeps the first `count` bytes (a record's key, when key and value are encoded into one
    /// buffer) and forgets the rest and any ``failure``.
    @inlinable
    mutating func restart(after count: Int) {
        if bytes.count > count { bytes.removeSubrange(count...) }
        if encodingFailure != nil { encodingFailure = nil }
    }

    /// Appends a record's checksum: 4 bytes, little-endian.
    @inlinable
    mutating func writeChecksum(_ checksum: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: checksum >> UInt32(shift))) }
    }
}

/// Reads a record's fields in the order they were written. Never traps on bad bytes.
public struct FieldReader {
    /// The bytes being read. Not copied or owned: they must stay valid while the reader is used.
    public let bytes: UnsafeRawBufferPointer
    /// The offset in ``bytes`` of the next unread byte.
    public var offset: Int

    /// Reads `bytes` from `offset` on, without copying them: they must outlive the reader.
    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset == bytes.count }

    /// Reads one field.
    @inlinable
    public mutating func read<V: FieldValue>(_: V.Type = V.self) throws(FieldDecodingError) -> V { try V.decode(from: &self) }

    /// Reads a field written by ``FieldWriter/writeJSON(_:)``.
    public mutating func readJSON<V: Decodable>(_: V.Type = V.self) throws(FieldDecodingError) -> V {
        let start = offset
        let json = try readBytes()
        do {
            return try JSONDecoder().decode(JSONBox<V>.self, from: Data(json)).value
        } catch {
            throw FieldDecodingError(offset: start, reason: "cannot decode \(V.self) from JSON: \(error)")
        }
    }

    /// Reads a field written through `codec`.
    @inlinable
    public mutating func read<C: FieldCodec>(codec: C.Type) throws(FieldDecodingError) -> C.Value { try C.decode(from: &self) }

    /// Reads an unsigned LEB128 varint, as ``FieldWriter/writeVarint(_:)`` writes it.
    ///
    /// - Throws: ``FieldDecodingError`` when the bytes end inside it, or it holds more than 64 bits.
    @inlinable
    public mutating func readVarint() throws(FieldDecodingError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        let start = offset
        while true {
            guard offset < bytes.count else { throw FieldDecodingError(offset: start, reason: "truncated integer") }
            let byte = bytes[offset]
            offset += 1
            guard shift < 64, shift < 63 || byte <= 1 else { throw FieldDecodingError(offset: start, reason: "integer too long") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    /// The next `count` bytes as they are, without copying: valid as long as ``bytes`` is.
    ///
    /// - Throws: ``FieldDecodingError`` when fewer than `count` bytes are left (or `count` is negative).
    @inlinable
    public mutating func readRaw(_ count: Int) throws(FieldDecodingError) -> UnsafeRawBufferPointer {
        guard count >= 0, count <= bytes.count - offset else {
            throw FieldDecodingError(offset: offset, reason: "truncated: needs \(count) bytes, \(bytes.count - offset) left")
        }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }

    /// Reads a byte count and that many bytes (the `bytes` format, as ``FieldWriter/writeBytes(_:)``
    /// writes it), without copying them: valid as long as ``bytes`` is.
    ///
    /// - Throws: ``FieldDecodingError`` when the count is malformed or runs past the end of the value.
    @inlinable
    public mutating func readBytes() throws(FieldDecodingError) -> UnsafeRawBufferPointer {
        let start = offset
        let length = try readVarint()
        guard length <= UInt64(bytes.count - offset) else {
            throw FieldDecodingError(offset: start, reason: "length \(length) runs past the end of the value")
        }
        return try readRaw(Int(length))
    }

    /// Throws unless every byte was read.
    @inlinable
    public func finish() throws(FieldDecodingError) {
        if !isAtEnd { throw FieldDecodingError(offset: offset, reason: "\(bytes.count - offset) bytes after the last field") }
    }
}

/// Bytes that are not a valid field encoding.
public struct FieldDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The byte offset, in the bytes read, at which decoding failed (usually where the bad field or
    /// length starts).
    public let offset: Int
    /// What is wrong there, for messages (`truncated integer`, `string bytes are not UTF-8`).
    public let reason: String
    /// An error at byte `offset`; for the decoders of your own ``FieldValue`` and ``FieldCodec`` types.
    @inlinable
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }
    public var description: String { "field decoding failed at byte \(offset): \(reason)" }
}

/// JSON needs a top-level container for scalars: `{"value":…}` (RecordFormat.md, `json`).
private struct JSONBox<V> {
    let value: V
    init(_ value: V) { self.value = value }
}

extension JSONBox: Encodable where V: Encodable {}
extension JSONBox: Decodable where V: Decodable {}
