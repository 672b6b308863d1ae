import Foundation
import StrataEngine

/// The differential test: random operation logs run against an engine and against
/// `ReferenceModel`; every result must be identical. A failure reports the seed and a shrunk
/// log (steps and operations removed while it still fails), small enough to read.
public enum DifferentialTest {
    /// The outcome of one run.
    public struct Report: Sendable, CustomStringConvertible {
        /// The engine's ``EngineUnderTest/name``.
        public let engine: String
        /// The seed the log was generated from: running again with it replays the same log.
        public let seed: UInt64
        /// How many operations the log held: at least the number asked for, since whole steps are
        /// generated (opening or closing a held reader counts as one).
        public let operations: Int
        /// `nil` when the engine matched the model on every operation.
        public let failure: String?

        public var description: String {
            guard let failure else { return "\(engine): differential seed \(seed), \(operations) operations, identical to the model" }
            return "\(engine): differential seed \(seed) FAILED\n\(failure)"
        }
    }

    /// Runs a log of at least `operations` operations generated from `seed`.
    public static func run(_ engine: EngineUnderTest, seed: UInt64, operations: Int = 10_000) -> Report {
        var generator = LogGenerator(seed: seed)
        let log = generator.log(operations: operations)
        let count = log.reduce(0) { $0 + $1.operationCount }
        guard let mismatch = replay(engine, log) else {
            return Report(engine: engine.name, seed: seed, operations: count, failure: nil)
        }
        let shrunk = shrink(engine, Array(log.prefix(mismatch.step + 1)))
        let final = replay(engine, shrunk) ?? mismatch
        let text = (["first mismatch: \(mismatch.detail)", "shrunk log (\(shrunk.count) steps), failing as: \(final.detail)"]
            + shrunk.enumerated().map { "  \($0.offset): \($0.element)" }).joined(separator: "\n")
        return Report(engine: engine.name, seed: seed, operations: count, failure: text)
    }

    /// The same as ``run(_:seed:operations:)``, on a thread of its own (for async callers).
    public static func run(_ engine: EngineUnderTest, seed: UInt64, operations: Int = 10_000) async -> Report {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: run(engine, seed: seed, operations: operations)) }.start()
        }
    }

    struct Mismatch {
        let step: Int
        let detail: String
    }

    /// Runs `log` on a fresh store and on a fresh model; the first differing result, if any.
    static func replay(_ engine: EngineUnderTest, _ log: [Step]) -> Mismatch? {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-differential-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store: any KeyValueEngine
        do {
            store = try engine.open(directory, EngineOptions(mode: .create, durability: .relaxed))
        } catch {
            return Mismatch(step: 0, detail: "cannot open a store: \(error)")
        }
        var model = ReferenceModel()
        var readers: [Int: (HeldReader, ReferenceModel)] = [:]
        defer {
            for (reader, _) in readers.values { reader.close() }
            try? store.close()
        }
        for (index, step) in log.enumerated() {
            var expected: [ReferenceModel.Result] = []
            let actual: [ReferenceModel.Result]
            var operations: [Operation] = []
            switch step {
            case let .write(ops, commit):
                operations = ops
                var scratch = model
                expected = ops.map { scratch.apply($0) }
                if commit { model = scratch }
                var results: [ReferenceModel.Result] = []
                do {
                    try store.write { tx in
                        results = ops.map { execute($0, tx) }
                        if !commit { throw Abort() }
                    }
                } catch is Abort {
                } catch {
                    results.append(.error("commit: \(error)"))
                }
                actual = results
            case let .read(ops):
                operations = ops
                var scratch = model
                expected = ops.map { scratch.apply($0) }
                actual = (try? store.read { tx in ops.map { execute($0, tx) } }) ?? [.error("the read transaction failed")]
            case let .openReader(id):
                do {
                    readers[id] = (try HeldReader(store), model)
                } catch {
                    return Mismatch(step: index, detail: "step \(index) \(step): \(error)")
                }
                continue
            case let .readHeld(id, ops):
                guard let (reader, snapshot) = readers[id] else { continue }  // a shrunk log may have lost the open
                operations = ops
                var scratch = snapshot
                expected = ops.map { scratch.apply($0) }
                actual = reader.run(ops)
            case let .closeReader(id):
                readers.removeValue(forKey: id)?.0.close()
                continue
            }
            if actual != expected {
                let i = zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(actual.count, expected.count)
                let op = i < operations.count ? "operation \(i) (\(operations[i]))" : "the commit"
                let want = i < expected.count ? expected[i].description : "nothing"
                let got = i < actual.count ? actual[i].description : "nothing"
                return Mismatch(step: index, detail: "step \(index) \(step.kindName), \(op): expected \(want), got \(got)")
            }
        }
        return nil
    }

    /// Removes steps, then operations inside steps, while the log still fails; bounded replays.
    static func shrink(_ engine: EngineUnderTest, _ failing: [Step], budget: Int = 400) -> [Step] {
        var log = failing
        var replays = 0
        func fails(_ candidate: [Step]) -> Bool {
            replays += 1
            return replay(engine, candidate) != nil
        }
        var chunk = max(1, log.count / 2)
        while chunk >= 1 && replays < budget {
            var start = 0
            while start < log.count && replays < budget {
                var candidate = log
                candidate.removeSubrange(start..<min(start + chunk, log.count))
                if !candidate.isEmpty && fails(candidate) { log = candidate } else { start += chunk }
            }
            chunk /= 2
        }
        for index in log.indices.reversed() where replays < budget {
            var ops: [Operation]
            switch log[index] {
            case let .write(o, _), let .read(o), let .readHeld(_, o): ops = o
            default: continue
            }
            var i = ops.count - 1
            while i >= 0 && ops.count > 1 && replays < budget {
                var fewer = ops
                fewer.remove(at: i)
                var candidate = log
                candidate[index] = log[index].with(fewer)
                if fails(candidate) { log = candidate; ops = fewer }
                i -= 1
            }
        }
        return log
    }

    /// Runs one operation in a transaction, turning errors into results.
    static func execute(_ operation: Operation, _ tx: any KeyValueReader) -> ReferenceModel.Result {
        do {
            switch operation {
            case let .put(k, v):
                guard let writer = tx as? any KeyValueWriter else { return .error("put in a read transaction") }
                try writer.put(v, forKey: k)
                return .none
            case let .putReportingReplaced(k, v):
                guard let writer = tx as? any KeyValueWriter else { return .error("put in a read transaction") }
                return .replaced(try k.withUnsafeBytes { k in try v.withUnsafeBytes { try writer.putReportingReplaced($0, forKey: k) } })
            case let .delete(k):
                guard let writer = tx as? any KeyValueWriter else { return .error("delete in a read transaction") }
                try writer.delete(k)
                return .none
            case let .clear(range):
                guard let writer = tx as? any KeyValueWriter else { return .error("clear in a read transaction") }
                return .count(try writer.clear(range))
            case let .get(k):
                return .value(try tx.get(k))
            case let .scan(range, reverse, limit):
                return .pairs(try tx.collect(range, reverse: reverse, limit: limit))
            }
        } catch {
            return .error("\(error)")
        }
    }
}

extension Step {
    var kindName: String {
        switch self {
        case .write(_, let commit): return commit ? "write" : "write (rolled back)"
        case .read: return "read"
        case .openReader: return "open reader"
        case .readHeld(let id, _): return "held reader \(id)"
        case .closeReader: return "close reader"
        }
    }

    func with(_ operations: [Operation]) -> Step {
        switch self {
        case let .write(_, commit): return .write(operations, commit: commit)
        case .read: return .read(operations)
        case let .readHeld(id, _): return .readHeld(id, operations)
        default: return self
        }
    }
}

/// A read transaction kept open on its own thread across later steps (a thread may hold only
/// one transaction of a store), answering reads on request.
final class HeldReader: @unchecked Sendable {
    private let request = DispatchSemaphore(value: 0)
    private let response = DispatchSemaphore(value: 0)
    private var pending: [Operation]?
    private var results: [ReferenceModel.Result] = []
    private var failure: Error?

    init(_ store: any KeyValueEngine) throws {
        let began = DispatchSemaphore(value: 0)
        Thread { [self] in
            do {
                try store.read { tx in
                    began.signal()
                    while true {
                        request.wait()
                        guard let ops = pending else { break }
                        results = ops.map { DifferentialTest.execute($0, tx) }
                        response.signal()
                    }
                }
            } catch {
                failure = error
                began.signal()
            }
            response.signal()
        }.start()
        began.wait()
        if let failure { throw failure }
    }

    func run(_ ops: [Operation]) -> [ReferenceModel.Result] {
        pending = ops
        request.signal()
        response.wait()
        return results
    }

    func close() {
        pending = nil
        request.signal()
        response.wait()
    }
}
