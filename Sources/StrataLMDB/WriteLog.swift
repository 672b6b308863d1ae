import StrataEngine

/// The writes of one LMDB write transaction, kept so that the transaction can be replayed
/// into a fresh transaction after the map was grown (MDB_MAP_FULL aborts a transaction).
/// The user's closure therefore runs exactly once, whatever the map size.
///
/// Puts and deletes are packed into one byte buffer (no allocation per write).
struct WriteLog {
    enum Entry {
        case put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
        case delete(key: UnsafeRawBufferPointer)
        case clear(KeyRange)
    }

    private var bytes: [UInt8] = []
    private var ranges: [KeyRange] = []
    private static let put: UInt8 = 1, delete: UInt8 = 2, clear: UInt8 = 3

    /// Bytes of keys and values recorded so far.
    var byteCount: Int { bytes.count }

    mutating func recordPut(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        bytes.append(Self.put)
        append(key)
        append(value)
    }

    mutating func recordDelete(_ key: UnsafeRawBufferPointer) {
        bytes.append(Self.delete)
        append(key)
    }

    mutating func recordClear(_ range: KeyRange) {
        bytes.append(Self.clear)
        appendLength(ranges.count)
        ranges.append(range)
    }

    /// Calls `apply` with every recorded write, in order.
    func replay(_ apply: (Entry) throws -> Void) rethrows {
        try bytes.withUnsafeBytes { buffer in
            var offset = 0
            func length() -> Int {
                let n = Int(buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
                return n
            }
            func slice() -> UnsafeRawBufferPointer {
                let n = length()
                defer { offset += n }
                return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + n)])
            }
            while offset < buffer.count {
                let tag = buffer[offset]
                offset += 1
                switch tag {
                case Self.put:
                    let key = slice()
                    try apply(.put(key: key, value: slice()))
                case Self.delete: try apply(.delete(key: slice()))
                default: try apply(.clear(ranges[length()]))
                }
            }
        }
    }

    private mutating func append(_ data: UnsafeRawBufferPointer) {
        appendLength(data.count)
        bytes.append(contentsOf: data)
    }

    private mutating func appendLength(_ n: Int) {
        withUnsafeBytes(of: UInt64(n)) { bytes.append(contentsOf: $0) }
    }
}
