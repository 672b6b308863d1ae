import StrataEngine

/// The batching every online job shares (the format upgrade, index builds and clean-ups, record
/// migrations): each batch is one short write transaction that reads the job's stored position,
/// works on the next pairs after it and stores the new position in the same transaction. A crash
/// loses at most the batch in flight (it never committed), a reopen resumes from the stored
/// position, and two processes running one job take turns batch by batch (writers are
/// serialized), so no pair is handled twice.
struct JobBatch {
    /// At most this many pairs a batch, by default.
    static let defaultSize = 1_000
    /// And about this long, so other writers wait at most about this long.
    static let duration: Duration = .milliseconds(50)

    /// The most pairs a batch may hold: `requested`, within the engine's declared operations per
    /// transaction (with room for the job's own writes).
    let size: Int
    /// Bytes a batch may read (half the engine's per-transaction byte limit, if it has one).
    let bytes: Int?
    /// Operations a batch may write, when the engine limits them.
    let operations: Int?

    init(engine: any KeyValueEngine, requested: Int = defaultSize) {
        var size = max(1, requested)
        if let limit = engine.limits.maxOperationsPerTransaction { size = max(1, min(size, limit - 2)) }
        self.size = size
        bytes = engine.limits.maxBytesPerTransaction.map { $0 / 2 }
        operations = engine.limits.maxOperationsPerTransaction.map { max(1, $0 - 2) }
    }

    private init(size: Int, bytes: Int?, operations: Int?) {
        (self.size, self.bytes, self.operations) = (size, bytes, operations)
    }

    /// Half this batching, for a job whose batch wrote more than the engine takes in one
    /// transaction (`EngineError.transactionTooLarge`; a migrated record rewrites its covering
    /// entries too, which a batch cannot count before it writes them); `nil` at one pair a
    /// batch, where the work of a single pair is too large for the engine.
    func halved() -> JobBatch? {
        guard size > 1 else { return nil }
        return JobBatch(size: size / 2, bytes: bytes.map { max(1, $0 / 2) }, operations: operations)
    }

    /// Runs one batch's transaction; when the engine refuses it as too large (it rolled back,
    /// nothing of it was written), runs it again with half the batching, down to one pair.
    /// `batching` keeps the size that worked, for the batches after it.
    static func run<T>(_ batching: inout JobBatch, _ batch: (JobBatch) throws -> T) throws -> T {
        while true {
            do {
                return try batch(batching)
            } catch EngineError.transactionTooLarge(let what, let limit) {
                guard let smaller = batching.halved() else { throw EngineError.transactionTooLarge(what: what, limit: limit) }
                batching = smaller
            }
        }
    }

    /// The next pairs of `range` strictly after `after` (all of it when `nil`), copied out (an
    /// engine lends its bytes only inside the scan), and whether the range is exhausted.
    func next(in tx: any KeyValueReader, _ range: KeyRange, after: [UInt8]?) throws -> (pairs: [(key: [UInt8], value: [UInt8])], exhausted: Bool) {
        var range = range
        if let after { range = range.above(after) }
        var pairs: [(key: [UInt8], value: [UInt8])] = []
        var read = 0
        let deadline = ContinuousClock.now + Self.duration
        var exhausted = true
        try tx.scan(range, reverse: false, limit: nil) { key, value in
            // Time and bytes end a batch only once it holds a pair, so every batch moves on.
            if pairs.count == size || (!pairs.isEmpty && (ContinuousClock.now > deadline || bytes.map({ read > $0 }) == true)) {
                exhausted = false
                return false
            }
            pairs.append((Array(key), Array(value)))
            read += key.count + value.count
            return true
        }
        return (pairs, exhausted)
    }
}
