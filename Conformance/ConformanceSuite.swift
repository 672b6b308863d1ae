import Foundation
import StrataEngine

/// An engine to check: how to open a store of it in a directory.
///
/// ```swift
/// let subject = EngineUnderTest(name: "mine") { directory, options in
///     try MyEngine(path: directory, options: options)
/// }
/// let report = ConformanceSuite.run(subject)
/// precondition(report.failures.isEmpty, report.description)
/// ```
///
/// The capabilities and limits checked are the ones the engine itself declares (read from an
/// instance opened once in a scratch directory): the suite's cross-check cases then hold the
/// declaration to the engine's behaviour.
public struct EngineUnderTest: Sendable, CustomStringConvertible {
    /// The name reports and failure messages give the engine (an `EngineKind`'s own name when
    /// made from one).
    public let name: String
    /// The capabilities the engine declares; cases that need one it lacks are skipped and
    /// listed as such (only things an engine may legitimately lack are capabilities).
    public let capabilities: EngineCapabilities
    /// The limits the engine declares.
    public let limits: EngineLimits
    /// Opens a store in `directory` with `options`. Each case gets a fresh, empty directory
    /// (it exists and is empty when the case begins); an engine that keeps nothing on disk
    /// may ignore it.
    public let open: @Sendable (_ directory: String, _ options: EngineOptions) throws -> any KeyValueEngine
    /// The second process multi-process cases drive (see ``ConformancePeer``). An engine that
    /// declares `EngineCapabilities.multiProcess` without one fails those cases.
    public var peer: ConformancePeer?
    /// Where the engine keeps a store: directories (the default), or the engine's own mapping
    /// of a path onto its namespace (see ``StoreLocations``).
    public var locations: any StoreLocations = FileLocations()

    /// Opens one instance in a scratch directory to read its declaration; throws when that fails.
    public init(
        name: String,
        open: @escaping @Sendable (_ directory: String, _ options: EngineOptions) throws -> any KeyValueEngine
    ) throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("strata-declaration-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let probe = try open(scratch, EngineOptions())
        self.init(name: name, capabilities: probe.capabilities, limits: probe.limits, open: open)
        try probe.close()
    }

    /// An engine of a known kind, with the capabilities and limits its kind declares.
    public init(_ kind: EngineKind, peer: ConformancePeer? = nil) {
        self.init(name: kind.name, capabilities: kind.declaration.capabilities, limits: kind.declaration.limits) { directory, options in
            try kind.open(directory, options)
        }
        self.peer = peer
    }

    /// An engine described by hand. The suite's cross-check cases catch a description that
    /// does not match the engine's behaviour; prefer the initializers that read the declaration.
    public init(
        name: String, capabilities: EngineCapabilities, limits: EngineLimits = EngineLimits(),
        open: @escaping @Sendable (_ directory: String, _ options: EngineOptions) throws -> any KeyValueEngine
    ) {
        self.name = name
        self.capabilities = capabilities
        self.limits = limits
        self.open = open
    }

    public var description: String { name }
}

/// One named behaviour of the contract.
public struct ConformanceCase: Sendable {
    /// The group, e.g. `"range"`.
    public let group: String
    /// The behaviour, e.g. `"lower inclusive, upper exclusive, reverse"`.
    public let name: String
    /// Capabilities the case needs; it is skipped on engines without them.
    public let requires: EngineCapabilities
    let body: @Sendable (CaseContext) throws -> Void

    /// A case `group`/`name` that runs `body` on a fresh ``CaseContext``, skipped on engines that
    /// lack any of `requires` (none by default). The case fails when `body` throws, or when closing
    /// the stores it opened does.
    public init(_ group: String, _ name: String, requires: EngineCapabilities = [], _ body: @escaping @Sendable (CaseContext) throws -> Void) {
        self.group = group
        self.name = name
        self.requires = requires
        self.body = body
    }

    /// `group/name`, unique in the suite.
    public var id: String { "\(group)/\(name)" }

    /// This case with its body run inside `wrapper` (which must call the body it is given once):
    /// for a kit that runs its cases in a setting of its own, such as stores opened with options.
    public func wrapped(_ wrapper: @escaping @Sendable (_ body: () throws -> Void) throws -> Void) -> ConformanceCase {
        let body = self.body
        return ConformanceCase(group, name, requires: requires) { ctx in try wrapper { try body(ctx) } }
    }
}

/// The outcome of a run.
public struct ConformanceReport: Sendable, CustomStringConvertible {
    /// A case that failed, and why.
    public struct Failure: Sendable {
        /// The case's ``ConformanceCase/id`` (`group/name`).
        public let caseID: String
        /// What the case threw: for a broken rule, the expected and the actual result.
        public let message: String
    }
    /// The engine's ``EngineUnderTest/name``.
    public let engine: String
    /// The ids of the cases that passed, in the order they ran.
    public internal(set) var passed: [String] = []
    /// The cases that failed, in the order they ran.
    public internal(set) var failures: [Failure] = []
    /// Cases not run, with the capability they need.
    public internal(set) var skipped: [String] = []

    /// Cases run.
    public var caseCount: Int { passed.count + failures.count }

    public var description: String {
        var lines = ["\(engine): \(caseCount) cases, \(passed.count) passed, \(failures.count) failed, \(skipped.count) skipped (capability not declared)"]
        for failure in failures { lines.append("  FAIL \(failure.caseID): \(failure.message)") }
        return lines.joined(separator: "\n")
    }
}

/// The conformance suite: every rule of the `KeyValueEngine` contract as named cases.
/// `Conformance/README.md` states the same rules in words.
public enum ConformanceSuite {
    /// Every case, grouped.
    public static let cases: [ConformanceCase] =
        PointCases.all + OrderCases.all + RangeCases.all + ClearCases.all + TransactionCases.all + LifecycleCases.all
        + DeclarationCases.all + MultiProcessCases.all + CompactionCases.all

    /// Runs the suite on a thread of its own and resumes the caller when it is done. Use this
    /// from async code (Swift Testing runs tests on the cooperative pool): some cases wait for
    /// async tasks, which must not compete with the waiting thread for the pool.
    public static func run(
        _ engine: EngineUnderTest, filter: String? = nil, progress: (@Sendable (ConformanceCase) -> Void)? = nil
    ) async -> ConformanceReport {
        await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: run(engine, filter: filter, progress: progress))
            }.start()
        }
    }

    /// Runs the one case whose id is `caseID` (on a thread of its own, as the async `run(_:filter:progress:)`);
    /// a report with no case at all when there is no such case.
    public static func run(_ engine: EngineUnderTest, caseID: String) async -> ConformanceReport {
        await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: run(engine, cases: cases.filter { $0.id == caseID }))
            }.start()
        }
    }

    /// Runs `cases` against `engine` on a thread of its own (as the async `run(_:filter:progress:)`).
    public static func run(_ engine: EngineUnderTest, cases: [ConformanceCase]) async -> ConformanceReport {
        await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: run(engine, cases: cases, progress: nil))
            }.start()
        }
    }

    /// Runs the cases whose id contains `filter` (all when `nil`) against `engine`, each on a
    /// fresh store in a fresh temporary directory, and reports each failure with the expected
    /// and actual results.
    public static func run(
        _ engine: EngineUnderTest, filter: String? = nil, progress: ((ConformanceCase) -> Void)? = nil
    ) -> ConformanceReport {
        run(engine, cases: cases.filter { testCase in filter.map { testCase.id.contains($0) } ?? true }, progress: progress)
    }

    /// Runs `cases` (this suite's, or another kit's such as `RecordConformance.cases`) against
    /// `engine`, each on a fresh store in a fresh temporary directory.
    public static func run(_ engine: EngineUnderTest, cases: [ConformanceCase], progress: ((ConformanceCase) -> Void)? = nil) -> ConformanceReport {
        var report = ConformanceReport(engine: engine.name)
        for testCase in cases {
            if !engine.capabilities.isSuperset(of: testCase.requires) {
                report.skipped.append(testCase.id)
                continue
            }
            progress?(testCase)
            let context = CaseContext(engine: engine)
            do {
                try testCase.body(context)
                try context.finish()
                report.passed.append(testCase.id)
            } catch {
                context.abandon()
                report.failures.append(.init(caseID: testCase.id, message: "\(error)"))
            }
        }
        return report
    }
}
