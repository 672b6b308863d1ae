import StrataEngine
import StrataKeyCodec

/// The index entries one record write puts and deletes, collected before any is written: the
/// checks (key limit, unique values) run for every index first, so a write that fails one has no
/// effect. The keys lie back to back in one buffer the transaction reuses, so an insert
/// allocates nothing for its entries once the transaction has made its first. Bytes no write
/// refers to (an entry that is kept as it is) are left in the buffer until the next write.
@usableFromInline
struct EntryWrites {
    /// The entry keys, back to back.
    @usableFromInline var keys = KeyWriter(capacity: 256)
    /// What to do, in order, with which bytes of `keys`.
    @usableFromInline var writes: [(key: Range<Int>, kind: Kind)] = []

    @usableFromInline
    enum Kind {
        case delete, put, putValue
    }

    @inlinable init() {}

    /// Appends `prefix ‖ values ‖ primary`; returns where in `keys` the key lies, and where its
    /// values end (the bound of a unique check).
    @inlinable
    mutating func appendKey(_ prefix: [UInt8], primary: ArraySlice<UInt8>,
                            values: (inout KeyWriter) -> Void) -> (key: Range<Int>, valuesEnd: Int) {
        let start = keys.bytes.count
        keys.write(contentsOf: prefix)
        values(&keys)
        let valuesEnd = keys.bytes.count
        keys.bytes.append(contentsOf: primary)
        return (start..<keys.bytes.count, valuesEnd)
    }

    /// Adds a write of `key`, given whole.
    @usableFromInline
    mutating func add(_ key: [UInt8], _ kind: Kind) {
        let start = keys.bytes.count
        keys.write(contentsOf: key)
        writes.append((start..<keys.bytes.count, kind))
    }

    /// Whether the bytes `a` and `b` of the buffer are equal.
    @inlinable
    func equal(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        keys.bytes.withUnsafeBytes { Bytewise.compare(UnsafeRawBufferPointer(rebasing: $0[a]), UnsafeRawBufferPointer(rebasing: $0[b])) == 0 }
    }

    /// Applies the writes in order: `value` for covering entries, empty values for the others.
    @inlinable
    func apply(to writer: any KeyValueWriter, value: ArraySlice<UInt8>) throws {
        try keys.bytes.withUnsafeBytes { all in
            try value.withUnsafeBytes { value in
                for (range, kind) in writes {
                    let key = UnsafeRawBufferPointer(rebasing: all[range])
                    switch kind {
                    case .delete: try writer.delete(key)
                    case .put: try writer.put(UnsafeRawBufferPointer(start: nil, count: 0), forKey: key)
                    case .putValue: try writer.put(value, forKey: key)
                    }
                }
            }
        }
    }

    @inlinable
    mutating func removeAll() {
        keys.removeAll()
        writes.removeAll(keepingCapacity: true)
    }
}
