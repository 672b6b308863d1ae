import StrataConformance
import StrataEngine
import StrataRecords

/// The record layer's conformance cases: what an engine must do for records and their secondary
/// indexes to behave as on every bundled engine (ordered scans in both directions, limits, reading
/// a transaction's own writes, atomic commits and rollbacks, as the record layer uses them).
///
/// Run them beside the engine cases, on the same `EngineUnderTest`:
///
/// ```swift
/// let engine = try EngineUnderTest(name: "mine") { directory, options in try MyEngine(path: directory, options: options) }
/// let report = ConformanceSuite.run(engine, cases: ConformanceSuite.cases + RecordConformance.cases)
/// precondition(report.failures.isEmpty, report.description)
/// ```
public enum RecordConformance {
    /// Every record-layer case: `index/…` (queries of every shape on every kind of index, their
    /// maintenance by every kind of write, unique violations, key limits, builds, paging), `totals/…`
    /// (indexes of totals: counts and sums per group, kept, built online, refused where records are meant) and
    /// `changefeed/…` (the change feed: exactly the committed transactions, tokens, retention) and
    /// `migration/…` (schema versions across a reopen: explicit bumps always migrate) and `codable/…`
    /// (plain `Codable` records in every value format, typed queries by `id`, key-path indexes)
    /// and `generated-keys/…` (auto-increment keys) and `planner/…` (predicate queries: every plan
    /// the planner chooses answers as Foundation's `evaluate`, an index being built included) and
    /// `observation/…` (observed queries and the feed under 10,000 commits from two writers, in
    /// two processes where the engine allows: the peer serves ``peerCommands``).
    public static let cases: [ConformanceCase] = IndexCases.all + AggregateCases.all + EdgeValueCases.all + ChangeFeedCases.all + MigrationCases.all
        + CodableRecordCases.all + GeneratedKeyCases.all + PlannerCases.all + ObservationCases.all

    /// The commands the observation cases (`observation/…`) send the peer process: serve them
    /// from the engine's helper executable, so those cases write from two processes where the
    /// engine declares `multiProcess` (`ConformancePeer`).
    ///
    /// ```swift
    /// try ConformancePeer.serve(subject, commands: RecordConformance.peerCommands)
    /// ```
    public static let peerCommands: [String: ConformancePeer.Command] = ["observation-writes": ObservationWorkload.peerCommand]

    /// ``cases``, their stores opened with the value transforms `transforms` (encryption,
    /// compression): everything the cases check must hold with the values transformed.
    ///
    /// ```swift
    /// let cases = RecordConformance.cases(transforms: [RecordEncryption(key: .random())])
    /// ```
    public static func cases(transforms: [any ValueTransform]) -> [ConformanceCase] {
        cases.map { $0.wrapped { body in try CaseStores.$transforms.withValue(transforms, operation: body) } }
    }

    /// `cases`, the observation cases run at `scale` (for an engine whose commits are slow,
    /// such as a networked one: Strata's etcd runs in `make test` use a small scale, and
    /// `make test-long` the full one).
    ///
    /// ```swift
    /// let quick = RecordConformance.cases(RecordConformance.cases, observation: ObservationScale(observers: 50, commits: 300))
    /// ```
    public static func cases(_ cases: [ConformanceCase], observation scale: ObservationScale) -> [ConformanceCase] {
        cases.map { $0.wrapped { body in try CaseStores.$observation.withValue(scale, operation: body) } }
    }
}

/// How large the observation cases (`observation/…`) run: how many queries are observed, on
/// disjoint ranges (the last tenth never written), and how many commits the two writers make
/// together.
public struct ObservationScale: Sendable, Hashable {
    /// Observed queries (at least 3).
    public var observers: Int
    /// Commits of both writers together.
    public var commits: Int

    /// What the cases run by default: 1,000 observers, 10,000 commits.
    public static let full = ObservationScale(observers: 1_000, commits: 10_000)

    /// A scale of `observers` observed queries and `commits` commits.
    public init(observers: Int, commits: Int) {
        self.observers = observers
        self.commits = commits
    }
}

/// How the record cases open their stores: with the transforms of ``RecordConformance/cases(transforms:)``,
/// or none.
enum CaseStores {
    @TaskLocal static var transforms: [any ValueTransform] = []
    /// How large the observation cases run (``RecordConformance/cases(_:observation:)``).
    @TaskLocal static var observation: ObservationScale = .full

    /// Whether the case's stores carry transforms (another process could not open them: it is
    /// not given the keys).
    static var hasTransforms: Bool { !transforms.isEmpty }

    /// A record store on `engine`, with the case's transforms.
    static func store(on engine: any KeyValueEngine) throws -> Store {
        try Store(engine: engine, transforms: transforms)  // none: a plain store, as Store(engine:) opens
    }
}
