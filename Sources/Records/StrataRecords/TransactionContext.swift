@_spi(StrataInternals) import StrataEngine
import StrataKeyCodec

/// The record operations of one transaction. Valid only inside the closure it is passed to.
///
/// Every query seeks straight to its first key and stops after its last: it costs
/// O(log n + k) for k results, whatever the store's size.
public final class TransactionContext {
    // The caches and writers below are `@exclusivity(unchecked)`: a context belongs to one
    // transaction, whose body runs on one thread, and no access to them overlaps another (each
    // is read or replaced, never lent across a call that reaches it again). Checked, they cost
    // a runtime call per access: twelve per insert (measured with callgrind).
    @usableFromInline unowned let store: Store
    @usableFromInline let reader: any KeyValueReader
    @usableFromInline let writer: (any KeyValueWriter)?
    /// Record types whose keyspace was checked in this transaction, with the other schema
    /// versions the catalog says have the type's exact fields (see ``Catalog/check(_:in:writer:)``).
    /// With them, the type's indexes as this transaction sees them (empty for most types).
    @exclusivity(unchecked) @usableFromInline var checked: [(type: ObjectIdentifier, sameFields: Set<UInt32>, indexes: [ActiveIndex])] = []
    /// Reused for encoding keys and values without allocating per record.
    @exclusivity(unchecked) @usableFromInline var keyWriter = KeyWriter(capacity: 64)
    /// The buffer `insert` encodes records into, kept from one insert to the next: empty, or the
    /// last record encoded, whose type `prefixOf` names (the buffer starts with its prefix). The
    /// two travel together, so an insert made inside another cannot separate them.
    @exclusivity(unchecked) @usableFromInline var recordBuffer: (writer: FieldWriter, prefixOf: ObjectIdentifier?) = (FieldWriter(), nil)
    /// A byte buffer an index query borrows for its bound (``takeBuffer()``).
    @exclusivity(unchecked) @usableFromInline var spareBuffer: [UInt8]?
    /// The entry keys of an indexed write, reused from one write to the next.
    @exclusivity(unchecked) @usableFromInline var entryWrites: EntryWrites?
    /// The record changes this transaction made that ``changeInterest`` wants, in order, when an
    /// observer is registered (``TransactionObserver``) or a query observed; `nil` otherwise. (The
    /// change feed's are encoded into ``changeLog`` instead.)
    @exclusivity(unchecked) @usableFromInline var changes: [RecordChange]?
    /// Whether ``changes`` keep the records written (an observed query tests them).
    @usableFromInline var changesKeepRecords = false
    /// Which changes the observed queries may need (taken as the transaction began); `nil`:
    /// every one. The others are left out of ``changes``.
    var changeInterest: ChangeInterest?
    /// What ``changeInterest`` wants of the type last written, and the type.
    private var wantedOfType: (type: ObjectIdentifier, wanted: ChangeInterest.Wanted)?
    /// Whether ``changes`` must tell an insert from an update (a ``TransactionObserver`` is
    /// registered); if not, an insert without indexes reads nothing and is recorded as an update.
    @usableFromInline var changesNeedKinds = true
    /// This write transaction's changes for the store's change feed, encoded as they are made,
    /// when it found the feed on (``checkChangeLog()``, at its first record use); appended to the
    /// feed as its body returns.
    @exclusivity(unchecked) @usableFromInline var changeLog: ChangeLogChunks?
    /// Whether this transaction records its changes: for observers (``changes``), the change
    /// feed (``changeLog``), or both.
    @inlinable var recordsChanges: Bool { changes != nil || changeLog != nil }
    /// The transaction's changes whose kinds are told as its body returns, on storage that buffers
    /// its writes (``DeferredKinds``); made at the first change recorded while kinds are needed.
    @exclusivity(unchecked) @usableFromInline var deferredKinds: DeferredKinds?
    /// Whether puts that must tell their kinds leave it to ``deferredKinds``: decided at the
    /// transaction's first recorded change (`nil` before), `false` again once they are told.
    @exclusivity(unchecked) @usableFromInline var defersKinds: Bool?
    /// The changes recorded so far, whether or not an observer wants them.
    @exclusivity(unchecked) @usableFromInline var recordedChanges = 0
    /// Whether ``changeLog`` was looked up (once per write transaction).
    @exclusivity(unchecked) @usableFromInline var changeLogChecked = false
    /// How the store seals and opens record values (its transforms, from the manifest).
    @usableFromInline let envelope: RecordEnvelope
    /// Whether this transaction checked that the manifest still names ``envelope``'s chain
    /// (``checkTransforms()``, at its first seal).
    @exclusivity(unchecked) @usableFromInline var transformsChecked = false
    /// The error of a write that failed after it began changing the store (a record put without
    /// all its index entries, say): the body may catch it, but the transaction then refuses to
    /// commit and rolls back with it (``runBody(_:)``), so no half-made write is ever committed.
    @exclusivity(unchecked) @usableFromInline var partialWrite: (any Error)?
    /// The buffer a transformed value's fields are restored into for a read, taken while lent
    /// (``takeScratch()``); never used by a store without transforms.
    @exclusivity(unchecked) @usableFromInline var scratch: [UInt8]?

    init(store: Store, reader: any KeyValueReader, writer: (any KeyValueWriter)?) {
        self.store = store
        self.reader = reader
        self.writer = writer
        envelope = store.envelope
    }

    /// Whether this transaction may write.
    public var isWritable: Bool { writer != nil }

    /// Runs a transaction's body on this context; throws the error of a write that failed
    /// partway (``partialWrite``) even when the body caught it, so the engine rolls back.
    @inlinable
    func runBody<T>(_ body: (TransactionContext) throws -> T) throws -> T {
        let result = try body(self)
        if let partialWrite { throw partialWrite }
        if deferredKinds != nil { try tellDeferredKinds() }
        if changeLog != nil { try appendToChangeLog() }
        return result
    }

    /// Runs `steps`, writes of one record change that may leave it half made when one fails (the
    /// entries and the record of an indexed write); an error among them marks the transaction as
    /// unable to commit (``partialWrite``), also when it came before anything was changed.
    @inlinable
    func completing<T>(_ steps: () throws -> T) throws -> T {
        do {
            return try steps()
        } catch {
            if partialWrite == nil { partialWrite = error }
            throw error
        }
    }

    // MARK: Writing

    /// Stores `record`, replacing the record with the same key.
    @inlinable
    public func insert<R: Record>(_ record: R) throws {
        _ = try store(record, returningReplaced: false)
    }

    /// Stores `record`, replacing the record with the same key, and returns the record it
    /// replaced (`nil` when the key was free). On a type with indexes the old record is read
    /// anyway, to update their entries; on one without, this reads it before the write, which
    /// ``insert(_:)`` does not: call that when the old record is not wanted.
    @discardableResult
    @inlinable
    public func replace<R: Record>(_ record: R) throws -> R? {
        try store(record, returningReplaced: true)
    }

    /// Stores `record`; returns the record it replaced when `returningReplaced` (a constant at
    /// every call, so ``insert(_:)`` keeps a path without the read).
    @inlinable @inline(__always)
    func store<R: Record>(_ record: R, returningReplaced: Bool) throws -> R? {
        let writer = try writable()
        let indexed = try isIndexed(R.self)
        // The record is encoded into the context's buffer moved into a local, and put back after:
        // a buffer lent from the context, like any reference taken on this path, costs an atomic
        // count each way, and together they took more time than the encoding.
        var buffer: (writer: FieldWriter, prefixOf: ObjectIdentifier?) = (FieldWriter(), nil)
        swap(&buffer, &recordBuffer)
        defer { swap(&buffer, &recordBuffer) }
        let keyLength = try encodeRecord(record, into: &buffer.writer, prefixOf: &buffer.prefixOf)
        if indexed {
            let old = try insertIndexed(record, key: buffer.writer.bytes[..<keyLength], value: buffer.writer.bytes[keyLength...],
                                        indexes: prepare(R.self), writer: writer)
            return returningReplaced ? old : nil
        }
        // Observed: whether the key held a record, told by the put itself where the engine can
        // (else read before it), and recorded after it (a put that throws, caught by the body,
        // changed nothing).
        let old = !returningReplaced ? nil : try storedRecord(R.self, key: buffer.writer.bytes[..<keyLength], withValue: false)?.record
        // On storage that buffers its writes, the kind is told as the body returns (``DeferredKinds``).
        let needsKind = recordsChanges && !returningReplaced && changesNeedKinds
        let kindLater = needsKind && (defersKinds ?? decideKindDeferral())
        assert(!kindLater || deferredKinds != nil, "a put whose kind is told later, with nothing to tell it")
        let replaced: Bool? = try buffer.writer.bytes.withUnsafeBytes { stored in
            let (key, value) = (UnsafeRawBufferPointer(rebasing: stored[..<keyLength]), UnsafeRawBufferPointer(rebasing: stored[keyLength...]))
            if needsKind && !kindLater { return try writer.putReportingReplaced(value, forKey: key) }
            try writer.put(value, forKey: key)
            // Recorded as an update when kinds are not needed; as an insert until told, when told later.
            return !recordsChanges ? nil : returningReplaced ? old != nil : !kindLater
        }
        if let replaced {
            recordChange(R.self, key: buffer.writer.bytes[..<keyLength], replaced ? .update : .insert, record: record, kindLater: kindLater)
        }
        return old
    }

    /// Encodes `record` as it is stored into `fields`, key and value back to back, and returns
    /// the key's length: one buffer and one checksum pass (the checksum covers the key followed
    /// by the value, RecordFormat.md), where two buffers cost a quarter of an insert's own
    /// instructions. `prefixOf` names the type whose prefix `fields` starts with, if not empty.
    @inlinable
    func encodeRecord<R: Record>(_ record: R, into fields: inout FieldWriter, prefixOf: inout ObjectIdentifier?) throws -> Int {
        var key = KeyWriter(appendingTo: [])
        swap(&key.bytes, &fields.bytes)
        let keyLength = try writeKey(of: record, to: &key, prefixInPlace: prefixOf == ObjectIdentifier(R.self) && !key.bytes.isEmpty)
        prefixOf = ObjectIdentifier(R.self)
        swap(&key.bytes, &fields.bytes)
        fields.restart(after: keyLength)
        fields.writeVarint(UInt64(keyspaces[keyspace(R.self)].version))
        let fieldsStart = fields.bytes.count
        record.writeFields(to: &fields)
        if let failure = fields.failure { throw RecordError.unencodableField(type: "\(R.self)", detail: failure) }
        if !envelope.isPlain && !transformsChecked { try checkTransforms() }
        try envelope.seal(&fields, fieldsStart: fieldsStart)
        return keyLength
    }

    /// Refuses to seal with another chain than the manifest names: another process may have
    /// rotated the store's key since this store opened (`Store.rotateKeys`), and a value sealed
    /// under the old key would outlive the rotation. One read of the manifest per write
    /// transaction of a store with transforms.
    @usableFromInline
    func checkTransforms() throws {
        let stored = try Manifest.stored(in: reader)?.transforms ?? []
        guard stored == envelope.names else {
            throw RecordError.manifestMismatch(detail: "the store's values are now sealed with \(Manifest.describe(stored)), and it was opened with "
                + "\(Manifest.describe(envelope.names)) (another process rotated its key): open it again")
        }
        transformsChecked = true
    }

    /// Stores `record` unless a record with its key exists; returns whether it was stored.
    @discardableResult
    @inlinable
    public func insertIfAbsent<R: Record>(_ record: R) throws -> Bool {
        _ = try writable()
        try prepare(R.self)
        if try reader.exists(try encodeKey(record)) { return false }
        try insert(record)
        return true
    }

    /// Deletes the record with `record`'s key; returns whether there was one.
    @discardableResult
    @inlinable
    public func delete<R: Record>(_ record: R) throws -> Bool {
        let writer = try writable()
        let indexes = try prepare(R.self)
        return try delete(R.self, key: try encodeKey(record), indexes: indexes, writer: writer)
    }

    /// Deletes the record stored as `key` (keyspace prefix included) and its index entries;
    /// returns whether there was one.
    @inlinable
    func delete<R: Record>(_: R.Type, key: [UInt8], indexes: [ActiveIndex], writer: any KeyValueWriter) throws -> Bool {
        try delete(R.self, key: key, indexes: indexes, writer: writer, returningRemoved: false).found
    }

    /// Deletes the record stored as `key`; returns whether there was one, and the record when
    /// `returningRemoved` (read anyway on a type with indexes).
    @inlinable @inline(__always)
    func delete<R: Record>(_: R.Type, key: [UInt8], indexes: [ActiveIndex], writer: any KeyValueWriter,
                           returningRemoved: Bool) throws -> (found: Bool, record: R?) {
        var removed: R?
        if !indexes.isEmpty {
            guard let old = try deleteIndexed(R.self, key: key, indexes: indexes, writer: writer) else { return (false, nil) }
            removed = old
        } else if returningRemoved {
            guard let old = try storedRecord(R.self, key: key[...], withValue: false)?.record else { return (false, nil) }
            removed = old
            try writer.delete(key)
        } else {
            guard try reader.exists(key) else { return (false, nil) }
            try writer.delete(key)
        }
        if recordsChanges { recordChange(R.self, key: key, .delete) }
        return (true, returningRemoved ? removed : nil)
    }

    /// Deletes every record matching `query`; returns how many.
    @discardableResult
    @inlinable
    public func delete<R: Record>(_ type: R.Type, _ query: RecordQuery) throws -> Int {
        let writer = try writable()
        let indexes = try prepare(R.self)
        try validate(query, for: R.self)
        var removed = 0
        for range in query.ranges(keyspacePrefix: prefix(R.self)) {
            if !indexes.isEmpty {
                removed += try clearIndexed(R.self, range, indexes: indexes, writer: writer)
                continue
            }
            guard recordsChanges else {
                removed += try writer.clear(range)
                continue
            }
            // Observed: the keys the clear removes, read first and recorded once it is done.
            var keys: [[UInt8]] = []
            try reader.scan(range, reverse: false, limit: nil) { key, _ in
                keys.append(Array(key))
                return true
            }
            removed += try writer.clear(range)
            for key in keys { recordChange(R.self, key: key, .delete) }
        }
        return removed
    }

    /// Records a change of the record of type `R` stored as `key` (keyspace prefix included);
    /// called only when ``recordsChanges``: for the change feed, every change, without its
    /// record; for observers, those ``changeInterest`` wants, with the record when they keep it.
    /// `kindLater`: a put whose kind ``deferredKinds`` tells (recorded as an insert until then).
    @inlinable
    func recordChange<R: Record>(_: R.Type, key: some Collection<UInt8>, _ kind: RecordChange.Kind, record: R? = nil, kindLater: Bool = false) {
        let prefixLength = keyspaces[keyspace(R.self)].prefix.count
        if key.withContiguousStorageIfAvailable({
            recordChange(R.self, key: UnsafeRawBufferPointer($0), prefixLength: prefixLength, kind, record: record, kindLater: kindLater)
        }) == nil {
            Array(key).withUnsafeBytes { recordChange(R.self, key: $0, prefixLength: prefixLength, kind, record: record, kindLater: kindLater) }
        }
    }

    @inlinable
    func recordChange<R: Record>(_: R.Type, key: UnsafeRawBufferPointer, prefixLength: Int, _ kind: RecordChange.Kind, record: R?, kindLater: Bool) {
        let bare = UnsafeRawBufferPointer(rebasing: key[prefixLength...])
        if defersKinds == nil && changesNeedKinds { _ = decideKindDeferral() }
        recordedChanges += 1
        let logged = changeLog?.append(type: ObjectIdentifier(R.self), keyspace: R.recordType.keyspace, kind, key: bare) ?? -1
        var listed = -1
        if changes != nil, wantsChange(R.self, key: bare) {
            let kept = changesKeepRecords ? record.map { ChangedRecord(value: $0) } : nil
            listed = changes!.count
            changes!.append(RecordChange(keyspace: R.recordType.keyspace, key: EncodedIndexKey(bytes: Array(bare)), kind: kind, record: kept))
        }
        deferredKinds?.record(key: key, kindLater ? nil : kind, logged: logged, listed: listed)
    }

    /// At the first change recorded while kinds are needed (or the first put that needs its
    /// kind): whether puts leave their kinds to ``deferredKinds``. Yes when the storage reads its
    /// starting state (``StartStateReading``) and no change was recorded yet (every change must
    /// be listed there, from the first).
    @usableFromInline
    func decideKindDeferral() -> Bool {
        if recordedChanges == 0, let start = writer as? any StartStateReading, start.readsStartState {
            deferredKinds = DeferredKinds(start: start)
            defersKinds = true
        } else {
            defersKinds = false
        }
        return defersKinds!
    }

    /// As the body returns: tells the deferred changes' kinds, in the feed's chunks and the
    /// observers' list (recorded as inserts: only updates are rewritten).
    @usableFromInline
    func tellDeferredKinds() throws {
        guard let deferred = deferredKinds else { return }
        deferredKinds = nil
        defersKinds = false  // a put after this (none today) reads its kind as it is made
        try deferred.resolve { change, kind in
            if change.logged >= 0 { changeLog?.setKind(kind, at: change.logged) }
            if change.listed >= 0, let listed = changes?[change.listed] {
                let index = change.listed
                changes![index] = RecordChange(keyspace: listed.keyspace, key: listed.key, kind: kind, record: listed.record)
            }
        }
    }

    /// Whether an observed query may need the change of the record of type `R` stored as `key`
    /// (without the keyspace's prefix): ``changeInterest``.
    @usableFromInline
    func wantsChange<R: Record>(_: R.Type, key: UnsafeRawBufferPointer) -> Bool {
        guard let changeInterest else { return true }
        let type = ObjectIdentifier(R.self)
        if wantedOfType?.type != type { wantedOfType = (type, changeInterest.wanted(in: R.recordType.keyspace)) }
        return wantedOfType!.wanted.contains(key)
    }

    // MARK: Reading

    /// The record whose key is exactly the components of `query` (all of them, by equality).
    @inlinable
    public func fetch<R: Record>(_ type: R.Type, _ query: RecordQuery) throws -> R? {
        try prepare(R.self)
        try validate(query, for: R.self)
        guard query.componentTypes.count == R.recordType.key.count, query.bounds == [[]] else {
            throw RecordError.invalidQuery(type: "\(R.self)", detail: "fetch needs every key component, by equality")
        }
        let key = prefix(R.self) + query.prefix
        return try key.withUnsafeBytes { k in
            try reader.withValue(forKey: k) { value in try value.map { try decode(R.self, key: k, value: $0) } }
        }
    }

    /// The record of type `R` whose key components `writeKey` appends, in key order: one
    /// point read, with the key encoded into this transaction's reusable buffer (no
    /// allocation but the record's own). The macro's generated lookups call this.
    @inlinable
    public func fetch<R: Record>(_ type: R.Type, key writeKey: (inout KeyWriter) -> Void) throws -> R? {
        try prepare(R.self)
        keyWriter.removeAll()
        keyWriter.write(contentsOf: prefix(R.self))
        writeKey(&keyWriter)
        return try keyWriter.bytes.withUnsafeBytes { k in
            try reader.withValue(forKey: k) { value in try value.map { try decode(R.self, key: k, value: $0) } }
        }
    }

    /// The record with this key, if there is one.
    @inlinable
    public func fetch<R: Record>(_ type: R.Type, key: R.IndexKey) throws -> R? {
        try fetch(R.self) { key.writeKey(to: &$0) }
    }

    /// Whether a record with this key exists (the value is not read).
    @inlinable
    public func exists<R: Record>(_ type: R.Type, key: R.IndexKey) throws -> Bool {
        try prepare(R.self)
        keyWriter.removeAll()
        keyWriter.write(contentsOf: prefix(R.self))
        key.writeKey(to: &keyWriter)
        return try keyWriter.bytes.withUnsafeBytes { k in try reader.withValue(forKey: k) { $0 != nil } }
    }

    /// Deletes the record with this key; returns whether there was one.
    @discardableResult
    @inlinable
    public func delete<R: Record>(_ type: R.Type, key: R.IndexKey) throws -> Bool {
        try delete(R.self, key: key, returningRemoved: false).found
    }

    /// Deletes the record with this key and returns it (`nil` when there was none). On a type
    /// without indexes the record is read and decoded before the delete, which
    /// ``delete(_:key:)`` does not.
    @discardableResult
    @inlinable
    public func remove<R: Record>(_ type: R.Type, key: R.IndexKey) throws -> R? {
        try delete(R.self, key: key, returningRemoved: true).record
    }

    /// Deletes the record with this key (see ``delete(_:key:)`` and ``remove(_:key:)``).
    @inlinable @inline(__always)
    func delete<R: Record>(_: R.Type, key: R.IndexKey, returningRemoved: Bool) throws -> (found: Bool, record: R?) {
        let writer = try writable()
        let indexes = try prepare(R.self)
        var keyWriter = KeyWriter()
        keyWriter.write(contentsOf: prefix(R.self))
        key.writeKey(to: &keyWriter)
        return try delete(R.self, key: keyWriter.bytes, indexes: indexes, writer: writer, returningRemoved: returningRemoved)
    }

    /// The records matching `query`, at most `limit`, in key order: nearest first without an
    /// explicit `order` (descending for a last `lessThan`/`lessThanOrEqual`, else ascending).
    @inlinable
    public func select<R: Record>(_ type: R.Type, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil) throws -> [R] {
        var result: [R] = []
        try forEach(R.self, query, limit: limit, order: order) { record in
            result.append(record)
            return true
        }
        return result
    }

    /// Visits the records matching `query` one at a time, without collecting them: `body`
    /// returns `false` to stop. Memory stays flat however many records match.
    @inlinable
    public func forEach<R: Record>(
        _ type: R.Type, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil,
        _ body: (R) throws -> Bool
    ) throws {
        let ranges = try checkedRanges(R.self, query)
        let layout = try storedLayout(R.self)
        try scan(ranges, order: order ?? query.defaultOrder, limit: limit) { key, value in
            try body(try decode(R.self, key: key, value: value, layout: layout))
        }
    }

    /// The key ranges `query` reads in `R`'s keyspace, after `R`'s checks of this transaction
    /// (``prepare(_:)``) and the query's shape against `R`'s key (``validate(_:for:)``).
    @inlinable
    func checkedRanges<R: Record>(_: R.Type, _ query: RecordQuery) throws -> [KeyRange] {
        try prepare(R.self)
        try validate(query, for: R.self)
        return query.ranges(keyspacePrefix: prefix(R.self))
    }

    /// Scans `ranges` (given in ascending order) in `order`, at most `limit` pairs in all;
    /// `visit` returns `false` to stop.
    @inlinable
    func scan(_ ranges: [KeyRange], order: Order, limit: Int?,
              _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        var remaining = limit ?? Int.max
        var stopped = false
        for range in order == .descending ? ranges.reversed() : ranges where remaining > 0 && !stopped {
            try reader.scan(range, reverse: order == .descending, limit: remaining == Int.max ? nil : remaining) { key, value in
                remaining -= 1
                if try !visit(key, value) { stopped = true }
                return !stopped
            }
        }
    }

    /// How many records match `query` (keys are counted, values not decoded).
    @inlinable
    public func count<R: Record>(_ type: R.Type, _ query: RecordQuery = .all) throws -> Int {
        var n = 0
        for range in try checkedRanges(R.self, query) {
            try reader.scan(range, reverse: false, limit: nil) { _, _ in
                n += 1
                return true
            }
        }
        return n
    }

    // MARK: Encoding

    /// An empty buffer with the capacity of an earlier one, taken out of this transaction: the
    /// taker owns it until ``giveBack(_:)``, so a query run from inside another's visitor finds
    /// none and allocates its own, never writing into one that is lent.
    @inlinable
    func takeBuffer() -> [UInt8] {
        guard let buffer = spareBuffer else { return [] }
        spareBuffer = nil
        return buffer
    }

    /// Keeps a buffer from ``takeBuffer()``, emptied, for the next taker (unless one is kept).
    @inlinable
    func giveBack(_ buffer: inout [UInt8]) {
        buffer.removeAll(keepingCapacity: true)
        if spareBuffer == nil { spareBuffer = buffer }
        buffer = []
    }

    /// The keyspace prefix of `R`: its keyspace name as the first key component. Encoded once
    /// per transaction and type.
    @inlinable
    func prefix<R: Record>(_: R.Type) -> [UInt8] { keyspaces[keyspace(R.self)].prefix }

    /// The position of `R`'s entry in ``keyspaces``, added on first use. Searched by position,
    /// not first(where:): a tuple copy and a closure call cost an insert 50 instructions.
    @inlinable
    func keyspace<R: Record>(_: R.Type) -> Int {
        let id = ObjectIdentifier(R.self)
        for i in keyspaces.indices where keyspaces[i].type == id { return i }
        let type = R.recordType
        keyspaces.append((id, KeyCodec.encode(type.keyspace), type.version, type.formatOneVersion))
        return keyspaces.count - 1
    }

    /// Whether values of schema version `version` have `R`'s current layout
    /// (``RecordType/isVersion(_:)``), from this transaction's copy of the type's versions: a record
    /// type may compute ``Record/recordType`` (a ``CodableRecord`` looks it up), and this is asked
    /// by every point read (a scan asks its ``StoredLayout`` once).
    @inlinable
    func isCurrentVersion<R: Record>(_: R.Type, _ version: UInt32) -> Bool {
        let type = keyspace(R.self)
        return version == keyspaces[type].version || version == keyspaces[type].formatOneVersion
    }

    /// Per record type used in this transaction: its keyspace prefix and schema version, read
    /// from here by the write path without copying them (each copy is an atomic reference count).
    @exclusivity(unchecked) @usableFromInline var keyspaces: [(type: ObjectIdentifier, prefix: [UInt8], version: UInt32, formatOneVersion: UInt32?)] = []

    @inlinable
    func encodeKey<R: Record>(_ record: R) throws -> [UInt8] {
        _ = try writeKey(of: record, to: &keyWriter)
        return keyWriter.bytes
    }

    /// Encodes `record`'s key into `key`, checked against the key limit; returns its length.
    /// `key` is emptied first, or when `prefixInPlace` (it starts with `R`'s keyspace prefix)
    /// cut after the prefix: copying the prefix in costs a reference count each way, atomic.
    @inlinable
    func writeKey<R: Record>(of record: R, to key: inout KeyWriter, prefixInPlace: Bool = false) throws -> Int {
        let type = keyspace(R.self)
        if prefixInPlace {
            key.bytes.removeSubrange(keyspaces[type].prefix.count...)
        } else {
            key.removeAll()
            keyspaces[type].prefix.withUnsafeBufferPointer { key.write(contentsOf: $0) }
        }
        record.writeKey(to: &key)
        let length = key.bytes.count
        guard length <= KeyLimits.maxKeyLength else {
            throw RecordError.keyTooLarge(type: "\(R.self)", length: length, limit: KeyLimits.maxKeyLength)
        }
        return length
    }

    /// Decodes a stored record; bad bytes throw ``RecordError/corruptRecord(type:detail:)``.
    @inlinable
    func decode<R: Record>(_: R.Type, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> R {
        // The scan stayed inside the keyspace, so the key starts with the prefix: skip it.
        let prefixLength = prefix(R.self).count
        guard key.count >= prefixLength else {
            throw RecordError.corruptRecord(type: "\(R.self)", detail: "key: shorter than the keyspace prefix")
        }
        let keyBytes = UnsafeRawBufferPointer(rebasing: key[prefixLength...])
        return try withStoredFields(R.self, key: key, value: value) { version, bytes, offset in
            try decode(R.self, key: keyBytes, version: version, fields: FieldReader(bytes, offset: offset))
        }
    }

    /// Opens a stored record's envelope and lends `body` its schema version and its fields as the
    /// record wrote them (`bytes` from `offset` on: the engine's own bytes, or the transforms'
    /// reversal in the context's scratch buffer). The checksum comes first: damaged bytes never
    /// reach a transform or a decoder. A damaged value throws ``RecordError/corruptRecord(type:detail:)``
    /// naming `R`; one a transform refuses, ``RecordError/valueRefused(type:key:transform:reason:)``.
    @inlinable @inline(__always)  // in every record read: called, it cost 75 instructions a read
    func withStoredFields<R: Record, T>(
        _: R.Type, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
        _ body: (_ version: UInt32, _ bytes: UnsafeRawBufferPointer, _ offset: Int) throws -> T
    ) throws -> T {
        let sealed: RecordEnvelope.Sealed
        do throws(RecordEnvelope.Damage) {
            sealed = try RecordEnvelope.open(key: key, value: value)
        } catch {
            throw RecordError.corruptRecord(type: "\(R.self)", detail: error.detail)
        }
        if envelope.isPlain { return try body(sealed.version, sealed.body, sealed.fieldsOffset) }
        var scratch = takeScratch()
        defer { self.scratch = scratch }
        do {
            return try envelope.withFields(sealed, key: key, scratch: &scratch) { bytes, offset in try body(sealed.version, bytes, offset) }
        } catch let damage as RecordEnvelope.Damage {
            throw damage.recordError(type: "\(R.self)", key: key)
        }
    }

    /// What reading `R`'s stored records needs from this transaction, looked up once per scan
    /// rather than once per row (two searches of ``keyspaces`` and one of the checked types cost
    /// a materialized row 78 instructions of 1,474; callgrind, `make instructions` foreach-row).
    /// Runs `R`'s checks first (``prepare(_:)``): the versions with the same fields are known
    /// only after them (an index's view scan took them before its first use of the type, and
    /// read such records as another version).
    @inlinable
    func storedLayout<R: Record>(_: R.Type) throws -> StoredLayout {
        let sameFields = checked[try checkedPosition(R.self)].sameFields
        let position = keyspace(R.self)
        return StoredLayout(prefixLength: keyspaces[position].prefix.count, version: keyspaces[position].version,
                            formatOneVersion: keyspaces[position].formatOneVersion, sameFields: sameFields)
    }

    /// Decodes a record of type `R` stored under `key` with `value`, given its layout
    /// (``storedLayout(_:)``): the scans' ``decode(_:key:value:)``.
    @inlinable
    func decode<R: Record>(_: R.Type, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, layout: StoredLayout) throws -> R {
        guard key.count >= layout.prefixLength else {
            throw RecordError.corruptRecord(type: "\(R.self)", detail: "key: shorter than the keyspace prefix")
        }
        let keyBytes = UnsafeRawBufferPointer(rebasing: key[layout.prefixLength...])
        return try withStoredFields(R.self, key: key, value: value) { version, bytes, offset in
            try decode(R.self, key: keyBytes, version: version, isCurrent: layout.isCurrent(version), fields: FieldReader(bytes, offset: offset))
        }
    }

    /// Decodes a record of schema version `version` from its key components and its fields.
    @inlinable
    func decode<R: Record>(_: R.Type, key: UnsafeRawBufferPointer, version: UInt32, fields: FieldReader) throws -> R {
        try decode(R.self, key: key, version: version, isCurrent: isCurrentVersion(R.self, version) || sameFields(R.self).contains(version),
                   fields: fields)
    }

    /// Decodes a record of schema version `version` (`isCurrent`: whether it has the type's
    /// current layout) from its key components and its fields.
    @inlinable @inline(__always)
    func decode<R: Record>(_: R.Type, key: UnsafeRawBufferPointer, version: UInt32, isCurrent: Bool, fields: FieldReader) throws -> R {
        var keyReader = KeyReader(key)
        var fields = fields
        do {
            if isCurrent {
                let record = try R(key: &keyReader, fields: &fields)
                try keyReader.finish()
                try fields.finish()
                return record
            }
            guard let migrated = try R.migrate(fromVersion: version, key: &keyReader, fields: &fields) else {
                throw RecordError.versionMismatch(type: "\(R.self)", stored: version, current: R.recordType.version)
            }
            return migrated
        } catch let error as KeyDecodingError {
            throw RecordError.corruptRecord(type: "\(R.self)", detail: "key: \(error)")
        } catch let error as FieldDecodingError {
            throw RecordError.corruptRecord(type: "\(R.self)", detail: "value: \(error)")
        }
    }

    /// The scratch buffer for a transformed value's fields, taken from the context (a read made
    /// while it is lent, by a visitor, takes a new one); put it back in ``scratch``.
    @inlinable
    func takeScratch() -> [UInt8] {
        defer { scratch = nil }
        return scratch ?? []
    }

    // MARK: Checks

    @usableFromInline func writable() throws -> any KeyValueWriter {
        guard let writer else { throw RecordError.readOnlyTransaction }
        return writer
    }

    /// Checks `R`'s keyspace once per transaction; returns the indexes writes must keep.
    @inlinable @discardableResult
    func prepare<R: Record>(_: R.Type) throws -> [ActiveIndex] { checked[try checkedPosition(R.self)].indexes }

    /// Whether `R` has indexes writes must keep (``prepare(_:)`` without taking the list).
    @inlinable
    func isIndexed<R: Record>(_: R.Type) throws -> Bool { !checked[try checkedPosition(R.self)].indexes.isEmpty }

    /// The position of `R`'s entry in ``checked``, after the checks of its first use in this
    /// transaction. Searched by position, as ``keyspace(_:)``.
    @inlinable
    func checkedPosition<R: Record>(_: R.Type) throws -> Int {
        let id = ObjectIdentifier(R.self)
        for i in checked.indices where checked[i].type == id { return i }
        try firstUse(R.self)
        return checked.count - 1
    }

    /// The catalog checks of `R`'s first use in this transaction: its keyspace and, in a write
    /// transaction or when `R` declares any, its indexes; adds `R`'s entry at the end of ``checked``.
    @usableFromInline
    func firstUse<R: Record>(_: R.Type) throws {
        if writer != nil && !changeLogChecked { try checkChangeLog() }
        let sameFields = try store.catalog.check(R.self, in: reader, writer: writer)
        var indexes: [ActiveIndex] = []
        if writer != nil || !R.indexes.isEmpty {
            indexes = try IndexCatalog.prepare(R.self, keyspacePrefix: prefix(R.self), in: reader, writer: writer, remembered: store.catalog, envelope: envelope)
        }
        checked.append((ObjectIdentifier(R.self), sameFields, indexes))
    }

    /// Versions stored with exactly `R`'s fields (names and formats, in order): read as current.
    @usableFromInline
    func sameFields<R: Record>(_: R.Type) -> Set<UInt32> {
        let id = ObjectIdentifier(R.self)
        return checked.first { $0.type == id }?.sameFields ?? []
    }

    /// Checks a query's shape against `R`'s key: no more components than the key has, each of
    /// the key component's type (a hand-written query can get this wrong; a generated one cannot).
    @inlinable
    func validate<R: Record>(_ query: RecordQuery, for _: R.Type) throws {
        let key = R.recordType.key
        if query.continuesAfterComparison {
            throw RecordError.invalidQuery(type: "\(R.self)", detail: "only the last key component of a query may be a comparison")
        }
        guard query.componentTypes.count <= key.count else {
            throw RecordError.invalidQuery(type: "\(R.self)", detail: "\(query.componentTypes.count) key components given, the key has \(key.count)")
        }
        for (i, type) in query.componentTypes.enumerated() where type != key[i].typeID {
            throw RecordError.invalidQuery(type: "\(R.self)", detail: "key component \(i) (\(key[i].name)) is \(key[i].typeName)")
        }
    }
}

extension Record {
    /// The records matching `query`; see ``TransactionContext/select(_:_:limit:order:)``.
    @inlinable
    public static func select(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil) throws -> [Self] {
        try ctx.select(Self.self, query, limit: limit, order: order)
    }

    /// Every record of the type, as a ``Query`` to page, stream or walk with a cursor.
    public static func query() -> Query<Self> { Query() }

    /// The record with this key, if there is one.
    @inlinable
    public static func fetch(in ctx: TransactionContext, key: IndexKey) throws -> Self? { try ctx.fetch(Self.self, key: key) }

    /// Whether a record with this key exists.
    @inlinable
    public static func exists(in ctx: TransactionContext, key: IndexKey) throws -> Bool { try ctx.exists(Self.self, key: key) }

    /// Deletes the record with this key; returns whether there was one.
    @discardableResult
    @inlinable
    public static func delete(in ctx: TransactionContext, key: IndexKey) throws -> Bool { try ctx.delete(Self.self, key: key) }

    /// Deletes the record with this key and returns it (see ``TransactionContext/remove(_:key:)``).
    @discardableResult
    @inlinable
    public static func remove(in ctx: TransactionContext, key: IndexKey) throws -> Self? { try ctx.remove(Self.self, key: key) }

    /// Stores this record in the transaction, replacing the one with its key.
    @inlinable
    public func insert(in ctx: TransactionContext) throws { try ctx.insert(self) }

    /// Stores this record, replacing the one with its key, and returns the one replaced (see
    /// ``TransactionContext/replace(_:)``).
    @discardableResult
    @inlinable
    public func replace(in ctx: TransactionContext) throws -> Self? { try ctx.replace(self) }

    /// Stores this record in a transaction of its own.
    public func insert(in store: Store) throws { try store.insert(self) }

    /// Deletes the record with this record's key; returns whether there was one.
    @discardableResult
    @inlinable
    public func delete(in ctx: TransactionContext) throws -> Bool { try ctx.delete(self) }

    /// Deletes the record with this record's key in a transaction of its own.
    @discardableResult
    public func delete(in store: Store) throws -> Bool { try store.delete(self) }

    /// How many records match `query`.
    @inlinable
    public static func count(in ctx: TransactionContext, _ query: RecordQuery = .all) throws -> Int {
        try ctx.count(Self.self, query)
    }

    /// Deletes the records matching `query`; returns how many.
    @discardableResult
    @inlinable
    public static func delete(in ctx: TransactionContext, _ query: RecordQuery) throws -> Int {
        try ctx.delete(Self.self, query)
    }

    /// Visits the records matching `query` lazily.
    @inlinable
    public static func forEach(in ctx: TransactionContext, _ query: RecordQuery = .all, limit: Int? = nil, order: Order? = nil,
                               _ body: (Self) throws -> Bool) throws {
        try ctx.forEach(Self.self, query, limit: limit, order: order, body)
    }
}
