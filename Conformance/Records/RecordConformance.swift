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
    /// the planner chooses answers as Foundation's `evaluate`, an index being built included).
    public static let cases: [ConformanceCase] = IndexCases.all + AggregateCases.all + EdgeValueCases.all + ChangeFeedCases.all + MigrationCases.all
        + CodableRecordCases.all + GeneratedKeyCases.all + PlannerCases.all

    /// ``cases``, their stores opened with the value transforms `transforms` (encryption,
    /// compression): everything the cases check must hold with the values transformed.
    ///
    /// ```swift
    /// let cases = RecordConformance.cases(transforms: [RecordEncryption(key: .random())])
    /// ```
    public static func cases(transforms: [any ValueTransform]) -> [ConformanceCase] {
        cases.map { $0.wrapped { body in try CaseStores.$transforms.withValue(transforms, operation: body) } }
    }
}

/// How the record cases open their stores: with the transforms of ``RecordConformance/cases(transforms:)``,
/// or none.
enum CaseStores {
    @TaskLocal static var transforms: [any ValueTransform] = []

    /// A record store on `engine`, with the case's transforms.
    static func store(on engine: any KeyValueEngine) throws -> Store {
        try Store(engine: engine, transforms: transforms)  // none: a plain store, as Store(engine:) opens
    }
}
