import StrataEngine

/// The one owner of a record's stored value (RecordFormat.md, "Record values"):
///
///     varint(schema version) ‖ T(fields) ‖ CRC-32C(key ‖ everything before it), 4 bytes little-endian
///
/// `T` is the store's chain of value transforms (``ValueTransform``), named in its manifest, so a
/// store never opens without the transforms it was written with. Without one `T(fields)` is the
/// fields as ``Record/writeFields(to:)`` wrote them, and reads lend the engine's bytes as they
/// are. The checksum covers the stored bytes, so a damaged value is refused before a transform or
/// a decoder sees it.
///
/// Inserts seal through ``seal(_:fieldsStart:)``; every reader opens through ``open(key:value:)``
/// and ``withFields(_:key:scratch:_:)``: typed reads, record views, index reads (a covering
/// entry holds the record's sealed value), the inspection tools and the previous generations of
/// changed index definitions.
@usableFromInline
struct RecordEnvelope: Sendable {
    /// The transforms applied to a record's fields, in order (reversed on reads in reverse order).
    @usableFromInline let transforms: [any ValueTransform]
    /// Whether the chain is empty: the stored fields are the record's own.
    @usableFromInline let isPlain: Bool

    /// The envelope of a store without transforms.
    static let plain = RecordEnvelope([])

    init(_ transforms: [any ValueTransform]) {
        self.transforms = transforms
        isPlain = transforms.isEmpty
    }

    /// The chain's names, as the manifest stores them.
    var names: [String] { transforms.map(\.name) }

    /// Why a stored value cannot be opened, for a record error's detail.
    @usableFromInline
    struct Damage: Error {
        @usableFromInline enum Kind: Sendable { case checksum, version, transform }
        @usableFromInline let kind: Kind
        @usableFromInline let detail: String
        /// For `.transform`: the transform that refused the bytes, and why.
        @usableFromInline let refusal: (transform: String, error: ValueTransformError)?
        @inlinable init(_ kind: Kind, _ detail: String) {
            self.kind = kind
            self.detail = detail
            refusal = nil
        }
        init(refusedBy transform: String, _ error: ValueTransformError) {
            kind = .transform
            detail = "value: transform \(transform): \(error)"
            refusal = (transform, error)
        }

        /// The error a typed read throws for this damage to a record of type `type` at `key`.
        @usableFromInline
        func recordError(type: String, key: UnsafeRawBufferPointer) -> RecordError {
            guard let refusal else { return .corruptRecord(type: type, detail: detail) }
            return .valueRefused(type: type, key: StoreProblem.describe(Array(key)), transform: refusal.transform, reason: refusal.error)
        }
    }

    /// A stored value whose checksum matched: its schema version and its fields as stored
    /// (`body` from `fieldsOffset` on, transformed when the chain is not empty).
    @usableFromInline
    struct Sealed {
        @usableFromInline let version: UInt32
        /// The value without its checksum.
        @usableFromInline let body: UnsafeRawBufferPointer
        /// Where in `body` the fields start (after the version).
        @usableFromInline let fieldsOffset: Int
        @inlinable init(version: UInt32, body: UnsafeRawBufferPointer, fieldsOffset: Int) {
            (self.version, self.body, self.fieldsOffset) = (version, body, fieldsOffset)
        }
        /// The stored fields.
        @inlinable var fields: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: body[fieldsOffset...]) }
    }

    /// Seals the value `buffer` holds after the record's key: the key's bytes, then the version,
    /// then the fields from `fieldsStart` on. Transforms the fields (everything before them is
    /// their header) and appends the checksum over key and value (without transforms, one pass
    /// over the buffer).
    @inlinable
    func seal(_ buffer: inout FieldWriter, fieldsStart: Int) throws {
        if !isPlain { try transform(&buffer.bytes, fieldsStart: fieldsStart) }
        buffer.writeChecksum(buffer.bytes.withUnsafeBytes { RecordChecksum.extend(0, $0) })
    }

    /// Runs the chain over `bytes[fieldsStart...]` in place, `bytes[..<fieldsStart]` as the header.
    @usableFromInline
    func transform(_ bytes: inout [UInt8], fieldsStart: Int) throws {
        var input = Array(bytes[fieldsStart...])
        var output: [UInt8] = []
        for transform in transforms {
            output.removeAll(keepingCapacity: true)
            try bytes.withUnsafeBytes { all in
                try input.withUnsafeBytes { try transform.apply($0, header: UnsafeRawBufferPointer(rebasing: all[..<fieldsStart]), to: &output) }
            }
            swap(&input, &output)
        }
        bytes.replaceSubrange(fieldsStart..., with: input)
    }

    /// Checks a stored value's checksum against `key` and reads its schema version; damaged,
    /// truncated and foreign values throw, naming what is wrong.
    @inlinable @inline(__always)
    static func open(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(Damage) -> Sealed {
        let body: UnsafeRawBufferPointer
        do throws(RecordChecksum.Mismatch) {
            body = try RecordChecksum.body(ofKey: key, value: value)
        } catch {
            throw Damage(.checksum, error.detail)
        }
        // The version, a varint of at most five bytes, read in line: through the field reader
        // (and its error paths) it cost 60 instructions of every record read.
        var version: UInt32 = 0
        for offset in 0..<min(body.count, 5) {
            let byte = body[offset]
            version |= UInt32(truncatingIfNeeded: byte & 0x7F) << UInt32(7 * offset)
            if byte & 0x80 == 0 {
                if offset == 4 && byte > 0x0F { break }  // over 32 bits: the reader below says why
                return Sealed(version: version, body: body, fieldsOffset: offset + 1)
            }
        }
        return try openSlowly(body)
    }

    /// The version of a value the fast path refused, or the error that says why it is bad.
    @usableFromInline
    static func openSlowly(_ body: UnsafeRawBufferPointer) throws(Damage) -> Sealed {
        var reader = FieldReader(body)
        let version: UInt64
        do {
            version = try reader.readVarint()
        } catch {
            throw Damage(.version, "value: \(error)")
        }
        guard let stored = UInt32(exactly: version) else {
            throw Damage(.version, "value: schema version \(version) is not a 32-bit number")
        }
        return Sealed(version: stored, body: body, fieldsOffset: reader.offset)
    }

    /// The schema version at the start of a stored value, without checking its checksum: a
    /// glance for a pass that picks the records it reads (which ``open(key:value:)`` then checks).
    static func peekVersion(_ value: UnsafeRawBufferPointer) -> UInt32? {
        var reader = FieldReader(value)
        return (try? reader.readVarint()).flatMap { UInt32(exactly: $0) }
    }

    /// Lends `sealed`'s fields as the record wrote them to `body`, with the offset they start at:
    /// the stored bytes themselves without transforms, else the chain's reversal into `scratch`.
    /// A transform that refuses the bytes throws ``Damage``.
    @inlinable
    func withFields<T>(_ sealed: Sealed, key: UnsafeRawBufferPointer, scratch: inout [UInt8],
                       _ body: (_ bytes: UnsafeRawBufferPointer, _ offset: Int) throws -> T) throws -> T {
        if isPlain { return try body(sealed.body, sealed.fieldsOffset) }
        // The header the transforms were given: the key, then the version as stored.
        var header: [UInt8] = []
        header.reserveCapacity(key.count + sealed.fieldsOffset)
        header.append(contentsOf: key)
        header.append(contentsOf: UnsafeRawBufferPointer(rebasing: sealed.body[..<sealed.fieldsOffset]))
        try header.withUnsafeBytes { try reverse(sealed.fields, header: $0, into: &scratch) }
        return try scratch.withUnsafeBytes { try body($0, 0) }
    }

    /// The stored value of the record at `key` sealed again by `sealer`: opened with this chain
    /// (its checksum checked, its fields reversed), sealed with the other's, its checksum
    /// recomputed. Throws ``Damage`` for a value this chain cannot open.
    func reseal(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, with sealer: RecordEnvelope,
                scratch: inout [UInt8]) throws -> [UInt8] {
        let sealed = try Self.open(key: key, value: value)
        return try withFields(sealed, key: key, scratch: &scratch) { fields, offset in
            var buffer = FieldWriter()
            buffer.bytes.reserveCapacity(key.count + value.count + 64)
            buffer.bytes.append(contentsOf: key)
            buffer.bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: sealed.body[..<sealed.fieldsOffset]))
            let fieldsStart = buffer.bytes.count
            buffer.bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: fields[offset...]))
            try sealer.seal(&buffer, fieldsStart: fieldsStart)
            return Array(buffer.bytes[key.count...])
        }
    }

    /// The schema version and the fields (as the record wrote them) a stored value of the record
    /// at `key` holds; `nil` when it cannot be opened (damaged, or refused by a transform).
    func contents(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> (version: UInt32, fields: [UInt8])? {
        guard let sealed = try? Self.open(key: key, value: value) else { return nil }
        var scratch: [UInt8] = []
        return try? withFields(sealed, key: key, scratch: &scratch) { bytes, offset in (sealed.version, Array(bytes[offset...])) }
    }

    /// How many bytes the stored value of the record at `key` would take without the chain (its
    /// fields as the record wrote them, with the same checksum and version); `nil` when it cannot
    /// be opened. What statistics set against the stored bytes.
    func plainLength(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Int? {
        guard let sealed = try? Self.open(key: key, value: value) else { return nil }
        var scratch: [UInt8] = []
        return try? withFields(sealed, key: key, scratch: &scratch) { bytes, offset in value.count - sealed.fields.count + bytes.count - offset }
    }

    /// Whether two stored values of the record at `key`, whose bytes differ, hold the same version
    /// and fields: a covering entry sealed before a key rotation re-sealed its record (a cipher's
    /// random nonce makes every sealing's bytes new), until the rotation reaches the entry. Without
    /// transforms the bytes are the contents.
    func sameContents(key: UnsafeRawBufferPointer, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard !isPlain, let first = contents(key: key, value: a), let second = contents(key: key, value: b) else { return false }
        return first == second
    }

    /// The chain's reversal of `stored` (whose header is `header`: key and version) into `output`.
    @usableFromInline
    func reverse(_ stored: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, into output: inout [UInt8]) throws(Damage) {
        // The last transform reads the stored bytes where they lie; each one before it reads what
        // the one after it made (two buffers, swapped), so a chain of one copies nothing first.
        output.removeAll(keepingCapacity: true)
        let last = transforms[transforms.count - 1]
        do {
            try last.reverse(stored, header: header, to: &output)
        } catch {
            throw Self.refusal(by: last, error)
        }
        var input: [UInt8] = []
        for transform in transforms.dropLast().reversed() {
            swap(&input, &output)
            output.removeAll(keepingCapacity: true)
            do {
                try input.withUnsafeBytes { try transform.reverse($0, header: header, to: &output) }
            } catch {
                throw Self.refusal(by: transform, error)
            }
        }
    }

    /// The damage `error`, thrown by `transform`'s reversal, reports.
    static func refusal(by transform: any ValueTransform, _ error: any Error) -> Damage {
        Damage(refusedBy: transform.name, error as? ValueTransformError ?? ValueTransformError(.malformed, "\(error)"))
    }
}
