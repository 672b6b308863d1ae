import StrataEngine

/// The writes of one LMDB write transaction, kept so that the transaction can be replayed
/// into a fresh transaction after the map was grown (MDB_MAP_FULL aborts a transaction).
/// The user's closure therefore runs exactly once, whatever the map size.
///
/// Entries are copied into fixed 1 MiB chunks (a larger one for a larger entry): one memcpy per
/// write, and nothing is ever moved again, which an array growing by doubling would do.
final class WriteLog {
    enum Entry {
        case put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
        case delete(key: UnsafeRawBufferPointer)
        case clear(ResolvedRange)
    }

    private static let chunkSize = 1 << 20
    private static let put: UInt8 = 1, delete: UInt8 = 2, clear: UInt8 = 3

    /// Full chunks, each with the bytes used.
    private var chunks: [(memory: UnsafeMutableRawBufferPointer, used: Int)] = []
    private var ranges: [ResolvedRange] = []

    /// Bytes recorded so far.
    private(set) var byteCount = 0

    deinit {
        for chunk in chunks { chunk.memory.deallocate() }
    }

    func recordPut(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        append(Self.put, key, value)
    }

    func recordDelete(_ key: UnsafeRawBufferPointer) {
        append(Self.delete, key, nil)
    }

    func recordClear(_ range: ResolvedRange) {
        ranges.append(range)
        append(Self.clear, nil, nil)
    }

    /// Writes one entry: a tag, then each part as an 8-byte length and its bytes.
    private func append(_ tag: UInt8, _ first: UnsafeRawBufferPointer?, _ second: UnsafeRawBufferPointer?) {
        let size = 1 + (first.map { 8 + $0.count } ?? 0) + (second.map { 8 + $0.count } ?? 0)
        if chunks.isEmpty || chunks[chunks.count - 1].memory.count - chunks[chunks.count - 1].used < size {
            chunks.append((.allocate(byteCount: Swift.max(Self.chunkSize, size), alignment: 8), 0))
        }
        let chunk = chunks[chunks.count - 1]
        var cursor = chunk.memory.baseAddress! + chunk.used
        cursor.storeBytes(of: tag, as: UInt8.self)
        cursor += 1
        for part in [first, second] {
            guard let part else { continue }
            cursor.storeBytes(of: UInt64(part.count), as: UInt64.self)  // unaligned stores are fine on our targets
            cursor += 8
            if let base = part.baseAddress { cursor.copyMemory(from: base, byteCount: part.count) }
            cursor += part.count
        }
        chunks[chunks.count - 1].used += size
        byteCount += size
    }

    /// Calls `apply` with every recorded write, in order.
    func replay(_ apply: (Entry) throws -> Void) rethrows {
        var rangeIndex = 0
        for chunk in chunks {
            var cursor = UnsafeRawPointer(chunk.memory.baseAddress!)
            let end = cursor + chunk.used
            func part() -> UnsafeRawBufferPointer {
                let count = Int(cursor.loadUnaligned(as: UInt64.self))
                defer { cursor += 8 + count }
                return UnsafeRawBufferPointer(start: cursor + 8, count: count)
            }
            while cursor < end {
                let tag = cursor.load(as: UInt8.self)
                cursor += 1
                switch tag {
                case Self.put:
                    let key = part()
                    try apply(.put(key: key, value: part()))
                case Self.delete:
                    try apply(.delete(key: part()))
                default:
                    try apply(.clear(ranges[rangeIndex]))
                    rangeIndex += 1
                }
            }
        }
    }
}
