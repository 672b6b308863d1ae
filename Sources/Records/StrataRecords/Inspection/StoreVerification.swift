import Foundation
import StrataEngine
import StrataKeyCodec

/// One thing ``Store/verify(listing:progress:)`` found wrong, and where.
public struct StoreProblem: Sendable, Hashable, Encodable, CustomStringConvertible {
    /// What kind of problem it is; the raw value is the name `strata verify` prints and encodes.
    public enum Kind: String, Sendable, Hashable, Encodable {
        /// A keyspace's catalog entry or an index definition that cannot be decoded.
        case corruptCatalog
        /// A record in a keyspace the catalog has no entry for.
        case uncataloguedRecord
        /// A record key that does not decode, or does not fit its keyspace's key layout.
        case undecodableKey
        /// A record value whose checksum does not match its key and bytes.
        case checksumMismatch
        /// A record value whose fields do not decode with the catalog's layout for its version.
        case undecodableFields
        /// An index entry the records call for that is not stored.
        case missingIndexEntry
        /// A stored index entry no record calls for, or a covering entry whose value is not the record's.
        case staleIndexEntry
        /// An index entry of an index or generation the catalog does not list.
        case orphanIndexEntry
    }

    /// What kind of problem it is.
    public let kind: Kind
    /// The key where the problem is (the record's, the entry's or the catalog entry's).
    public let key: [UInt8]
    /// What was found there, in words, for messages.
    public let detail: String

    init(_ kind: Kind, key: some Sequence<UInt8>, _ detail: String) {
        self.kind = kind
        self.key = Array(key)
        self.detail = detail
    }

    /// The key as text: decoded components when it decodes, else hex.
    public var keyDescription: String { Self.describe(key) }

    public var description: String { "\(kind.rawValue) at \(keyDescription): \(detail)" }

    static func describe(_ key: [UInt8]) -> String {
        let system = key.first == TypeCode.null
        if let components = try? StoredValue.keyComponents(system ? key.dropFirst() : key[...]) {
            return (system ? "system " : "") + StoredValue.array(components).json
        }
        return "hex " + StoredValue.hex(key)
    }

    private enum CodingKeys: String, CodingKey { case kind, key, keyHex, detail }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(keyDescription, forKey: .key)
        try c.encode(StoredValue.hex(key), forKey: .keyHex)
        try c.encode(detail, forKey: .detail)
    }
}

/// What ``Store/verify(listing:progress:)`` found.
public struct StoreVerification: Sendable, Encodable {
    /// One index, as checked against its records.
    public struct IndexCheck: Sendable, Hashable, Encodable {
        /// The keyspace the index belongs to.
        public let keyspace: String
        /// The index's name.
        public let name: String
        /// The generation checked: the current one, or a changed definition's previous one.
        public let generation: Int
        /// The checked generation's ``IndexState`` as text, or `readable (previous generation, …)`.
        public let state: String
        /// Whether the entries were compared with a recomputation from the records.
        public var checked: Bool
        /// Why not, when ``checked`` is `false`.
        public var reason: String?
        /// Entries stored under the checked generation.
        public var entries = 0
        /// Entries its records call for that are not stored (counted when ``checked``).
        public var missing = 0
        /// Stored entries no record calls for, or covering entries whose value is not the record's
        /// (counted when ``checked``; entries of records reported as damaged are not counted again).
        public var stale = 0
    }

    /// Every pair in the store: system keys, records, index entries and keys of other programs.
    public var pairs = 0
    /// Record-shaped pairs (keys starting with a keyspace name), readable or not.
    public var records = 0
    /// Index entries stored, of any index or generation.
    public var indexEntries = 0
    /// Keys that are neither Strata's nor record-shaped (another program's): left alone, not problems.
    public var foreignKeys = 0
    /// Records whose checksum matched but whose version's fields the catalog does not describe.
    public var undescribedRecords = 0
    /// Every index, in keyspace and name order; a changed definition's previous generation follows
    /// its current one.
    public var indexes: [IndexCheck] = []
    /// How many problems were found; ``problems`` lists the first of them.
    public var problemCount = 0
    /// The first problems found, in the order found: at most the `limit` given to
    /// ``Store/verify(listing:progress:)``.
    public var problems: [StoreProblem] = []
    /// Whether nothing is wrong.
    public var isClean: Bool { problemCount == 0 }

    mutating func add(_ problem: StoreProblem, listing limit: Int) {
        problemCount += 1
        if problems.count < limit { problems.append(problem) }
    }

    private enum CodingKeys: String, CodingKey {
        case clean, pairs, records, indexEntries, foreignKeys, undescribedRecords, indexes, problemCount, problems
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(isClean, forKey: .clean)
        try c.encode(pairs, forKey: .pairs)
        try c.encode(records, forKey: .records)
        try c.encode(indexEntries, forKey: .indexEntries)
        try c.encode(foreignKeys, forKey: .foreignKeys)
        try c.encode(undescribedRecords, forKey: .undescribedRecords)
        try c.encode(indexes, forKey: .indexes)
        try c.encode(problemCount, forKey: .problemCount)
        try c.encode(problems, forKey: .problems)
    }
}

extension Store {
    /// Checks the whole store in one read transaction, without any Swift record type: every
    /// catalog entry and index definition decodes; every record is in a catalogued keyspace, its
    /// key fits the key layout, its checksum matches and its fields decode with the catalog's
    /// layout for its version; every readable index equals a recomputation from its records
    /// (missing and stale entries), and no entry belongs to an index or generation the catalog
    /// does not list. The manifest was checked when the store opened.
    ///
    /// Lists the first `limit` problems (all are counted). `progress` is called about every
    /// 1,000 pairs; reads every pair twice (a count, then the checks). An index whose components
    /// are not stored fields or key components the catalog describes (a codec's, JSON) is
    /// reported as not checked, with the reason.
    public func verify(listing limit: Int = 10, progress: (InspectionProgress) -> Void = { _ in }) throws -> StoreVerification {
        // The ticker holding `progress` ends with the read.
        try withoutActuallyEscaping(progress) { progress in try verify(listing: limit, ticking: progress) }
    }

    private func verify(listing limit: Int, ticking progress: @escaping (InspectionProgress) -> Void) throws -> StoreVerification {
        try engine.read { tx in
            var report = StoreVerification()
            let catalog = try CatalogSnapshot(tx, envelope: envelope)
            for problem in catalog.problems { report.add(problem, listing: limit) }
            var ticker = try ProgressTicker(tx, .all, progress)

            // Every index, in keyspace and name order, with the entries its records call for
            // (kept only while it can be checked). Mutated in place: a copy per record would copy
            // the entries too.
            struct Expectation {
                var check: StoreVerification.IndexCheck
                let index: StoredIndex
                var entries: [[UInt8]: [UInt8]] = [:]
                /// An index of totals: each group's count and sum, added up from the records.
                var totals: [[UInt8]: (count: Int128, sum: Int128)]?
            }
            var expectations: [Expectation] = []
            // Per keyspace and index name, the expectations by generation: the current one and a
            // changed definition's previous generation (readable, maintained).
            var positions: [String: [String: [Int: Int]]] = [:]
            for keyspace in catalog.indexes.keys.sorted() {
                for (name, index) in catalog.indexes[keyspace]!.sorted(by: { $0.name < $1.name }) {
                    var check = StoreVerification.IndexCheck(keyspace: keyspace, name: name, generation: index.generation,
                                                             state: "\(index.state)", checked: index.state == .readable)
                    if index.state != .readable { check.reason = "not readable" }
                    positions[keyspace, default: [:]][name, default: [:]][index.generation] = expectations.count
                    expectations.append(Expectation(check: check, index: index, totals: AggregateKinds.keepTotals(index.definition.kind) ? [:] : nil))
                    if let previous = index.previous {
                        let check = StoreVerification.IndexCheck(keyspace: keyspace, name: name, generation: previous.generation,
                                                                 state: "readable (previous generation, while \(index.generation) is built)", checked: true)
                        positions[keyspace]![name]![previous.generation] = expectations.count
                        expectations.append(Expectation(check: check, index: StoredIndex(generation: previous.generation, state: .readable,
                                                                                         definition: previous.definition),
                                                        totals: AggregateKinds.keepTotals(previous.definition.kind) ? [:] : nil))
                    }
                }
            }

            // Records reported as damaged: their entries are not reported again as stale, and the
            // totals of their keyspaces are not checked (a group's records are not all known).
            var unreadable = Set<[UInt8]>()
            var unreadableKeyspaces = Set<String>()
            try tx.scan(SystemKey.nonSystem, reverse: false, limit: nil) { key, value in
                try ticker.tick()
                report.pairs += 1
                guard let (keyspace, keyStart) = CatalogSnapshot.keyspace(of: key) else {
                    report.foreignKeys += 1
                    return true
                }
                report.records += 1
                let record: DecodedRecord
                do {
                    record = try catalog.decode(key: key, value: value)
                } catch let failure as RecordDecodingFailure {
                    report.add(StoreProblem(failure.kind, key: key, failure.detail), listing: limit)
                    unreadable.insert(Array(key))
                    unreadableKeyspaces.insert(keyspace)
                    return true
                }
                if record.undescribed != nil { report.undescribedRecords += 1 }
                guard let here = positions[keyspace], let entry = catalog.keyspaces[keyspace] else { return true }
                for i in here.values.flatMap(\.values) where expectations[i].check.checked {
                    do throws(IndexUnverifiable) {
                        if expectations[i].totals != nil {
                            let (groups, amount) = try CatalogSnapshot.totalGroups(
                                of: expectations[i].index.definition, generation: expectations[i].index.generation, keyspace: keyspace,
                                name: expectations[i].check.name, record: record, keyLayout: entry.key)
                            for group in groups {
                                let total = expectations[i].totals![group] ?? (0, 0)
                                expectations[i].totals![group] = (total.count + 1, total.sum + Int128(amount))
                            }
                            continue
                        }
                        let keys = try CatalogSnapshot.entries(
                            of: expectations[i].index.definition, generation: expectations[i].index.generation, keyspace: keyspace,
                            name: expectations[i].check.name, record: record, keyLayout: entry.key,
                            primaryKey: UnsafeRawBufferPointer(rebasing: key[keyStart...]))
                        let stored = expectations[i].index.definition.covering ? Array(value) : []
                        for k in keys { expectations[i].entries[k] = stored }
                    } catch {
                        expectations[i].check.checked = false
                        expectations[i].check.reason = error.reason
                        expectations[i].entries = [:]
                        if expectations[i].totals != nil { expectations[i].totals = [:] }
                    }
                }
                return true
            }
            // An index of totals calls for one pair per group: its count and sum (a total that
            // does not fit Int64 calls for a value no pair holds, so the stored one is reported).
            for i in expectations.indices where expectations[i].check.checked {
                guard let totals = expectations[i].totals else { continue }
                if unreadableKeyspaces.contains(expectations[i].check.keyspace) {
                    expectations[i].check.checked = false
                    expectations[i].check.reason = "records of its keyspace could not be read (reported above): its totals cannot be recomputed"
                    expectations[i].totals = [:]
                    continue
                }
                for (group, total) in totals {
                    if let count = Int64(exactly: total.count), let sum = Int64(exactly: total.sum) {
                        expectations[i].entries[group] = AggregateTotal(count: count, sum: sum).encoded
                    } else {
                        expectations[i].entries[group] = []
                    }
                }
                expectations[i].totals = [:]
            }

            // The system keys; index entries must belong to a listed generation and match their records.
            try tx.scan(.prefix(SystemKey.prefix), reverse: false, limit: nil) { key, value in
                try ticker.tick()
                report.pairs += 1
                guard key.starts(with: SystemKey.allIndexEntries) else { return true }
                report.indexEntries += 1
                guard let (keyspace, name, generation, valuesStart) = SystemKey.indexEntry(key) else {
                    report.add(StoreProblem(.orphanIndexEntry, key: key, "the entry key does not name an index"), listing: limit)
                    return true
                }
                guard let generations = positions[keyspace]?[name] else {
                    report.add(StoreProblem(.orphanIndexEntry, key: key, "the catalog has no index \(keyspace).\(name)"), listing: limit)
                    return true
                }
                guard let i = generations[generation] else {
                    if !generations.values.contains(where: { expectations[$0].index.retired.contains(generation) }) {
                        report.add(StoreProblem(.orphanIndexEntry, key: key, "index \(keyspace).\(name) has no generation \(generation)"), listing: limit)
                    }
                    return true
                }
                expectations[i].check.entries += 1
                guard expectations[i].check.checked else { return true }
                let want = expectations[i].entries.removeValue(forKey: Array(key))
                if let want, want.elementsEqual(value) { return true }
                if let record = Self.recordKey(ofEntry: key, valuesStart: valuesStart, keyspace: keyspace,
                                               components: expectations[i].index.definition.components.count) {
                    if unreadable.contains(record) { return true }
                    // Mid-rotation: the entry holds its record's contents, sealed before the record was re-sealed.
                    if let want, record.withUnsafeBytes({ r in want.withUnsafeBytes { envelope.sameContents(key: r, $0, value) } }) { return true }
                }
                expectations[i].check.stale += 1
                if expectations[i].totals != nil {
                    let stored = AggregateTotal(stored: value).map { "\($0)" } ?? "\(value.count) bytes"
                    let records = want.map { AggregateTotal(stored: $0).map { "\($0)" } ?? "a total beyond Int64" } ?? "no record in this group"
                    report.add(StoreProblem(.staleIndexEntry, key: key, "index \(keyspace).\(name): the stored total (\(stored)) is not the records' (\(records))"),
                               listing: limit)
                    return true
                }
                report.add(StoreProblem(.staleIndexEntry, key: key, "index \(keyspace).\(name): no record calls for this entry, or its value is not the record's"), listing: limit)
                return true
            }
            for i in expectations.indices {
                let (keyspace, name) = (expectations[i].check.keyspace, expectations[i].check.name)
                expectations[i].check.missing = expectations[i].entries.count
                for missing in expectations[i].entries.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                    if expectations[i].totals != nil {
                        let total = AggregateTotal(stored: expectations[i].entries[missing]!).map { "\($0)" } ?? "a total beyond Int64"
                        report.add(StoreProblem(.missingIndexEntry, key: missing, "index \(keyspace).\(name): no stored total for a group the records hold (\(total))"),
                                   listing: limit)
                        continue
                    }
                    report.add(StoreProblem(.missingIndexEntry, key: missing, "index \(keyspace).\(name): a record calls for this entry"), listing: limit)
                }
                report.indexes.append(expectations[i].check)
            }
            try ticker.finish()
            return report
        }
    }

    /// The key of the record an index entry belongs to: the keyspace, then what follows the
    /// entry's `components` values (which start at `valuesStart`).
    static func recordKey(ofEntry key: UnsafeRawBufferPointer, valuesStart: Int, keyspace: String, components: Int) -> [UInt8]? {
        var reader = KeyReader(UnsafeRawBufferPointer(rebasing: key[valuesStart...]))
        for _ in 0..<components { guard (try? reader.skipComponent()) != nil else { return nil } }
        return KeyCodec.encode(keyspace) + Array(UnsafeRawBufferPointer(rebasing: reader.bytes[reader.offset...]))
    }
}
