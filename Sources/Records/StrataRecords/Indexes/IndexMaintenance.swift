import StrataEngine
import StrataKeyCodec

// Index entries are written in the transaction of the record write that makes them, so an index
// never disagrees with its records: a rolled-back transaction leaves neither. To remove a
// record's old entries the old record is read and decoded first; a stored record that cannot be
// decoded (corrupt bytes, a version without migration) refuses the overwrite or delete with that
// error rather than leave entries behind.

extension RecordIndex {
    /// `record`'s values in the entry `bytes` (concatenated components), as text for messages.
    @usableFromInline
    func describe(_ record: R, entry bytes: [UInt8]) -> String {
        var parts: [String] = []
        let raw = bytes
        raw.withUnsafeBytes { buffer in
            var reader = KeyReader(buffer)
            for component in components {
                let start = reader.offset
                guard (try? reader.skipComponent()) != nil else { return }
                parts.append(component.describe(record, raw[start..<reader.offset]))
            }
        }
        return components.count == 1 ? (parts.first ?? "?") : "(" + parts.joined(separator: ", ") + ")"
    }
}

extension TransactionContext {
    /// `insert` of a type with indexes: checks unique indexes and entry lengths first, then writes
    /// the record, removes the old record's entries it no longer has and adds the new ones.
    /// Returns whether it replaced a stored record. The change is recorded for observers once the
    /// record is put (its entries follow in the same transaction).
    ///
    /// Inlinable, so that it is specialized for the record type. Each index's maintainer writes
    /// the new record's entries and the old one's straight into the transaction's reusable buffer
    /// (``EntryWrites``), where they are compared; a single-valued index allocates nothing.
    ///
    /// `absent`: the caller knows no record is stored under `key` (a bulk import that looked the
    /// batch's keys up with one scan), so the old record is not read.
    @inlinable @discardableResult
    func insertIndexed<R: Record>(_ record: R, key: ArraySlice<UInt8>, value: ArraySlice<UInt8>, indexes: [ActiveIndex], writer: any KeyValueWriter,
                                  absent: Bool = false) throws -> R? {
        // While a changed definition is built, its previous generation's entries are kept from the stored bytes.
        let keepsPrevious = indexes.contains { $0.previous != nil }
        let stored = absent ? nil : try storedRecord(R.self, key: key, withValue: keepsPrevious)
        let (old, oldValue) = (stored?.record, stored?.value)
        let primary = key.dropFirst(prefix(R.self).count)
        let declared = R.indexes
        let plan = entryWrites ?? EntryWrites()
        entryWrites = nil  // a write made while this one runs (none is expected) takes its own
        defer {
            plan.removeAll()
            entryWrites = plan
        }
        // Every kind alike: the maintainer adds the new record's entries and the old one's; the
        // entries both have are kept as they are (a covering one is rewritten: the value changed).
        for index in indexes {
            if index.totals {
                plan.totals += try totalWrites(declared[index.position], index, key: key, new: record, old: old)
                continue
            }
            let writeEntries = declared[index.position].writeEntries  // not the whole declaration: a copy costs a retain per member
            plan.entries.start(prefix: index.prefix, primary: primary)
            let new = plan.collect { writeEntries(record, &$0) }
            let stale = old.map { old in plan.collect { writeEntries(old, &$0) } } ?? 0..<0
            let (hashedNew, hashedStale) = (plan.hashedKeys(new), plan.hashedKeys(stale))
            for position in new {
                let entry = plan.entries.found[position]
                try checkEntryLength(R.self, index, entry.key.count)
                let kept = plan.contains(position, in: stale, hashed: hashedStale)
                if index.unique && !entry.isNil && !kept {
                    let bound = Array(plan.keys.bytes[entry.key.lowerBound..<entry.valuesEnd])
                    try checkUnique(R.self, index, bound: bound, primary: primary) { declared[index.position].describe(record, entry: Array(bound[index.prefix.count...])) }
                }
                if index.covering || !kept { plan.writes.append(.init(entry.key, index.covering ? .putValue : .put)) }
            }
            for position in stale where !plan.contains(position, in: new, hashed: hashedNew) {
                plan.writes.append(.init(plan.entries.found[position].key, .delete))
            }
        }
        let dropped = keepsPrevious ? try previousGenerationWrites(R.self, indexes, key: Array(key), value: Array(value), old: oldValue, into: plan) : []
        try key.withUnsafeBytes { k in try value.withUnsafeBytes { try writer.put($0, forKey: k) } }
        if recordsChanges { recordChange(R.self, key: key, old != nil ? .update : .insert, record: record) }
        try completing {
            try plan.apply(to: writer, value: value)
            for name in dropped { try dropPrevious(R.self, index: name, writer: writer) }
        }
        return old
    }

    /// Throws ``RecordError/indexKeyTooLarge(type:index:length:limit:)`` for an entry key of `length` bytes over the limit.
    @inlinable
    func checkEntryLength<R: Record>(_: R.Type, _ index: ActiveIndex, _ length: Int) throws {
        guard length <= KeyLimits.maxKeyLength else {
            throw RecordError.indexKeyTooLarge(type: "\(R.self)", index: index.name, length: length, limit: KeyLimits.maxKeyLength)
        }
    }

    /// The writes of the previous generations of changed definitions (their entries are kept
    /// while the new ones are built, computed from the stored bytes), added to `plan` once the
    /// typed checks have passed; returns the indexes whose previous generation cannot be kept for
    /// this record and must be retired.
    @usableFromInline
    func previousGenerationWrites<R: Record>(_: R.Type, _ indexes: [ActiveIndex], key: [UInt8], value: [UInt8], old: [UInt8]?,
                                             into plan: EntryWrites) throws -> [String] {
        var dropped: [String] = []
        for index in indexes {
            guard let generation = index.previous else { continue }
            guard let (new, stale) = try previousEntries(R.self, generation, key: key, value: value, old: old) else {
                dropped.append(index.name)
                continue
            }
            let covering = generation.definition.covering
            for entryKey in stale where !new.contains(entryKey) { plan.add(entryKey, .delete) }
            for entryKey in new where covering || !stale.contains(entryKey) { plan.add(entryKey, covering ? .putValue : .put) }
        }
        return dropped
    }

    /// A previous generation's entries for the record stored as `key` and `value` (none when
    /// `value` is `nil`) and for the record it replaces (`old`); `nil` when the generation cannot
    /// be kept for them: a field the catalog cannot read, an entry over the key limit, or an
    /// entry of the old record that is not stored (it was written from another value than its
    /// stored bytes give: a migrated record, a component that is not the field of its name).
    private func previousEntries<R: Record>(_: R.Type, _ previous: PreviousIndex, key: [UInt8], value: [UInt8]?,
                                            old: [UInt8]?) throws -> (new: [[UInt8]], old: [[UInt8]])? {
        let prefixLength = prefix(R.self).count
        func entries(_ value: [UInt8]?) -> [[UInt8]]? {
            guard let value else { return [] }
            let result = key.withUnsafeBytes { k in
                value.withUnsafeBytes { v in Result { () throws(IndexUnverifiable) in try previous.entries(key: k, value: v, keyspacePrefixLength: prefixLength) } }
            }
            guard case .success(let entries) = result, entries.allSatisfy({ $0.count <= KeyLimits.maxKeyLength }) else { return nil }
            return entries
        }
        guard let new = entries(value), let stale = entries(old) else { return nil }
        for entryKey in stale where try reader.get(entryKey) == nil { return nil }
        return (new, stale)
    }

    /// Retires the previous generation of index `name` in this transaction (a record it cannot be
    /// kept for was written): queries on the index then wait for its build, as without one.
    @usableFromInline
    func dropPrevious<R: Record>(_: R.Type, index name: String, writer: any KeyValueWriter) throws {
        let keyspace = R.recordType.keyspace
        let definitionKey = SystemKey.index(keyspace: keyspace, name: name)
        if let bytes = try reader.get(definitionKey) {
            var stored = try bytes.withUnsafeBytes { try StoredIndex(decoding: $0, keyspace: keyspace, name: name) }
            if stored.previous != nil {
                stored.retirePrevious()
                try writer.put(stored.encoded(), forKey: definitionKey)
            }
        }
        let id = ObjectIdentifier(R.self)
        if let i = checked.firstIndex(where: { $0.type == id }), let j = checked[i].indexes.firstIndex(where: { $0.name == name }) {
            checked[i].indexes[j].previous = nil
        }
    }

    /// The key of `record`'s entry `entry` in `index`, after the checks of ``checkEntry(_:_:_:_:keyLength:primary:isNew:)``.
    func checkedEntryKey<R: Record>(_ record: R, _ declaration: RecordIndex<R>, _ index: ActiveIndex, _ entry: IndexValue,
                                    primary: ArraySlice<UInt8>, isNew: Bool) throws -> [UInt8] {
        let entryKey = Self.entryKey(index.prefix, entry.bytes, primary)
        try checkEntry(record, declaration, index, entry, keyLength: entryKey.count, primary: primary, isNew: isNew)
        return entryKey
    }

    /// The checks every write of an entry (its key `keyLength` bytes long) makes: the key limit,
    /// and for a unique index (a new entry without `nil`) that no other record has the values.
    @usableFromInline
    func checkEntry<R: Record>(_ record: R, _ declaration: RecordIndex<R>, _ index: ActiveIndex, _ entry: IndexValue,
                               keyLength: Int, primary: ArraySlice<UInt8>, isNew: Bool) throws {
        try checkEntryLength(R.self, index, keyLength)
        if index.unique && !entry.isNil && isNew {
            try checkUnique(R.self, index, bound: index.prefix + entry.bytes, primary: primary) { declaration.describe(record, entry: entry.bytes) }
        }
    }

    /// `prefix ‖ values ‖ primary`, allocated once.
    static func entryKey(_ prefix: [UInt8], _ values: [UInt8], _ primary: ArraySlice<UInt8>) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(prefix.count + values.count + primary.count)
        key += prefix
        key += values
        key += primary
        return key
    }

    /// Deletes the record at `key` and its index entries; returns whether there was one.
    @usableFromInline
    func deleteIndexed<R: Record>(_: R.Type, key: [UInt8], indexes: [ActiveIndex], writer: any KeyValueWriter) throws -> R? {
        guard let old = try storedRecord(R.self, key: key[...], withValue: indexes.contains { $0.previous != nil }) else { return nil }
        let totals = try totalsRemoving(old.record, key: key, indexes: indexes)  // its checks refuse before anything is written
        try completing {
            try deleteEntries(of: old.record, key: key, value: old.value, indexes: indexes, totals: totals, writer: writer)
            try writer.delete(key)
        }
        return old.record
    }

    /// Deletes every record in `range` with its index entries, in batches (writes wait until a
    /// batch has been read: bytes lent by a scan must not be written under). Each batch starts
    /// after the last key of the one before, so deleted keys are never walked again (LevelDB's
    /// tombstones) and an engine that fails to delete cannot make the loop go on for ever.
    @usableFromInline
    func clearIndexed<R: Record>(_: R.Type, _ range: KeyRange, indexes: [ActiveIndex], writer: any KeyValueWriter) throws -> Int {
        var indexes = indexes
        var removed = 0
        var remaining = range
        while true {
            let keepValues = indexes.contains { $0.previous != nil }
            var batch: [(key: [UInt8], record: R, value: [UInt8]?)] = []
            try reader.scan(remaining, reverse: false, limit: 256) { key, value in
                batch.append((Array(key), try decode(R.self, key: key, value: value), keepValues ? Array(value) : nil))
                return true
            }
            if batch.isEmpty { return removed }
            for (key, record, value) in batch {
                let totals = try totalsRemoving(record, key: key, indexes: indexes)
                try completing {
                    try deleteEntries(of: record, key: key, value: value, indexes: indexes, totals: totals, writer: writer)
                    try writer.delete(key)
                }
                if recordsChanges { recordChange(R.self, key: key, .delete) }
            }
            removed += batch.count
            remaining = remaining.above(batch[batch.count - 1].key)
            if keepValues { indexes = try prepare(R.self) }  // a previous generation may have been retired
        }
    }

    /// The writes that take `record`, stored as `key`, from the totals of `indexes` of totals.
    private func totalsRemoving<R: Record>(_ record: R, key: [UInt8], indexes: [ActiveIndex]) throws -> [(key: [UInt8], value: [UInt8]?)] {
        var totals: [(key: [UInt8], value: [UInt8]?)] = []
        for index in indexes where index.totals {
            totals += try totalWrites(R.indexes[index.position], index, key: key, new: nil, old: record)
        }
        return totals
    }

    /// Deletes the entries of `record`, stored as `key` (and `value`, given when an index has a
    /// previous generation), in each of `indexes`, and writes `totals` (``totalsRemoving(_:key:indexes:)``).
    private func deleteEntries<R: Record>(of record: R, key: [UInt8], value: [UInt8]?, indexes: [ActiveIndex],
                                          totals: [(key: [UInt8], value: [UInt8]?)], writer: any KeyValueWriter) throws {
        let declared = R.indexes
        let primary = key.dropFirst(prefix(R.self).count)
        var previousEntries: [[UInt8]] = []
        var dropped: [String] = []
        if let value {
            for index in indexes {
                guard let previous = index.previous else { continue }
                if let (_, old) = try self.previousEntries(R.self, previous, key: key, value: nil, old: value) {
                    previousEntries += old
                } else {
                    dropped.append(index.name)
                }
            }
        }
        for index in indexes where !index.totals {
            for entry in declared[index.position].entryValues(of: record) { try writer.delete(Self.entryKey(index.prefix, entry.bytes, primary)) }
        }
        try EntryWrites.apply(totals: totals, to: writer)
        for entryKey in previousEntries { try writer.delete(entryKey) }
        for name in dropped { try dropPrevious(R.self, index: name, writer: writer) }
    }

    /// The record stored at `key`, decoded (its index entries are derived from it), with its
    /// stored bytes when `withValue` (a previous generation's entries are derived from those).
    /// Inlinable, so that the decoding is specialized for the record type.
    @inlinable
    func storedRecord<R: Record>(_: R.Type, key: ArraySlice<UInt8>, withValue: Bool) throws -> (record: R, value: [UInt8]?)? {
        try key.withUnsafeBytes { k in
            try reader.withValue(forKey: k) { value in
                try value.map { (try decode(R.self, key: k, value: $0), withValue ? Array($0) : nil) }
            }
        }
    }

    /// Throws ``RecordError/uniqueViolation(type:index:value:)`` when an entry of another record
    /// starts with `bound` (the index's prefix and the values). Writers are serialized, so the
    /// check is exact.
    @usableFromInline
    func checkUnique<R: Record>(_: R.Type, _ index: ActiveIndex, bound start: [UInt8], primary: ArraySlice<UInt8>,
                                describe: () -> String) throws {
        var taken = false
        try reader.scan(KeyRange.components(prefix: start), reverse: false, limit: 2) { key, _ in
            if !key[start.count...].elementsEqual(primary) { taken = true }
            return !taken
        }
        if taken { throw RecordError.uniqueViolation(type: "\(R.self)", index: index.name, value: describe()) }
    }
}
