import StrataEngine
import StrataKeyCodec

// Auto-increment keys, as SQLite's AUTOINCREMENT issues them: each keyspace whose key is one
// `Int` has a sequence, the last key issued, stored under a system key and written in the same
// transaction as the record (RecordFormat.md, "Keys"). The next key is one more than both the
// sequence and the largest key present (a record inserted with an explicit key), so keys only
// grow and a key the sequence issued is never issued again, deleted or not (an explicit key above
// the sequence deleted before the next key is issued is the one it cannot see: reading the
// sequence on every explicit insert would cost every insert). Writers are serialized on every engine
// (LMDB's and SQLite's writer locks across processes, etcd's writer lock across hosts), so two
// writers never read the same sequence; a transaction rolled back, or a process killed before
// its commit, leaves the sequence as it was.

extension SystemKey {
    /// The last key a keyspace's sequence issued (the key encoding of an `Int`).
    static func sequence(_ keyspace: String) -> [UInt8] { prefix + KeyCodec.encode("sequence", keyspace) }
}

extension TransactionContext {
    /// Issues the next auto-increment key of `R`, whose key must be one `Int`: larger than every
    /// key issued before in its keyspace and every key present, so never one the sequence issued
    /// to a record deleted since (Modeling data, "Generated keys", has the one exception). The
    /// first is 1. The sequence is written in this transaction: if it rolls back, so does the
    /// key. Insert the record with the key in the same transaction (or use
    /// ``insertNew(_:)``).
    ///
    /// - Throws: ``RecordError/keyGeneration(type:detail:)`` when `R`'s key is not one `Int`, the
    ///   sequence reached `Int.max`, or the stored sequence is damaged.
    public func nextID<R: Record>(_: R.Type) throws -> Int {
        let writer = try writable()
        try prepare(R.self)
        let type = R.recordType
        guard type.key.count == 1, type.key[0].typeID == ObjectIdentifier(Int.self) else {
            throw RecordError.keyGeneration(type: "\(R.self)", detail: "an auto-increment key must be one Int; the key is (\(type.keyLayout))")
        }
        let sequenceKey = SystemKey.sequence(type.keyspace)
        var last = 0
        if let stored = try reader.get(sequenceKey) {
            let value = stored.withUnsafeBytes { bytes -> Int? in
                var key = KeyReader(bytes)
                guard let value = try? key.read(Int.self), key.isAtEnd else { return nil }
                return value
            }
            guard let value else {
                throw RecordError.keyGeneration(type: "\(R.self)", detail: "the stored sequence is not an Int (\(stored.count) bytes): the store is damaged")
            }
            last = value
        }
        // A record inserted with an explicit key above the sequence moves it on.
        let keyspacePrefix = prefix(R.self)
        try reader.scan(KeyRange.components(prefix: keyspacePrefix), reverse: true, limit: 1) { key, _ in
            var reader = KeyReader(UnsafeRawBufferPointer(rebasing: key[keyspacePrefix.count...]))
            if let largest = try? reader.read(Int.self) { last = Swift.max(last, largest) }
            return false
        }
        guard last < Int.max else {
            throw RecordError.keyGeneration(type: "\(R.self)", detail: "the sequence reached Int.max")
        }
        try writer.put(KeyCodec.encode(last + 1), forKey: sequenceKey)
        return last + 1
    }

    /// Inserts the record `make` builds with the next auto-increment key (``nextID(_:)``) and
    /// returns it: `let ticket = try ctx.insertNew { Ticket(id: $0, seat: "12A") }`.
    ///
    /// - Throws: ``RecordError/keyGeneration(type:detail:)`` as ``nextID(_:)`` does, or when the
    ///   record's key is not the key it was given.
    @discardableResult
    public func insertNew<R: Record>(_ make: (Int) throws -> R) throws -> R {
        let id = try nextID(R.self)
        let record = try make(id)
        var key = KeyWriter()
        record.writeKey(to: &key)
        guard key.bytes == KeyCodec.encode(id) else {
            throw RecordError.keyGeneration(type: "\(R.self)", detail: "the record built for key \(id) has another key")
        }
        try insert(record)
        return record
    }
}
