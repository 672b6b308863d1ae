import StrataEngine
import StrataKeyCodec

/// The index entries one record write puts and deletes, collected before any is written: the
/// checks (key limit, unique values) run for every index first, so a write that fails one has no
/// effect. The keys lie back to back in one buffer the transaction reuses, so an insert
/// allocates nothing for its entries once the transaction has made its first. Bytes no write
/// refers to (an entry that is kept as it is) are left in the buffer until the next write.
///
/// A class, so the transaction lends it to a write with one retain: a struct of its many buffers
/// was copied in and out of the transaction with a retain and a release per buffer (callgrind:
/// 1,000 instructions of a 12,000-instruction insert). Its buffers are `@exclusivity(unchecked)`
/// for the reason the context's are: one write uses it at a time, on one thread.
@usableFromInline
final class EntryWrites {
    /// The entries the maintainers added (``collect(_:)``), their keys back to
    /// back in one buffer, which also holds the keys given whole (``add(_:_:)``).
    @exclusivity(unchecked) @usableFromInline var entries = IndexEntries(keys: KeyWriter(capacity: 256))
    /// What to do, in order, with which bytes of the buffer.
    @exclusivity(unchecked) @usableFromInline var writes = ReusedArray<Write>()
    /// The totals of indexes of totals to write (`nil`: delete the group), after the entries.
    @exclusivity(unchecked) @usableFromInline var totals: [(key: [UInt8], value: [UInt8]?)] = []

    @usableFromInline
    enum Kind {
        case delete, put, putValue
    }

    /// A write of the bytes `key` of the buffer (a struct for the reason of ``IndexEntries/Entry``).
    @usableFromInline
    struct Write {
        @usableFromInline let key: Range<Int>
        @usableFromInline let kind: Kind
        @inlinable init(_ key: Range<Int>, _ kind: Kind) { (self.key, self.kind) = (key, kind) }
    }

    @inlinable init() {}

    /// The entries' keys, back to back.
    @inlinable var keys: KeyWriter { entries.keys }

    /// Lets `write` (an ``IndexMaintainer``'s) add one record's entries to the buffer, each
    /// `prefix ‖ values ‖ primary` (as given to ``IndexEntries/start(prefix:primary:)``); returns
    /// their positions in ``IndexEntries/found``.
    @inlinable
    func collect(_ write: (inout IndexEntries) -> Void) -> Range<Int> {
        entries.nextRecord()
        write(&entries)
        // A maintainer may append to `keys` but not cut it: the entries' ranges must stay inside.
        precondition(entries.found.count == 0 || entries.found[entries.found.count - 1].key.upperBound <= entries.keys.bytes.count,
                     "an index maintainer shortened the entries' buffer")
        return entries.first..<entries.found.count
    }

    /// Whether the entry at `position` has the key of one of the entries `among`; `hashed` is
    /// ``hashedKeys(_:)`` of `among`.
    @inlinable
    func contains(_ position: Int, in among: Range<Int>, hashed: Set<[UInt8]>?) -> Bool {
        let key = entries.found[position].key
        if let hashed { return hashed.contains(Array(entries.keys.bytes[key])) }
        return entries.contains(key, among: among)
    }

    /// The keys of the entries `among`, hashed when they are many (a record with a large
    /// collection), so that comparing two records' entries is not quadratic; `nil` when few.
    @inlinable @inline(__always)
    func hashedKeys(_ among: Range<Int>) -> Set<[UInt8]>? {
        among.count < IndexEntries.hashingFrom ? nil : entries.hashedKeys(among)
    }

    /// Adds a write of `key`, given whole.
    @usableFromInline
    func add(_ key: [UInt8], _ kind: Kind) {
        let start = entries.keys.bytes.count
        entries.keys.write(contentsOf: key)
        writes.append(Write(start..<entries.keys.bytes.count, kind))
    }

    /// Applies the writes in order: `value` for covering entries, empty values for the others.
    @inlinable
    func apply(to writer: any KeyValueWriter, value: ArraySlice<UInt8>) throws {
        try entries.keys.bytes.withUnsafeBytes { all in
            try value.withUnsafeBytes { value in
                for i in writes.indices {
                    let write = writes[i]
                    let key = UnsafeRawBufferPointer(rebasing: all[write.key])
                    switch write.kind {
                    case .delete: try writer.delete(key)
                    case .put: try writer.put(UnsafeRawBufferPointer(start: nil, count: 0), forKey: key)
                    case .putValue: try writer.put(value, forKey: key)
                    }
                }
            }
        }
        if !totals.isEmpty { try Self.apply(totals: totals, to: writer) }
    }

    /// Puts each total, or deletes its group where it is `nil` (its count reached 0).
    @usableFromInline
    static func apply(totals: [(key: [UInt8], value: [UInt8]?)], to writer: any KeyValueWriter) throws {
        for (key, value) in totals {
            if let value { try writer.put(value, forKey: key) } else { try writer.delete(key) }
        }
    }

    @inlinable
    func removeAll() {
        entries.removeAll()
        writes.removeAll()
        if !totals.isEmpty { totals.removeAll(keepingCapacity: true) }
    }
}
