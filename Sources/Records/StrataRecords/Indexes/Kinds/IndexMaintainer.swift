import StrataKeyCodec

/// One kind of index: which entries a record has in it. The record layer does the rest for
/// every kind alike, in the transaction of each write: it compares a record's entries with
/// those of the record it replaces, removes the stale ones and writes the new ones, checks key
/// limits and unique values, stores the record's value with each entry of a covering index,
/// builds the index over existing records (``Store/prepare(_:batchSize:onBatch:)``), verifies it
/// and answers its queries (equality on leading components, a comparison on the last).
///
/// ``ValueIndex`` (a field's value, or each element of a collection) is the kind every
/// ``RecordIndex`` declared with components has. Another kind is a type conforming to this
/// protocol, given to ``RecordIndex/init(_:_:unique:covering:)-(_,M,_,_)``, and registered once in
/// ``IndexKinds`` so that the tools that read a store without its Swift types (`strata verify`,
/// the previous generation of a changed definition) can compute its entries too:
///
/// ```swift
/// /// Finds records by the length of a string field.
/// struct LengthIndex<R: Record>: IndexMaintainer {
///     static var kind: String { "length" }
///     let components: [IndexComponent<R>]
///     let text: KeyPath<R, String> & Sendable
///     init(_ name: String, _ text: KeyPath<R, String> & Sendable) {
///         components = [.computed(name) { $0[keyPath: text].count }]
///         self.text = text
///     }
///     func writeEntries(of record: R, to entries: inout IndexEntries) {
///         entries.add { $0.append(record[keyPath: text].count) }
///     }
/// }
/// IndexKinds.register("length") { stored in
///     if case .string(let text) = stored { return .int(Int64(text.count)) }
///     return nil
/// }
/// ```
///
/// A maintainer is generic over the record type and captured where its index is declared, so its
/// code is specialized for that type.
public protocol IndexMaintainer<Indexed>: Sendable {
    /// The record type whose entries it writes.
    associatedtype Indexed: Record
    /// The kind's name, stored in the definition of each index of the kind: a store whose index
    /// is declared with another kind rebuilds it, as for any changed definition.
    static var kind: String { get }
    /// What each entry holds, in order: the components queries give values for (names and
    /// types are stored in the catalog, and queries are checked against them).
    var components: [IndexComponent<Indexed>] { get }
    /// Adds each of `record`'s entries to `entries` with ``IndexEntries/add(isNil:_:)``, its
    /// components' key encodings in order. A record may have none or several; duplicates count once.
    /// A kind that keeps totals (``storage``) adds each group with ``IndexEntries/add(amount:_:)``.
    func writeEntries(of record: Indexed, to entries: inout IndexEntries)
    /// How the record layer keeps the entries `writeEntries` gives: one per record
    /// (``IndexStorage/entries``, the default) or one total per group (``IndexStorage/totals``).
    static var storage: IndexStorage { get }
    /// The kind as the index's stored definition names it: ``kind`` (the default), or the kind
    /// with what else defines the index (the field a sum adds up), so that changing that rebuilds it.
    var definedKind: String { get }
}

extension IndexMaintainer {
    /// One entry per record.
    public static var storage: IndexStorage { .entries }
    /// ``kind``.
    public var definedKind: String { Self.kind }
}

/// How an index keeps what its maintainer's ``IndexMaintainer/writeEntries(of:to:)`` gives.
public enum IndexStorage: Sendable, Hashable {
    /// An entry per record and set of values, `prefix ‖ values ‖ primary key`, written and
    /// deleted with the record: what a query reads to find records.
    case entries
    /// A total per group of values, `prefix ‖ values`, holding how many records have them and
    /// the sum of their amounts (``AggregateTotal``): each write adds to its groups' totals and
    /// takes its old record's amounts from them, in its transaction. Read with
    /// ``RecordIndex/total(in:_:)`` and ``RecordIndex/totals(in:_:limit:order:)``; record queries refuse it.
    case totals
}

/// Where an ``IndexMaintainer`` adds a record's entries: each one is written, with the index's
/// prefix and the record's primary key around it, into a buffer the transaction reuses.
public struct IndexEntries {
    /// The entries' keys, back to back: `prefix ‖ values ‖ primary`. Between ``beginEntry()`` and
    /// ``endEntry(_:isNil:)``, append the entry's components here; never remove bytes (a write
    /// whose maintainer does stops with a precondition failure).
    public var keys: KeyWriter
    /// One entry added: where its key lies in `keys`, where its values end, whether one is `nil`.
    /// (A struct, not a tuple: an array of tuples looks up the tuple's metadata at run time in
    /// every unspecialized call, a few hundred instructions per write.)
    @usableFromInline
    struct Entry {
        @usableFromInline var key: Range<Int>
        @usableFromInline var valuesEnd: Int
        @usableFromInline var isNil: Bool
        @inlinable init(key: Range<Int>, valuesEnd: Int, isNil: Bool) { (self.key, self.valuesEnd, self.isNil) = (key, valuesEnd, isNil) }
    }

    /// Each entry added, in order.
    @usableFromInline var found = ReusedArray<Entry>()
    /// The amounts of the entries added with ``add(amount:_:)`` (an index of totals), with their
    /// positions in ``found``.
    @usableFromInline var amounts = ReusedArray<Amount>()
    @usableFromInline
    struct Amount {
        @usableFromInline var position: Int
        @usableFromInline var amount: Int64
        @inlinable init(position: Int, amount: Int64) { (self.position, self.amount) = (position, amount) }
    }
    /// Where the current record's entries start in `found` (the ones before belong to other records).
    @usableFromInline var first: Int
    /// The index's prefix and the record's primary key, around each entry's values.
    @usableFromInline var prefix: [UInt8]
    @usableFromInline var primary: ArraySlice<UInt8>
    /// The record's entry keys so far, once it has many (a record with a large collection):
    /// then duplicates are found by hashing, not by comparing with each entry.
    @usableFromInline var seen: Set<[UInt8]>?

    @inlinable
    init(keys: KeyWriter, prefix: [UInt8] = [], primary: ArraySlice<UInt8> = []) {
        (self.keys, self.prefix, self.primary) = (keys, prefix, primary)
        first = 0
    }

    /// Starts the entries of records in an index: they go after those already added.
    @inlinable
    mutating func start(prefix: [UInt8], primary: ArraySlice<UInt8>) {
        self.prefix = prefix
        self.primary = primary
        nextRecord()
    }

    /// Starts the entries of another record, with the same prefix and primary key.
    @inlinable
    mutating func nextRecord() {
        first = found.count
        if seen != nil { seen = nil }
    }

    /// Empties the buffer, keeping its capacity, and lets go of the last record's primary key (a
    /// slice of the transaction's record buffer, which would otherwise be copied by the next
    /// insert instead of reused).
    @inlinable
    mutating func removeAll() {
        primary = []
        keys.removeAll()
        found.removeAll()
        amounts.removeAll()
        first = 0
        seen = nil
    }

    /// Adds an entry whose components `values` appends, in order, in the key encoding
    /// (`$0.append(city); $0.append(age)`). `isNil`: a component is `nil`, which exempts the entry
    /// from a unique index's check (as in SQL). An entry equal to one the record already has is
    /// not added again.
    @inlinable
    public mutating func add(isNil: Bool = false, _ values: (inout KeyWriter) -> Void) {
        let start = beginEntry()
        values(&keys)
        endEntry(start, isNil: isNil)
    }

    /// Adds a group whose values `values` appends, for an index of totals (``IndexStorage/totals``):
    /// the record counts once in it and adds `amount` to its sum. A group the record already
    /// has is not added again.
    @inlinable
    public mutating func add(amount: Int64, _ values: (inout KeyWriter) -> Void) {
        let before = found.count
        add(values)
        give(amount: amount, toEntriesFrom: before)
    }

    /// Gives `amount` to every entry added from position `first` of `found` on: for an index
    /// of totals whose groups another kind's `writeEntries` added (``AggregateIndex``), as
    /// ``add(amount:_:)`` does for the group it adds.
    @inlinable
    mutating func give(amount: Int64, toEntriesFrom first: Int) {
        for position in first..<found.count { amounts.append(Amount(position: position, amount: amount)) }
    }

    /// Starts an entry without a closure (the form ``ValueIndex`` uses): append its components to
    /// ``keys`` in order, then call ``endEntry(_:isNil:)`` with what this returned.
    @inlinable
    public mutating func beginEntry() -> Int {
        let start = keys.bytes.count
        keys.write(contentsOf: prefix)
        return start
    }

    /// Ends the entry begun by ``beginEntry()`` (which returned `start`), as ``add(isNil:_:)`` would.
    @inlinable
    public mutating func endEntry(_ start: Int, isNil: Bool) {
        let valuesEnd = keys.bytes.count
        keys.bytes.append(contentsOf: primary)
        let key = start..<keys.bytes.count
        if first < found.count {
            if seen == nil && found.count - first >= Self.hashingFrom { seen = hashedKeys(first..<found.count) }
            let duplicate = seen.map { $0.contains(Array(keys.bytes[key])) } ?? contains(key, among: first..<found.count)
            if duplicate {
                keys.bytes.removeSubrange(start...)
                return
            }
            seen?.insert(Array(keys.bytes[key]))
        }
        found.append(Entry(key: key, valuesEnd: valuesEnd, isNil: isNil))
    }

    /// From how many entries of one record on duplicates are found by hashing.
    @usableFromInline static var hashingFrom: Int { 16 }

    /// Whether the bytes `key` of the buffer equal the key of one of the entries `among`.
    @inlinable
    func contains(_ key: Range<Int>, among: Range<Int>) -> Bool {
        keys.bytes.withUnsafeBytes { all in
            let wanted = UnsafeRawBufferPointer(rebasing: all[key])
            for i in among where found[i].key.count == key.count {
                if Bytewise.compare(UnsafeRawBufferPointer(rebasing: all[found[i].key]), wanted) == 0 { return true }
            }
            return false
        }
    }

    /// The keys of the entries `among`, copied into a set (for records with many entries).
    @usableFromInline
    func hashedKeys(_ among: Range<Int>) -> Set<[UInt8]> { Set(among.map { Array(keys.bytes[found[$0].key]) }) }
}
