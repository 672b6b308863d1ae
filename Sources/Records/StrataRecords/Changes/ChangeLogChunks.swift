import StrataEngine

extension RecordChange.Kind {
    /// The kind's byte in a change feed chunk (RecordFormat.md, "Change feed"): both directions
    /// are defined here, once.
    var code: UInt8 {
        switch self {
        case .insert: 0
        case .update: 1
        case .delete: 2
        }
    }

    /// The kind whose byte is `code`; `nil` for a byte no kind has.
    init?(code: UInt8) {
        switch code {
        case 0: self = .insert
        case 1: self = .update
        case 2: self = .delete
        default: return nil
        }
    }
}

/// One write transaction's changes for the change feed, encoded as they are made, straight into
/// the chunks' bytes: a change costs its key's bytes appended to a buffer, not a ``RecordChange``
/// (an array of its key, and a copy of it in the transaction's list). The chunks' headers, which
/// hold the transaction's change count, are written once it is known (``values(committedAt:writer:)``).
///
/// A chunk takes changes while their bytes fit its budget (at least one change), and lists the
/// keyspaces of its own changes, each once, as the format says.
@usableFromInline
struct ChangeLogChunks {
    /// One chunk: where its changes' bytes start in ``bytes``, its first change's position in the
    /// transaction, and its keyspaces.
    private struct Chunk {
        var start: Int
        var first: Int
        var keyspaces: [String] = []
    }

    /// The change feed's settings, as the transaction found them.
    let settings: ChangeLog.Settings
    /// The feed version the transaction's changes take.
    let version: UInt64
    /// The keys of the first chunks the feed's retention no longer keeps (at most
    /// ``ChangeLog/expiredAhead``), oldest first, as the transaction began.
    let expired: [[UInt8]]
    /// The bytes a chunk's changes and keyspace names may take.
    private let budget: Int
    /// Every chunk's changes, back to back.
    private var bytes = FieldWriter()
    private var chunks: [Chunk] = []
    /// The bytes of the last chunk (its changes and its keyspaces' names).
    private var chunkBytes = 0
    /// The record type last appended and its position in the last chunk's list (a transaction
    /// mostly writes one type: its name is neither fetched nor compared again).
    private var lastType: (type: ObjectIdentifier, position: Int)?
    /// The changes appended.
    private(set) var count = 0

    /// For a transaction of a store whose feed has `settings`, on an engine whose values may be
    /// `maxValueLength` bytes at most.
    init(settings: ChangeLog.Settings, version: UInt64, expired: [[UInt8]], maxValueLength: Int?) {
        (self.settings, self.version, self.expired) = (settings, version, expired)
        budget = min(ChangeLog.chunkBytes, maxValueLength.map { $0 / 2 } ?? .max)
    }

    /// Appends a change of the record of `type`, whose keyspace is `keyspace`, stored under `key`
    /// (its components, without the keyspace); returns where its kind byte is, for
    /// ``setKind(_:at:)``.
    @discardableResult @usableFromInline
    mutating func append(type: ObjectIdentifier, keyspace: @autoclosure () -> String, _ kind: RecordChange.Kind, key: UnsafeRawBufferPointer) -> Int {
        let size = key.count + 8  // the key, its length, the keyspace's position and the kind
        if let last = lastType, last.type == type, chunkBytes + size <= budget {
            return encode(position: last.position, kind, key: key, size: size)
        }
        let name = keyspace()
        var position = chunks.isEmpty ? nil : chunks[chunks.count - 1].keyspaces.firstIndex(of: name)
        if chunks.isEmpty || (chunks[chunks.count - 1].first < count && chunkBytes + size + (position == nil ? Self.cost(of: name) : 0) > budget) {
            chunks.append(Chunk(start: bytes.bytes.count, first: count))
            chunkBytes = 0
            position = nil
        }
        if position == nil {
            position = chunks[chunks.count - 1].keyspaces.count
            chunks[chunks.count - 1].keyspaces.append(name)
            chunkBytes += Self.cost(of: name)
        }
        lastType = (type, position!)
        return encode(position: position!, kind, key: key, size: size)
    }

    private mutating func encode(position: Int, _ kind: RecordChange.Kind, key: UnsafeRawBufferPointer, size: Int) -> Int {
        let kindOffset = Self.encodeChange(into: &bytes, keyspace: position, kind, key: key)
        chunkBytes += size
        count += 1
        return kindOffset
    }

    /// Rewrites the kind of the change whose kind byte ``append(type:keyspace:_:key:)`` put at
    /// `offset` (a kind told once the transaction's body returned: ``DeferredKinds``).
    mutating func setKind(_ kind: RecordChange.Kind, at offset: Int) {
        bytes.bytes[offset] = kind.code
    }

    /// About the bytes a keyspace's name takes in a chunk's list (its length is a varint: 2 bytes
    /// for names under 16 KiB).
    private static func cost(of keyspace: String) -> Int { keyspace.utf8.count + 2 }

    /// The chunks' keys and values.
    func values(committedAt: UInt64, writer: Int) -> [(key: [UInt8], value: [UInt8])] {
        chunks.indices.map { i in
            let chunk = chunks[i]
            let (end, next) = i + 1 < chunks.count ? (chunks[i + 1].start, chunks[i + 1].first) : (bytes.bytes.count, count)
            let key = ChangeLog.chunkKey(feed: settings.feed, version: version, first: chunk.first)
            return (key, Self.value(key: key, committedAt: committedAt, writer: writer, total: count, keyspaces: chunk.keyspaces,
                                    changes: next - chunk.first, encoded: bytes.bytes[chunk.start..<end]))
        }
    }

    /// One change as a chunk holds it: its keyspace's position in the chunk's list, its kind and
    /// its key; returns the offset of its kind byte in `w`.
    @discardableResult
    static func encodeChange(into w: inout FieldWriter, keyspace position: Int, _ kind: RecordChange.Kind, key: UnsafeRawBufferPointer) -> Int {
        // Both varints take one byte but for a chunk of more than 127 keyspaces or a key of more
        // than 127 bytes: appended straight (a call each cost the feed a sixth of its instructions).
        if position < 0x80 && key.count < 0x80 {
            let kindOffset = w.bytes.count + 1
            w.bytes.append(UInt8(position))
            w.bytes.append(kind.code)
            w.bytes.append(UInt8(key.count))
            w.bytes.append(contentsOf: key.assumingMemoryBound(to: UInt8.self))
            return kindOffset
        }
        w.writeVarint(UInt64(position))
        let kindOffset = w.bytes.count
        w.write(kind.code)
        w.writeBytes(key)
        return kindOffset
    }

    /// A chunk's value: committed-at milliseconds, the writing store's identity, the
    /// transaction's change count, the chunk's keyspaces and change count, its changes as
    /// ``encodeChange(into:keyspace:_:key:)`` wrote them, and a CRC-32C over the chunk's key and
    /// all of that.
    static func value(key: [UInt8], committedAt: UInt64, writer: Int, total: Int, keyspaces: [String], changes: Int,
                      encoded: ArraySlice<UInt8>) -> [UInt8] {
        var w = FieldWriter()
        w.write(committedAt)
        w.write(writer)
        w.writeVarint(UInt64(total))
        w.write(keyspaces)
        w.writeVarint(UInt64(changes))
        w.writeRaw(encoded)
        let checksum = key.withUnsafeBytes { k in w.bytes.withUnsafeBytes { RecordChecksum.of(key: k, value: $0) } }
        w.writeChecksum(checksum)
        return w.bytes
    }
}
