import Foundation

/// The writes of a transaction that the storage cannot read back (its write transactions do not
/// see their own writes), indexed so the transaction can: by key for `get`, in key order for scans.
///
/// Every write is copied once into an arena of large chunks that never move: a 16-byte header (key
/// and value lengths; a delete has no value), the key, the value. A key's newest entry is found
/// through an open-addressing table of slot numbers, hashed over the key's bytes eight at a time;
/// each bucket keeps 32 bits of its key's hash beside the slot, so a probe compares keys only on a
/// hash match and growing the table never reads a key again.
/// An overwrite appends a new entry and repoints the key's slot (the old bytes stay until the
/// transaction ends). So a million writes cost one copy each and three small arrays, not two
/// arrays per key in a dictionary. Slots are kept in first-write order and sorted lazily when a
/// scan needs them; sequential writes stay sorted.
///
/// Buffers lent by ``lookup(_:)``, ``key(_:)`` and ``value(_:)`` stay valid until the overlay is
/// freed (the end of the transaction). One transaction uses it, on one thread, so its fields
/// skip the runtime's exclusivity checks (a `swift_beginAccess` on every field access of a class,
/// about a fifth of a put's instructions).
final class PendingWrites {
    /// What the transaction did to a key.
    enum Lookup {
        case untouched
        case deleted
        case value(UnsafeRawBufferPointer)
    }

    private static let chunkSize = 1 << 20
    private static let headerSize = 16
    private static let deleted = UInt64.max

    @exclusivity(unchecked) private var chunks: [UnsafeMutableRawPointer] = []
    @exclusivity(unchecked) private var cursor: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var room = 0
    /// Per distinct key (its slot), the newest entry.
    @exclusivity(unchecked) private var entries: [UnsafeMutableRawPointer] = []
    /// Per bucket, the upper 32 bits hold the key's hash and the lower 32 its slot + 1; 0 for an empty
    /// bucket. The capacity is a power of two, at most half full.
    @exclusivity(unchecked) private var table: [UInt64] = []
    /// Slots in first-write order until a scan sorts them by key.
    @exclusivity(unchecked) private var order: [Int32] = []
    @exclusivity(unchecked) private var sorted = true

    init() {}

    deinit {
        for chunk in chunks { chunk.deallocate() }
    }

    var isEmpty: Bool { entries.isEmpty }

    /// How many distinct keys it holds.
    var count: Int { entries.count }

    /// Records a put (`value` non-nil) or a delete of `key`.
    func set(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer?) {
        let entry = append(key, value)
        let hash = Self.hash(key)
        if let slot = find(key, hash: hash) {
            entries[slot] = entry
            return
        }
        if (entries.count + 1) * 2 > table.count { grow() }
        let slot = entries.count
        entries.append(entry)
        insert(slot, hash: hash)
        if sorted, let last = order.last, Bytewise.compare(self.key(Int(last)), key) > 0 { sorted = false }
        order.append(Int32(slot))
    }

    /// What the transaction did to `key`.
    func lookup(_ key: UnsafeRawBufferPointer) -> Lookup {
        guard !entries.isEmpty, let slot = find(key, hash: Self.hash(key)) else { return .untouched }
        return value(slot).map { .value($0) } ?? .deleted
    }

    /// The slots in key order, sorting them first when needed.
    func sortedSlots() -> [Int32] {
        if !sorted {
            order.sort { Bytewise.compare(key(Int($0)), key(Int($1))) < 0 }
            sorted = true
        }
        return order
    }

    /// The key of a slot.
    func key(_ slot: Int) -> UnsafeRawBufferPointer {
        let entry = entries[slot]
        return UnsafeRawBufferPointer(start: entry + Self.headerSize, count: Int(entry.loadUnaligned(as: UInt64.self)))
    }

    /// The newest value of a slot's key; nil when the transaction deleted it.
    func value(_ slot: Int) -> UnsafeRawBufferPointer? {
        let entry = entries[slot]
        let keyCount = Int(entry.loadUnaligned(as: UInt64.self))
        let valueCount = entry.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        if valueCount == Self.deleted { return nil }
        return UnsafeRawBufferPointer(start: entry + Self.headerSize + keyCount, count: Int(valueCount))
    }

    /// The index in `slots` (sorted) of the first key at or above (or above, when `!inclusive`) `bound`.
    func firstIndex(in slots: [Int32], atOrAbove bound: [UInt8], inclusive: Bool) -> Int {
        bound.withUnsafeBytes { bound in
            var low = 0, high = slots.count
            while low < high {
                let mid = (low + high) / 2
                let c = Bytewise.compare(key(Int(slots[mid])), bound)
                if c < 0 || (c == 0 && !inclusive) { low = mid + 1 } else { high = mid }
            }
            return low
        }
    }

    // MARK: The arena

    /// Copies an entry into the arena and returns where it starts.
    private func append(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer?) -> UnsafeMutableRawPointer {
        let size = (Self.headerSize + key.count + (value?.count ?? 0) + 7) & ~7
        if size > room {
            let capacity = max(Self.chunkSize, size)
            let chunk = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            chunks.append(chunk)
            cursor = chunk
            room = capacity
        }
        let entry = cursor!
        entry.storeBytes(of: UInt64(key.count), as: UInt64.self)
        entry.storeBytes(of: value.map { UInt64($0.count) } ?? Self.deleted, toByteOffset: 8, as: UInt64.self)
        if let base = key.baseAddress { (entry + Self.headerSize).copyMemory(from: base, byteCount: key.count) }
        if let value, let base = value.baseAddress { (entry + Self.headerSize + key.count).copyMemory(from: base, byteCount: value.count) }
        cursor = entry + size
        room -= size
        return entry
    }

    // MARK: The table

    private func find(_ key: UnsafeRawBufferPointer, hash: UInt32) -> Int? {
        guard !table.isEmpty else { return nil }
        let mask = table.count - 1
        var bucket = Int(hash) & mask
        while true {
            let stored = table[bucket]
            if stored == 0 { return nil }
            if UInt32(truncatingIfNeeded: stored >> 32) == hash {
                let slot = Int(UInt32(truncatingIfNeeded: stored)) - 1
                let candidate = self.key(slot)
                if candidate.count == key.count && (key.count == 0 || memcmp(candidate.baseAddress!, key.baseAddress!, key.count) == 0) {
                    return slot
                }
            }
            bucket = (bucket + 1) & mask
        }
    }

    private func insert(_ slot: Int, hash: UInt32) {
        insert(UInt64(hash) << 32 | UInt64(slot + 1))
    }

    private func insert(_ bucketValue: UInt64) {
        let mask = table.count - 1
        var bucket = Int(UInt32(truncatingIfNeeded: bucketValue >> 32)) & mask
        while table[bucket] != 0 { bucket = (bucket + 1) & mask }
        table[bucket] = bucketValue
    }

    /// Doubles the table, placing each bucket by the hash it keeps.
    private func grow() {
        let old = table
        table = [UInt64](repeating: 0, count: max(64, table.count * 2))
        for stored in old where stored != 0 { insert(stored) }
    }

    /// A hash of the key's bytes, eight at a time (Swift's `Hasher` takes one byte per call); the
    /// table keeps its low 32 bits.
    private static func hash(_ key: UnsafeRawBufferPointer) -> UInt32 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(key.count)
        var offset = 0
        while offset + 8 <= key.count {
            h = (h ^ key.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
            h ^= h >> 31
            offset += 8
        }
        var tail: UInt64 = 0
        while offset < key.count {
            tail = tail << 8 | UInt64(key[offset])
            offset += 1
        }
        h = (h ^ tail) &* 0x94D0_49BB_1331_11EB
        return UInt32(truncatingIfNeeded: h ^ (h >> 29))
    }
}
