import StrataEngine
import StrataKeyCodec

extension StoreProblem: Error {}

extension Store {
    /// Visits the records of `keyspace` (or of every keyspace) in key order, decoded through the
    /// catalog without their Swift types, in one read transaction; `visit` returns `false` to
    /// stop. A record that cannot be decoded (damaged, uncatalogued) is visited as a
    /// ``StoreProblem`` and the dump goes on. Keys of other programs are skipped.
    ///
    /// `from` (inclusive) and `to` (exclusive) are leading key components of `keyspace`'s key,
    /// such as `[.string("Dallas")]`: the range is that of their key encoding (KeyEncoding.md,
    /// "Component ranges"), so `from: ["D"], to: ["E"]` holds every key whose first component is
    /// at least "D" and below "E".
    ///
    /// With `progress`, the range is read twice (the first pass counts its pairs) and every
    /// 1,000 pairs are reported.
    public func dump(keyspace: String? = nil, from: [StoredValue] = [], to: [StoredValue] = [],
                     progress: ((InspectionProgress) -> Void)? = nil,
                     _ visit: (Result<DecodedRecord, StoreProblem>) throws -> Bool) throws {
        let range = try Self.dumpRange(keyspace: keyspace, from: from, to: to)
        try engine.read { tx in
            let catalog = try CatalogSnapshot(tx, envelope: envelope)
            var ticker = try ProgressTicker(tx, range, progress)
            defer { try? ticker.finish() }
            try tx.scan(range, reverse: false, limit: nil) { key, value in
                try ticker.tick()
                guard CatalogSnapshot.keyspace(of: key) != nil else { return true }
                do {
                    return try visit(.success(try catalog.decode(key: key, value: value)))
                } catch let failure as RecordDecodingFailure {
                    return try visit(.failure(StoreProblem(failure.kind, key: key, failure.detail)))
                }
            }
        }
    }

    /// Visits the stored pairs in `range` as they are (system keys, records, index entries and
    /// other programs' keys alike), in one read transaction.
    public func dumpRaw(_ range: KeyRange = .all, _ visit: (_ key: [UInt8], _ value: [UInt8]) throws -> Bool) throws {
        try engine.read { tx in
            try tx.scan(range, reverse: false, limit: nil) { key, value in try visit(Array(key), Array(value)) }
        }
    }

    static func dumpRange(keyspace: String?, from: [StoredValue], to: [StoredValue]) throws -> KeyRange {
        guard let keyspace else {
            guard from.isEmpty && to.isEmpty else { throw StoreToolError.invalidArgument("a key range needs a keyspace") }
            return SystemKey.nonSystem
        }
        func encode(_ values: [StoredValue]) throws -> [UInt8] {
            try values.reduce(KeyCodec.encode(keyspace)) { key, value in
                guard let bytes = value.keyEncoding else { throw StoreToolError.invalidArgument("\(value.json) is not a key component") }
                return key + bytes
            }
        }
        let prefix = KeyCodec.encode(keyspace)
        return KeyRange(lower: .inclusive(try encode(from)),
                        upper: .exclusive(to.isEmpty ? prefix + [0xFF] : try encode(to)))
    }
}
