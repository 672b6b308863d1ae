import StrataEngine
import StrataKeyCodec

/// Queries on an index, with the rules of queries on the key: equality on leading components, a
/// comparison on the last one given (``RecordQuery``), a limit, and nearest-first order unless
/// `order:` is given. Each is one seek plus the entries it returns; a non-covering index reads
/// each record by its key (one point read per result), a covering one reads it from the entry.
/// An index that is not readable throws ``RecordError/indexNotReady(type:index:state:)``, unless
/// it is a changed definition whose previous generation stands in while it is built (see
/// ``RecordIndex``, "Changed definitions").
extension RecordIndex {
    /// The records whose entries match `query`, at most `limit`, in index order (records with
    /// equal values in primary-key order).
    @inlinable
    public func select(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil) throws -> [R] {
        var records: [R] = []
        try ctx.scanIndex(self, query, limit: limit, order: order ?? query.defaultOrder) { _, _, record in
            records.append(record())
            return true
        }
        return records
    }

    /// The record with the smallest value among those `query` selects: the first entry in index
    /// order (one seek, one entry), as SQL's `MIN` served by an index. "Value" is the index's
    /// first component the query leaves open, by its key encoding (`nil` first; strings by
    /// Unicode scalars); among equal values, the smallest primary key. `nil` when none matches.
    ///
    /// ```swift
    /// let coldest = try Reading.bySensorCelsius.min(in: ctx, .all.equal(4))   // sensor 4's coldest reading
    /// ```
    @inlinable
    public func min(in ctx: TransactionContext, _ query: RecordQuery = .all) throws -> R? {
        try select(in: ctx, query, limit: 1, order: .ascending).first
    }

    /// The record with the largest value among those `query` selects: the last entry in index
    /// order (one seek, one entry), as SQL's `MAX` served by an index; among equal values, the
    /// largest primary key. `nil` when none matches. See ``min(in:_:)``.
    @inlinable
    public func max(in ctx: TransactionContext, _ query: RecordQuery = .all) throws -> R? {
        try select(in: ctx, query, limit: 1, order: .descending).first
    }

    /// Visits the matching records one at a time; `body` returns `false` to stop.
    @inlinable
    public func forEach(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil,
                        _ body: (R) throws -> Bool) throws {
        try ctx.scanIndex(self, query, limit: limit, order: order ?? query.defaultOrder) { _, _, record in try body(record()) }
    }

    /// Visits the matching records as views over the engine's bytes (``RecordView``), valid only
    /// inside `body`; `body` returns `false` to stop. The checksum is verified before `body` sees a
    /// view. A covering index lends the record from its entry; otherwise each record is read by key.
    @inlinable
    public func forEachView(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil,
                            _ body: (RecordView<R>) throws -> Bool) throws {
        let layout = try ctx.storedLayout(R.self)
        try ctx.scanIndexRows(self, query, limit: limit, order: order ?? query.defaultOrder) { _, _, key, value in
            try ctx.withView(R.self, key: key, value: value, layout: layout, body)
        }
    }

    /// How many entries match `query` (records are not read). A multi-valued index counts a
    /// record once per matching element.
    @inlinable
    public func count(in ctx: TransactionContext, _ query: RecordQuery = .all) throws -> Int {
        var n = 0
        try ctx.scanIndex(self, query, limit: nil, order: .ascending, readRecords: false) { _, _, _ in
            n += 1
            return true
        }
        return n
    }

    /// The primary keys of the matching records (their encoded components, without the keyspace),
    /// without reading the records.
    @inlinable
    public func primaryKeys(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil) throws -> [EncodedIndexKey] {
        var keys: [EncodedIndexKey] = []
        try ctx.scanIndex(self, query, limit: limit, order: order ?? query.defaultOrder, readRecords: false) { entry, primary, _ in
            keys.append(EncodedIndexKey(bytes: Array(entry[primary...])))
            return true
        }
        return keys
    }

    /// The records whose leading index values equal those `values` appends, in order, to the
    /// writer (`{ $0.append(lastName); $0.append(firstName) }`), at most `limit`, in index
    /// order. The macro's generated equality queries call this: the values are encoded into
    /// buffers the transaction reuses, so a lookup allocates only the records it returns. More
    /// values than the index has components are ``RecordError/invalidQuery(type:detail:)``;
    /// values of another type than a component's match nothing (the typed query methods the
    /// macro generates cannot get this wrong).
    @inlinable
    public func select(in ctx: TransactionContext, limit: Int? = nil, order: Order? = nil, equal values: (inout KeyWriter) -> Void) throws -> [R] {
        var records: [R] = []
        try ctx.scanIndexRows(self, equal: values, limit: limit, order: order ?? .ascending) { _, _, key, value in
            records.append(try ctx.decode(R.self, key: key, value: value))
            return true
        }
        return records
    }

    /// How many entries have the leading values `values` appends (see
    /// ``select(in:limit:order:equal:)``); records are not read.
    @inlinable
    public func count(in ctx: TransactionContext, equal values: (inout KeyWriter) -> Void) throws -> Int {
        var n = 0
        try ctx.scanIndexRows(self, equal: values, limit: nil, order: .ascending, readRecords: false) { _, _, _, _ in
            n += 1
            return true
        }
        return n
    }

    /// A unique index's point lookup by every component's value, appended by `values` in
    /// order (see ``select(in:limit:order:equal:)``). On an index that is not unique, this is
    /// ``RecordError/invalidIndex(type:index:detail:)``.
    @inlinable
    public func fetch(in ctx: TransactionContext, equal values: (inout KeyWriter) -> Void) throws -> R? {
        guard unique else {
            throw RecordError.invalidIndex(type: "\(R.self)", index: name, detail: "fetch needs a unique index; use select")
        }
        var record: R?
        try ctx.scanIndexRows(self, equal: values, limit: 1, order: .ascending, everyComponent: true) { _, _, key, value in
            record = try ctx.decode(R.self, key: key, value: value)
            return false
        }
        return record
    }

    /// The query as a value, to page, stream or walk with a cursor (``Query``).
    public func query(_ query: RecordQuery = .all) -> Query<R> { Query(index: self, query) }

    /// The record whose values are exactly `query`'s (every component, by equality): a unique
    /// index's point lookup. On an index that is not unique, this is
    /// ``RecordError/invalidIndex(type:index:detail:)``.
    public func fetch(in ctx: TransactionContext, _ query: RecordQuery) throws -> R? {
        guard unique else {
            throw RecordError.invalidIndex(type: "\(R.self)", index: name, detail: "fetch needs a unique index; use select")
        }
        guard query.componentTypes.count == components.count, query.bounds == [[]] else {
            throw RecordError.invalidQuery(type: "\(R.self)", detail: "fetch on index \(name) needs every component, by equality")
        }
        return try select(in: ctx, query, limit: 1).first
    }
}

extension TransactionContext {
    /// Visits the entries of `index` matching `query` in `order`, strictly after `position` (an
    /// entry key without the index's prefix; before it, descending): the entry key without the
    /// prefix, where the primary key starts in it and, when `readRecords`, the record.
    @inlinable
    func scanIndex<R: Record>(
        _ index: RecordIndex<R>, _ query: RecordQuery, limit: Int?, order: Order, after position: [UInt8]? = nil, readRecords: Bool = true,
        _ body: (_ entry: UnsafeRawBufferPointer, _ primaryOffset: Int, _ record: () -> R) throws -> Bool
    ) throws {
        try scanIndexRows(index, query, limit: limit, order: order, after: position, readRecords: readRecords) { entry, primaryOffset, key, value in
            guard readRecords else { return try body(entry, primaryOffset, { fatalError("records not read") }) }
            let record = try decode(R.self, key: key, value: value)
            return try body(entry, primaryOffset, { record })
        }
    }

    /// ``scanIndex(_:_:limit:order:after:readRecords:_:)`` with the stored record lent rather than
    /// decoded: its key (keyspace prefix included) and value, from the entry when the index is
    /// covering, else read by key (empty when not `readRecords`). Valid only inside `body`.
    @inlinable
    func scanIndexRows<R: Record>(
        _ index: RecordIndex<R>, _ query: RecordQuery, limit: Int?, order: Order, after position: [UInt8]? = nil, readRecords: Bool = true,
        _ body: (_ entry: UnsafeRawBufferPointer, _ primaryOffset: Int, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let source = try indexSource(index, query)
        if let previous = source.throughPrevious {
            return try scanThroughPrevious(index, previous, query, limit: limit, order: order, after: position, body)
        }
        if position == nil && query.isEquality {
            return try scanEqualEntries(index, source, limit: limit, order: order, readRecords: readRecords, { $0.write(contentsOf: query.prefix) }, body)
        }
        var ranges = query.ranges(keyspacePrefix: source.prefix)
        if let position {
            let key = source.prefix + position
            ranges = ranges.map { order == .ascending ? $0.above(key) : $0.below(key) }
        }
        try withRecordKeyBuffer(R.self) { recordKey, keyspacePrefixLength in
            try scan(ranges, order: order, limit: limit) { key, value in
                try visitEntry(index, source, key: key, value: value, recordKey: recordKey, keyspacePrefixLength: keyspacePrefixLength,
                               readRecords: readRecords, body)
            }
        }
    }

    /// ``scanIndexRows(_:_:limit:order:after:readRecords:_:)`` for an equality on the index's
    /// leading components, whose encodings `writeValues` appends in order (as the macro's
    /// generated queries do): nothing is allocated but what `body` keeps.
    @inlinable
    func scanIndexRows<R: Record>(
        _ index: RecordIndex<R>, equal writeValues: (inout KeyWriter) -> Void, limit: Int?, order: Order, readRecords: Bool = true,
        everyComponent: Bool = false, _ body: (_ entry: UnsafeRawBufferPointer, _ primaryOffset: Int, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let source = try indexSource(index, nil)
        guard let previous = source.throughPrevious else {
            return try scanEqualEntries(index, source, limit: limit, order: order, readRecords: readRecords, everyComponent: everyComponent, writeValues, body)
        }
        // Being built over a previous generation of other components: the general path, with the
        // values as a query (rare, and it reads whole groups anyway; the buffer goes with the query).
        let (values, count) = try equalityBound(index, after: [], everyComponent: everyComponent, writeValues)
        return try scanThroughPrevious(index, previous, RecordQuery(equalityPrefix: values, components: count), limit: limit, order: order, after: nil, body)
    }

    /// The entries of `source` whose values start with those `writeValues` appends: one range
    /// `[p, p + FF)` (``KeyRange/components(prefix:_:)``), its bound built in a buffer this
    /// transaction reuses (``takeBuffer()``), so a lookup allocates nothing of its own.
    @inlinable
    func scanEqualEntries<R: Record>(
        _ index: RecordIndex<R>, _ source: IndexSource, limit: Int?, order: Order, readRecords: Bool, everyComponent: Bool = false,
        _ writeValues: (inout KeyWriter) -> Void,
        _ body: (_ entry: UnsafeRawBufferPointer, _ primaryOffset: Int, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var (bound, _) = try equalityBound(index, after: source.prefix, everyComponent: everyComponent, writeValues)
        defer { giveBack(&bound) }
        if let limit, limit <= 0 { return }  // as every query: nothing, not an error
        // The entries are [bound, bound + FF): one side is given to the engine to seek to, the
        // other is checked here (one buffer, not two). Starting with the bound is not enough:
        // ("a") = 02 61 00 starts ("a\0") = 02 61 00 FF 00, so a key whose next byte is FF is past
        // the range (after a whole component comes a type code, never FF).
        let matched = bound.count
        let range: KeyRange
        if order == .descending {
            bound.append(0xFF)
            range = KeyRange(upper: .exclusive(bound))
        } else {
            range = KeyRange(lower: .inclusive(bound))
        }
        try bound.withUnsafeBytes { bound in
            let entries = UnsafeRawBufferPointer(rebasing: bound[..<matched])
            try withRecordKeyBuffer(R.self) { recordKey, keyspacePrefixLength in
                try reader.scan(range, reverse: order == .descending, limit: limit) { key, value in
                    guard key.count >= matched, key.count == matched || key[matched] != 0xFF,
                          Bytewise.compare(UnsafeRawBufferPointer(rebasing: key[..<matched]), entries) == 0 else { return false }
                    return try visitEntry(index, source, key: key, value: value, recordKey: recordKey, keyspacePrefixLength: keyspacePrefixLength,
                                          readRecords: readRecords, body)
                }
            }
        }
    }

    /// `prefix`, then the values `writeValues` appends, in a buffer taken from this transaction
    /// (``takeBuffer()``), with how many values there are, checked against `index`.
    @inlinable
    func equalityBound<R: Record>(_ index: RecordIndex<R>, after prefix: [UInt8], everyComponent: Bool,
                                  _ writeValues: (inout KeyWriter) -> Void) throws -> (bytes: [UInt8], count: Int) {
        var values = KeyWriter(appendingTo: takeBuffer())
        values.write(contentsOf: prefix)
        writeValues(&values)
        let bytes = values.bytes
        values.bytes = []
        let count = try bytes.withUnsafeBytes { try Self.componentCount(of: UnsafeRawBufferPointer(rebasing: $0[prefix.count...]), index: index) }
        try Self.check(given: count, everyComponent: everyComponent, index)
        return (bytes, count)
    }

    /// Runs `body` with room for a record key on the stack (an entry, and so the primary key
    /// inside it, is at most a key long), its first bytes `R`'s keyspace prefix, and that prefix's
    /// length; nothing when no key of `R` fits (so no record, and no entry, exists).
    @inlinable
    func withRecordKeyBuffer<R: Record>(_: R.Type, _ body: (UnsafeMutableRawBufferPointer, Int) throws -> Void) throws {
        let keyspacePrefix = prefix(R.self)
        guard keyspacePrefix.count < KeyLimits.maxKeyLength else { return }
        try withUnsafeTemporaryAllocation(byteCount: KeyLimits.maxKeyLength, alignment: 1) { recordKey in
            keyspacePrefix.withUnsafeBytes { recordKey.copyMemory(from: $0) }
            try body(recordKey, keyspacePrefix.count)
        }
    }

    /// One entry of an index scan handed to `body`: the entry key without the index prefix,
    /// where its primary key starts, and unless `readRecords` is false, the record's key
    /// (assembled in `recordKey` after the keyspace prefix) and stored value, from the entry
    /// when covering, else read by key.
    @inlinable
    func visitEntry<R: Record>(
        _ index: RecordIndex<R>, _ source: IndexSource, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
        recordKey: UnsafeMutableRawBufferPointer, keyspacePrefixLength: Int, readRecords: Bool,
        _ body: (_ entry: UnsafeRawBufferPointer, _ primaryOffset: Int, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws -> Bool {
        let suffix = UnsafeRawBufferPointer(rebasing: key[source.prefix.count...])
        let primaryOffset = try Self.leadingLength(source.components, of: suffix, index: index.name, of: R.self)
        guard readRecords else {
            return try body(suffix, primaryOffset, UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(start: nil, count: 0))
        }
        let primary = UnsafeRawBufferPointer(rebasing: suffix[primaryOffset...])
        let length = keyspacePrefixLength + primary.count
        guard length <= recordKey.count else {
            throw RecordError.corruptIndex(type: "\(R.self)", index: index.name, detail: "an entry's primary key is longer than a key")
        }
        UnsafeMutableRawBufferPointer(rebasing: recordKey[keyspacePrefixLength..<length]).copyMemory(from: primary)
        let k = UnsafeRawBufferPointer(rebasing: recordKey[..<length])
        if source.covering { return try body(suffix, primaryOffset, k, value) }
        return try reader.withValue(forKey: k) { stored in
            guard let stored else {
                throw RecordError.corruptIndex(type: "\(R.self)", index: index.name, detail: "an entry names a record that is not stored")
            }
            return try body(suffix, primaryOffset, k, stored)
        }
    }

    /// Refuses more values than `index` has components, or fewer than all when `everyComponent`.
    @inlinable
    static func check<R: Record>(given: Int, everyComponent: Bool, _ index: RecordIndex<R>) throws {
        let components = index.components.count
        if everyComponent ? given != components : given > components {
            throw RecordError.invalidQuery(type: "\(R.self)", detail: everyComponent ? "fetch on index \(index.name) needs every component, by equality"
                                            : "\(given) components given, index \(index.name) has \(components)")
        }
    }

    /// How many components the encoded values `bytes` hold; bytes that are no encoding are an
    /// invalid query on `index`.
    @inlinable
    static func componentCount<R: Record>(of bytes: UnsafeRawBufferPointer, index: RecordIndex<R>) throws -> Int {
        var reader = KeyReader(bytes)
        var count = 0
        do {
            while reader.offset < bytes.count {
                try reader.skipComponent()
                count += 1
            }
        } catch {
            throw RecordError.invalidQuery(type: "\(R.self)", detail: "the values given for index \(index.name) are not key components: \(error)")
        }
        return count
    }

    /// Whether `index` can be queried in this transaction: readable, or being built with the
    /// generation it replaces standing in (as ``indexSource(_:_:totals:)`` reads it).
    @usableFromInline
    func isQueryable<R: Record>(_ index: RecordIndex<R>) throws -> Bool {
        let indexes = try prepare(R.self)
        for i in indexes.indices where indexes[i].name == index.name { return indexes[i].isQueryable }
        return true  // not declared: the read throws what an undeclared index throws
    }

    /// Where the entries of `index` are read, after the checks every index query makes: declared,
    /// readable (or standing in for by a previous generation), and `query` (when given) of the
    /// index's shape. Record queries read an index of entries, ``RecordIndex/total(in:_:)`` one of
    /// totals (`totals`); each refuses the other.
    @usableFromInline
    func indexSource<R: Record>(_ index: RecordIndex<R>, _ query: RecordQuery?, totals: Bool = false) throws -> IndexSource {
        let indexes = try prepare(R.self)
        // Fields read in place, by position: firstIndex(where:) and whole-ActiveIndex reads
        // copied it twice, a twentieth of a covering lookup's instructions.
        for i in indexes.indices where indexes[i].name == index.name {
            if indexes[i].totals != totals {
                throw RecordError.invalidIndex(type: "\(R.self)", index: index.name, detail: totals
                    ? "it keeps an entry per record, not totals: count its records with count(in:)"
                    : "it keeps totals (\(index.kind)), not records: read it with total(in:) or totals(in:)")
            }
            let state = indexes[i].state
            guard indexes[i].isQueryable else {
                throw RecordError.indexNotReady(type: "\(R.self)", index: index.name, state: state)
            }
            if let query { try validate(query, for: index) }
            guard state != .readable, let previous = indexes[i].previous else {
                return IndexSource(prefix: indexes[i].prefix, components: indexes[i].componentCount, covering: indexes[i].covering, throughPrevious: nil)
            }
            // Being built: the generation it replaces is read instead, as it is when only unique or
            // covering changed, else through scanThroughPrevious.
            return IndexSource(prefix: previous.prefix, components: previous.definition.components.count, covering: previous.definition.covering,
                               throughPrevious: previous.sameComponents ? nil : previous)
        }
        throw RecordError.invalidIndex(type: "\(R.self)", index: index.name, detail: "\(R.self).indexes does not declare it")
    }

    /// The length of the first `count` component values of `bytes` (an entry key without its
    /// index prefix, or a query's prefix): after all of an entry's values, where its primary key starts.
    @usableFromInline
    static func leadingLength<R: Record>(_ count: Int, of bytes: UnsafeRawBufferPointer, index: String, of _: R.Type) throws -> Int {
        var reader = KeyReader(bytes)
        do {
            for _ in 0..<count { try reader.skipComponent() }
        } catch {
            throw RecordError.corruptIndex(type: "\(R.self)", index: index, detail: "entry key: \(error)")
        }
        return reader.offset
    }

    /// A query on an index being built whose components differ from the readable generation it
    /// replaces. That generation orders its entries by the components both share (at least the
    /// first), so its entries matching the query on those are read in `order`, one group of equal
    /// shared values at a time: each group's records are read once, their new entries computed,
    /// filtered by the whole query and sorted, and returned until the limit. Time and memory go
    /// with the groups read (one group when the query fixes every shared component), not with the
    /// limit alone. Records a build would leave without entries (damaged, or of a version without
    /// migration) are left out, as the build leaves them out.
    @usableFromInline
    func scanThroughPrevious<R: Record>(
        _ index: RecordIndex<R>, _ previous: PreviousIndex, _ query: RecordQuery, limit: Int?, order: Order, after position: [UInt8]?,
        _ body: (_ entry: UnsafeRawBufferPointer, _ primaryOffset: Int, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        func leading(_ count: Int, of bytes: UnsafeRawBufferPointer) throws -> Int {
            try Self.leadingLength(count, of: bytes, index: index.name, of: R.self)
        }
        var candidates: [KeyRange]
        if query.componentTypes.count <= previous.shared {
            candidates = query.ranges(keyspacePrefix: previous.prefix)
        } else {
            // The query goes past the shared components, so those are all equalities: their
            // encodings lead the query's prefix.
            let length = try query.prefix.withUnsafeBytes { try leading(previous.shared, of: $0) }
            candidates = query.isEmpty ? [] : [KeyRange.components(prefix: previous.prefix + query.prefix[..<length])]
        }
        if let position {  // start at the position's group: entries after the position may share its values
            let group = previous.prefix + position[..<(try position.withUnsafeBytes { try leading(previous.shared, of: $0) })]
            candidates = candidates.map { order == .ascending ? $0.above(group) : $0.below(group + [0xFF]) }
        }
        let wanted = query.ranges(keyspacePrefix: [])
        let keyspacePrefix = prefix(R.self)
        let components = previous.definition.components.count
        var remaining = max(0, limit ?? Int.max)
        var group: [UInt8] = []
        var rows: [(entry: [UInt8], primaryOffset: Int, key: [UInt8], value: [UInt8])] = []
        var stopped = false
        guard remaining > 0 else { return }

        /// Returns the group's rows in order; `false` once the limit is reached or `body` stops.
        func flush() throws -> Bool {
            rows.sort { order == .ascending ? $0.entry.lexicographicallyPrecedes($1.entry) : $1.entry.lexicographicallyPrecedes($0.entry) }
            defer { rows.removeAll(keepingCapacity: true) }
            for row in rows {
                let goOn = try row.entry.withUnsafeBytes { e in
                    try row.key.withUnsafeBytes { k in try row.value.withUnsafeBytes { v in try body(e, row.primaryOffset, k, v) } }
                }
                remaining -= 1
                if !goOn || remaining == 0 { return false }
            }
            return true
        }

        try scan(candidates, order: order, limit: nil) { key, value in
            let suffix = UnsafeRawBufferPointer(rebasing: key[previous.prefix.count...])
            let shared = try leading(previous.shared, of: suffix)
            if !suffix[..<shared].elementsEqual(group) {
                if try !flush() { stopped = true; return false }
                group = Array(suffix[..<shared])
            }
            let primary = Array(suffix[try leading(components, of: suffix)...])
            let recordKey = keyspacePrefix + primary
            let stored: [UInt8]
            if previous.definition.covering {
                stored = Array(value)
            } else {
                guard let value = try reader.get(recordKey) else {
                    throw RecordError.corruptIndex(type: "\(R.self)", index: index.name, detail: "an entry of the previous generation names a record that is not stored")
                }
                stored = value
            }
            let record: R
            do {
                record = try recordKey.withUnsafeBytes { k in try stored.withUnsafeBytes { try decode(R.self, key: k, value: $0) } }
            } catch let error as RecordError where error.isUnreadableRecord {
                return true
            }
            // This group's entries only: their shared values are the group's (a byte prefix is not
            // enough, as in scanEqualEntries).
            for values in index.entryValues(of: record) {
                guard values.bytes.starts(with: group),
                      try values.bytes.withUnsafeBytes({ try leading(previous.shared, of: $0) }) == group.count else { continue }
                let entry = values.bytes + primary
                guard wanted.contains(where: { $0.contains(entry) }) else { continue }
                if let position {
                    let beyond = order == .ascending ? position.lexicographicallyPrecedes(entry) : entry.lexicographicallyPrecedes(position)
                    if !beyond { continue }
                }
                rows.append((entry, values.bytes.count, recordKey, stored))
            }
            return true
        }
        if !stopped { _ = try flush() }
    }

    /// Checks a query's shape against the index's components, as ``validate(_:for:)`` does for keys.
    @usableFromInline
    func validate<R: Record>(_ query: RecordQuery, for index: RecordIndex<R>) throws {
        if query.continuesAfterComparison {
            throw RecordError.invalidQuery(type: "\(R.self)", detail: "only the last component of a query on index \(index.name) may be a comparison")
        }
        guard query.componentTypes.count <= index.components.count else {
            throw RecordError.invalidQuery(type: "\(R.self)", detail: "\(query.componentTypes.count) components given, index \(index.name) has \(index.components.count)")
        }
        for (i, type) in query.componentTypes.enumerated() where type != index.components[i].typeID {
            let component = index.components[i]
            throw RecordError.invalidQuery(type: "\(R.self)", detail: "component \(i) of index \(index.name) (\(component.name)) is \(component.typeName)")
        }
    }
}

/// Where an index query reads its entries (``TransactionContext/indexSource(_:_:)``).
@usableFromInline
struct IndexSource {
    /// The entries' prefix: the index's, or the previous generation's.
    @usableFromInline let prefix: [UInt8]
    /// The values before the primary key in each entry.
    @usableFromInline let components: Int
    /// Whether each entry holds the record.
    @usableFromInline let covering: Bool
    /// Set when the query must go through a previous generation of other components.
    @usableFromInline let throughPrevious: PreviousIndex?

    init(prefix: [UInt8], components: Int, covering: Bool, throughPrevious: PreviousIndex?) {
        (self.prefix, self.components, self.covering, self.throughPrevious) = (prefix, components, covering, throughPrevious)
    }
}
