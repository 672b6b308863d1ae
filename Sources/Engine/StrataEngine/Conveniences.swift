/// Conveniences over the borrowed-bytes primitives: owned `[UInt8]` keys and values.
/// They copy; hot paths use the primitives directly.
extension KeyValueReader {
    /// The value stored under `key`, copied out, or `nil`.
    public func get(_ key: [UInt8]) throws -> [UInt8]? {
        try key.withUnsafeBytes { k in try withValue(forKey: k) { $0.map { Array($0) } } }
    }

    /// Whether `key` is present.
    public func exists(_ key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { k in try withValue(forKey: k) { $0 != nil } }
    }

    /// Visits the pairs of `range` with owned-bytes-free buffers; see ``KeyValueReader/scan(_:reverse:limit:_:)``.
    public func scan(
        _ range: KeyRange = .all, reverse: Bool = false,
        _ visit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try scan(range, reverse: reverse, limit: nil, visit)
    }

    /// The pairs of `range`, copied into an array.
    public func pairs(_ range: KeyRange = .all, reverse: Bool = false, limit: Int? = nil) throws -> [(key: [UInt8], value: [UInt8])] {
        var result: [(key: [UInt8], value: [UInt8])] = []
        try scan(range, reverse: reverse, limit: limit) { k, v in
            result.append((Array(k), Array(v)))
            return true
        }
        return result
    }

    /// The keys of `range`, copied into an array.
    public func keys(_ range: KeyRange = .all, reverse: Bool = false, limit: Int? = nil) throws -> [[UInt8]] {
        var result: [[UInt8]] = []
        try scan(range, reverse: reverse, limit: limit) { k, _ in
            result.append(Array(k))
            return true
        }
        return result
    }
}

extension KeyValueWriter {
    /// Stores `value` under `key`.
    public func put(_ value: [UInt8], forKey key: [UInt8]) throws {
        try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try put(v, forKey: k) } }
    }

    /// Removes `key`; a missing key is not an error.
    public func delete(_ key: [UInt8]) throws {
        try key.withUnsafeBytes { try delete($0) }
    }
}
