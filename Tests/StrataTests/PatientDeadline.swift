/// A hang guard for loops that wait on the cooperative pool: it counts only the time its loop got
/// to run, at most `step` per look.
///
/// Why: the suite's long synchronous tests hold the pool's threads (2 on a 2-core machine) for
/// minutes at a time. A wall-clock deadline then passes while neither the waiting loop nor the
/// work it waits for could run, and the first look after the pool frees up fails a correct run
/// (observation tests, sessions 27 and 35). A look that comes long after the previous one counts
/// `step`: a starved loop loses almost nothing, and a real hang (every look on time, nothing
/// arriving) still fails once `limit` of looks passed.
struct PatientDeadline {
    private var left: Duration
    private var last = ContinuousClock.now
    private let step: Duration

    init(_ limit: Duration, step: Duration = .seconds(1)) {
        left = limit
        self.step = step
    }

    /// Whether the limit is used up, counting the time since the previous look (at most `step`).
    mutating func passed() -> Bool {
        let now = ContinuousClock.now
        left -= min(now - last, step)
        last = now
        return left <= .zero
    }
}
