import StrataEngine

/// How far a long inspection has come: pairs done out of the total, and the time so far.
public struct InspectionProgress: Sendable, Hashable {
    /// Pairs handled so far.
    public let done: Int
    /// Pairs the pass handles in all, counted before it starts.
    public let total: Int
    /// Time since the pass started, on the continuous clock.
    public let elapsed: Duration
}

/// Counts the pairs a pass visits and hands every 1,000th count, and the last, to a progress
/// callback. The total is counted first, in the same read transaction, and only when there is
/// a callback: the count reads the range once more.
struct ProgressTicker {
    private let report: ((InspectionProgress) throws -> Void)?
    private let total: Int
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private(set) var done = 0

    init(_ tx: any KeyValueReader, _ range: KeyRange, _ report: ((InspectionProgress) throws -> Void)?) throws {
        var total = 0
        if report != nil { try tx.scan(range, reverse: false, limit: nil) { _, _ in total += 1; return true } }
        self.report = report
        self.total = total
        start = clock.now
    }

    var progress: InspectionProgress { InspectionProgress(done: done, total: total, elapsed: clock.now - start) }

    /// One pair more; every 1,000th is reported.
    mutating func tick() throws {
        done += 1
        if done % 1_000 == 0, let report { try report(progress) }
    }

    /// Reports where the pass ended.
    func finish() throws { try report?(progress) }
}
