import StrataEngine
import StrataKeyCodec

/// What ``TransactionContext/verifyIndexes(_:)`` found in one index.
public struct IndexVerification: Sendable, Hashable {
    /// The index's name.
    public let index: String
    /// How many entries the records call for.
    public var expected = 0
    /// Records that could not be read (damaged, or of a version without migration): they call
    /// for no entries, and a build leaves them without.
    public var unreadableRecords = 0
    /// Entry keys the records call for that are not stored (at most 10 listed), and how many.
    public var missing: [[UInt8]] = []
    /// How many entry keys the records call for are not stored (``missing`` lists at most 10).
    public var missingCount = 0
    /// Stored entry keys no record calls for, or covering entries whose value is not the
    /// record's (at most 10 listed), and how many.
    public var stale: [[UInt8]] = []
    /// How many stored entries are stale: no record calls for them, or their value is not the
    /// record's (``stale`` lists at most 10).
    public var staleCount = 0
    /// Whether the index equals a recomputation from the records.
    public var isExact: Bool { missingCount == 0 && staleCount == 0 }
}

extension TransactionContext {
    /// Recomputes each readable index of `R` from the records and compares it with the stored
    /// entries (an index of totals: each group's total, as its entry's value): missing and stale
    /// entries (what `strata verify` reports, and what the tests check after every random log).
    /// Records that cannot be read (damaged, refused by a value transform, or of a version
    /// without migration) are counted, not indexed. Reads every record and entry:
    /// O(records + entries).
    public func verifyIndexes<R: Record>(_: R.Type) throws -> [IndexVerification] {
        let indexes = try prepare(R.self)
        let keyspacePrefix = prefix(R.self)
        var results: [IndexVerification] = []
        for index in indexes where index.state == .readable {
            let declaration = R.indexes[index.position]
            var expected: [[UInt8]: [UInt8]] = [:]
            var totals: [[UInt8]: TotalChange] = [:]  // an index of totals: each group's, stored as its entry's value
            var unreadable = 0
            var recordKeys: [[UInt8]: [UInt8]] = [:]  // a covering entry's record, to compare contents mid-rotation
            try reader.scan(KeyRange.components(prefix: keyspacePrefix), reverse: false, limit: nil) { key, value in
                let record: R
                do {
                    record = try decode(R.self, key: key, value: value)
                } catch let error as RecordError where error.isUnreadableRecord {
                    unreadable += 1  // no entries can be derived; reading it fails either way
                    return true
                }
                if index.totals {
                    for (group, amount) in declaration.totalEntries(of: record) { totals[index.prefix + group, default: TotalChange()].record(amount, joins: true) }
                    return true
                }
                for entry in declaration.entryValues(of: record) {
                    let entryKey = index.prefix + entry.bytes + key[keyspacePrefix.count...]
                    expected[entryKey] = index.covering ? Array(value) : []
                    if index.covering && !envelope.isPlain { recordKeys[entryKey] = Array(key) }
                }
                return true
            }
            for (key, change) in totals { expected[key] = change.total?.encoded ?? [] }  // past Int64: no stored total can be right
            var result = IndexVerification(index: index.name, expected: expected.count, unreadableRecords: unreadable)
            try reader.scan(KeyRange.components(prefix: index.prefix), reverse: false, limit: nil) { key, value in
                let stored = Array(key)
                if let want = expected.removeValue(forKey: stored) {
                    if want.elementsEqual(value) { return true }
                    // Mid-rotation: the entry holds its record's contents, sealed before the record was re-sealed.
                    if let record = recordKeys[stored],
                       record.withUnsafeBytes({ r in want.withUnsafeBytes { envelope.sameContents(key: r, $0, value) } }) { return true }
                }
                result.staleCount += 1
                if result.stale.count < 10 { result.stale.append(stored) }
                return true
            }
            result.missingCount = expected.count
            result.missing = Array(expected.keys.sorted { $0.lexicographicallyPrecedes($1) }.prefix(10))
            results.append(result)
        }
        return results
    }
}
