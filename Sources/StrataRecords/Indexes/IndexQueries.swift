import StrataEngine
import StrataKeyCodec

/// Queries on an index, with the rules of queries on the key: equality on leading components, a
/// comparison on the last one given (``RecordQuery``), a limit, and nearest-first order unless
/// `order:` is given. Each is one seek plus the entries it returns; a non-covering index reads
/// each record by its key (one point read per result), a covering one reads it from the entry.
/// An index that is not readable throws ``RecordError/indexNotReady(type:index:state:)``.
extension RecordIndex {
    /// The records whose entries match `query`, at most `limit`, in index order (records with
    /// equal values in primary-key order).
    public func select(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil) throws -> [R] {
        var records: [R] = []
        try ctx.scanIndex(self, query, limit: limit, order: order ?? query.defaultOrder) { _, _, record in
            records.append(record())
            return true
        }
        return records
    }

    /// Visits the matching records one at a time; `body` returns `false` to stop.
    public func forEach(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil,
                        _ body: (R) throws -> Bool) throws {
        try ctx.scanIndex(self, query, limit: limit, order: order ?? query.defaultOrder) { _, _, record in try body(record()) }
    }

    /// Visits the matching records as views over the engine's bytes (``RecordView``), valid only
    /// inside `body`; `body` returns `false` to stop. The checksum is verified before `body` sees a
    /// view. A covering index lends the record from its entry; otherwise each record is read by key.
    public func forEachView(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil,
                            _ body: (RecordView<R>) throws -> Bool) throws {
        let prefixLength = ctx.prefix(R.self).count
        let sameFields = ctx.sameFields(R.self)
        try ctx.scanIndexRows(self, query, limit: limit, order: order ?? query.defaultOrder) { _, _, key, value in
            try body(try ctx.makeView(R.self, key: key, value: value, prefixLength: prefixLength, sameFields: sameFields))
        }
    }

    /// How many entries match `query` (records are not read). A multi-valued index counts a
    /// record once per matching element.
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
    public func primaryKeys(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil) throws -> [EncodedIndexKey] {
        var keys: [EncodedIndexKey] = []
        try ctx.scanIndex(self, query, limit: limit, order: order ?? query.defaultOrder, readRecords: false) { entry, primary, _ in
            keys.append(EncodedIndexKey(bytes: Array(entry[primary...])))
            return true
        }
        return keys
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
    func scanIndexRows<R: Record>(
        _ index: RecordIndex<R>, _ query: RecordQuery, limit: Int?, order: Order, after position: [UInt8]? = nil, readRecords: Bool = true,
        _ body: (_ entry: UnsafeRawBufferPointer, _ primaryOffset: Int, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        guard let active = try prepare(R.self).first(where: { $0.name == index.name }) else {
            throw RecordError.invalidIndex(type: "\(R.self)", index: index.name, detail: "\(R.self).indexes does not declare it")
        }
        guard active.state == .readable else { throw RecordError.indexNotReady(type: "\(R.self)", index: index.name, state: active.state) }
        try validate(query, for: index)
        let keyspacePrefix = prefix(R.self)
        var recordKey = keyspacePrefix
        var ranges = query.ranges(keyspacePrefix: active.prefix)
        if let position {
            let key = active.prefix + position
            ranges = ranges.map { order == .ascending ? $0.above(key) : $0.below(key) }
        }
        try scan(ranges, order: order, limit: limit) { key, value in
            let suffix = UnsafeRawBufferPointer(rebasing: key[active.prefix.count...])
            var entry = KeyReader(suffix)
            do {
                for _ in 0..<active.componentCount { try entry.skipComponent() }
            } catch {
                throw RecordError.corruptIndex(type: "\(R.self)", index: index.name, detail: "entry key: \(error)")
            }
            let primaryOffset = entry.offset
            guard readRecords else { return try body(suffix, primaryOffset, UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(start: nil, count: 0)) }
            recordKey.removeSubrange(keyspacePrefix.count...)
            recordKey += suffix[primaryOffset...]
            return try recordKey.withUnsafeBytes { k in
                if active.covering { return try body(suffix, primaryOffset, k, value) }
                return try reader.withValue(forKey: k) { stored in
                    guard let stored else {
                        throw RecordError.corruptIndex(type: "\(R.self)", index: index.name, detail: "an entry names a record that is not stored")
                    }
                    return try body(suffix, primaryOffset, k, stored)
                }
            }
        }
    }

    /// Checks a query's shape against the index's components, as ``validate(_:for:)`` does for keys.
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
