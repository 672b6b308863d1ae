/// The writes of a transaction that the storage cannot read back (its write transactions do not
/// see their own writes), indexed so the transaction can: by key for `get`, in key order for scans.
///
/// A `nil` value is a pending delete (a tombstone that hides the stored value). Keys are kept in
/// insertion order and sorted lazily when a scan needs them; sequential writes stay sorted.
struct PendingWrites {
    private var values: [[UInt8]: [UInt8]?] = [:]
    private var order: [[UInt8]] = []
    private var sorted = true

    var isEmpty: Bool { values.isEmpty }

    /// `.some(nil)`: deleted in this transaction; `nil`: not touched by it.
    func lookup(_ key: UnsafeRawBufferPointer) -> [UInt8]?? {
        values[Array(key)]
    }

    mutating func set(_ key: [UInt8], _ value: [UInt8]?) {
        if values.updateValue(value, forKey: key) == nil {
            if let last = order.last, sorted, Bytewise.compare(last, key) > 0 { sorted = false }
            order.append(key)
        }
    }

    /// The pending keys in bytewise order, sorting them first when needed.
    mutating func sortedKeys() -> [[UInt8]] {
        if !sorted {
            order.sort { Bytewise.compare($0, $1) < 0 }
            sorted = true
        }
        return order
    }

    /// The pending value for a key known to be pending.
    func value(_ key: [UInt8]) -> [UInt8]? { values[key]! }
}

extension Array where Element == [UInt8] {
    /// The index of the first key at or above (or above, when `!inclusive`) `bound`.
    func firstIndex(atOrAbove bound: [UInt8], inclusive: Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            let c = Bytewise.compare(self[mid], bound)
            if c < 0 || (c == 0 && !inclusive) { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
