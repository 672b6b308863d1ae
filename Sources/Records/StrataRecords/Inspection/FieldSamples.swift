import StrataEngine
import StrataKeyCodec

extension Store {
    /// The fields of up to `limit` records as the records wrote them (the store's value
    /// transforms reversed), drawn at random among every record, or those of `keyspace`: samples
    /// to train a compression dictionary from (`ZstdDictionary.train(samples:size:)` in
    /// `StrataCompression`). Reads every record once, in one read transaction; values that
    /// cannot be opened are passed over. Each record is equally likely to be drawn (reservoir
    /// sampling), so a large keyspace is not represented by its first keys only.
    public func fieldSamples(keyspace: String? = nil, limit: Int = 1_000) throws -> [[UInt8]] {
        precondition(limit > 0, "a sample holds at least one record")
        return try engine.read { tx in
            var samples: [[UInt8]] = []
            var seen = 0
            var random = SystemRandomNumberGenerator()
            try tx.scan(keyspace.map { .prefix(KeyCodec.encode($0)) } ?? SystemKey.nonSystem, reverse: false, limit: nil) { key, value in
                guard CatalogSnapshot.keyspace(of: key) != nil, let fields = envelope.contents(key: key, value: value)?.fields else { return true }
                seen += 1
                if samples.count < limit {
                    samples.append(fields)
                } else if case let slot = Int.random(in: 0..<seen, using: &random), slot < limit {
                    samples[slot] = fields
                }
                return true
            }
            return samples
        }
    }
}
