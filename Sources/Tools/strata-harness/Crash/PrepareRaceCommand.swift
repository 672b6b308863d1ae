import ArgumentParser
import Foundation
import StrataConformance
import StrataToolSupport

/// `strata-harness prepare-race-test`: two processes prepare the same store at once (the index build, then
/// the migration of every record), and in every other round one of them is killed at a random
/// moment. The survivor must finish, and the store must hold every record once, migrated, with
/// an exact index (the checks of `prepare-crash-test`). Engines that allow one process at a time
/// (LevelDB) must refuse the second with a typed "locked" error while the first finishes.
struct PrepareRaceTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare-race-test",
        abstract: "Two processes prepare one store at once (one killed in every other round); check that the result is exact.")

    @Option(help: "lmdb, leveldb, sqlite or all.") var engine: EngineChoice = .all
    @Option(help: "Rounds per engine.") var rounds = 6
    @Option(help: "Records in the store.") var records = 1_500
    @Option(help: "Random seed for the kill moments.") var seed: UInt64 = 1

    func run() throws {
        var failed = false
        for kind in engine.engines where kind.declaration.capabilities.contains(.persistent) {
            var random = SeededRandom(seed: seed)
            let shared = kind.declaration.capabilities.contains(.multiProcess)
            var problems = 0, killed = 0, overlapped = 0
            for round in 0..<rounds {
                let path = NSTemporaryDirectory() + "strata-prepare-race-\(kind.name)-\(getpid())"
                defer { try? FileManager.default.removeItem(atPath: path) }
                try PrepareCrashTest.makeStore(kind, path, records: records)
                // On a single-process engine the first holds the store after its first batch until
                // the second has been refused (else a first that finished before the second opened,
                // on a loaded machine, would leave nothing to refuse).
                let release = path + ".release"
                let first = try ChildProcess(["prepare-writer", "--engine", kind.name, "--path", path] + (shared ? [] : ["--hold-until", release]))
                defer { try? FileManager.default.removeItem(atPath: release) }
                _ = first.waitForLines(1, seconds: 60)  // the first holds the store before the second starts
                let second = try ChildProcess(["prepare-writer", "--engine", kind.name, "--path", path])
                if !shared {
                    _ = second.waitForExit(seconds: 300)
                    _ = FileManager.default.createFile(atPath: release, contents: nil)
                }
                var survivors = [first, second]
                if shared && round % 2 == 1 {
                    let victim = Bool.random(using: &random) ? first : second
                    _ = victim.waitForLines(Int.random(in: 1...(2 * records / 25), using: &random), seconds: 120)
                    victim.kill()
                    killed += 1
                    survivors.removeAll { $0 === victim }
                }
                // Every process not killed finishes, but for LevelDB's second, which is refused as locked.
                var problem: String?
                for child in survivors {
                    let lines = child.waitForExit(seconds: 300)
                    let refusal = !shared && child === second
                    let ok = refusal ? lines.contains { $0.contains("locked") } : lines.last == "finished"
                    if !ok && problem == nil {
                        problem = "a preparing process \(refusal ? "was not refused as locked" : "did not finish"): \(lines.suffix(2).joined(separator: " | "))"
                    }
                }
                // Both did work: the second committed batches while the first was still preparing.
                let batches = [first, second].map { $0.lines.filter { $0.hasPrefix("batch ") }.count }
                if batches.allSatisfy({ $0 > 0 }) { overlapped += 1 }
                if problem == nil { problem = try PrepareCrashTest.finishAndCheck(kind, path, records: records) }
                if let problem {
                    say("round \(round): \(problem)")
                    problems += 1
                }
            }
            let how = shared ? "two processes at once, both committing batches in \(overlapped), \(killed) killed midway"
                : "the second refused as locked"
            say("\(kind.name): \(rounds) rounds (\(how)), \(problems) with a failed process or lost, duplicated or stale data")
            if problems > 0 || (shared && overlapped == 0) { failed = true }
        }
        if failed { throw ExitCode.failure }
    }
}
