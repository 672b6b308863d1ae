import ArgumentParser
import Foundation
import StrataConformance
import StrataEngine
import StrataToolSupport

/// `strata-harness crash-writer`: a write storm for the crash harness. Prints `ack N` after each commit.
struct CrashWriter: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write tagged transactions until killed (crash-test helper).", shouldDisplay: false)

    @Option var engine: EngineChoice
    @Option var path: String
    @Flag(help: "Relaxed durability (default: full).") var relaxed = false
    @Option(help: "Also write each acknowledgement to this file with write(2), where the power-loss shim records it.")
    var ackFile: String?

    func run() throws {
        let store = try engine.open(path, EngineOptions(mode: .create, durability: relaxed ? .relaxed : .full))
        let acks = try ackFile.map { file in
            guard FileManager.default.createFile(atPath: file, contents: nil), let handle = FileHandle(forWritingAtPath: file) else {
                throw ValidationError("cannot write \(file)")
            }
            return handle
        }
        var seq = try store.read { try CrashData.last($0) }
        while true {
            seq += 1
            let current = seq
            try store.write { try CrashData.write(current, $0) }
            try acks?.write(contentsOf: Data("ack \(current)\n".utf8))
            say("ack \(current)")
        }
    }
}

/// `strata-harness crash-test`: kills writers with SIGKILL at random moments and checks the store after each kill.
struct CrashTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Kill a writing process with SIGKILL at random moments; check that every acknowledged transaction survives, whole.")

    @Option(help: "lmdb, leveldb, sqlite or all.") var engine: EngineChoice = .all
    @Option(help: "Kills per engine.") var kills = 20
    @Option(help: "Random seed for the kill delays.") var seed: UInt64 = 1
    @Option(help: ArgumentHelp("Damage the store after each kill (proves the checks can fail): partial or lost.", visibility: .hidden))
    var injectFault: String?

    func run() throws {
        var failed = false
        for kind in engine.engines where kind.declaration.capabilities.contains(.persistent) {
            let totals = try CrashRounds(engine: kind, kills: kills, seed: seed, fault: injectFault).run()
            say("\(kind.name): \(totals.kills) kills, \(totals.checked) acknowledged transactions checked, \(totals.lost) lost, \(totals.partial) partial")
            if totals.lost + totals.partial > 0 { failed = true }
        }
        if failed { throw ExitCode.failure }
    }
}

/// One engine's crash rounds on one store, reopened after every kill (never repaired).
struct CrashRounds {
    let engine: EngineKind
    let kills: Int
    let seed: UInt64
    let fault: String?

    struct Totals { var kills = 0, checked = 0, lost = 0, partial = 0 }

    func run() throws -> Totals {
        let path = NSTemporaryDirectory() + "strata-crash-\(engine.name)-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var random = SeededRandom(seed: seed)
        var totals = Totals()
        for round in 0..<kills {
            let writer = try WriterProcess(engine: engine, path: path)
            // Let a few transactions commit, then kill at a random moment (often inside a commit).
            guard writer.waitForAcks(3, seconds: 60) else {
                writer.kill()
                throw ValidationError("round \(round): the writer acknowledged nothing in 60 s:\n\(writer.output)")
            }
            usleep(UInt32.random(in: 0...30_000, using: &random))
            writer.kill()
            var acknowledged = writer.acknowledged
            let checkedThisRound = writer.acknowledgedCount
            let store = try engine.open(path, EngineOptions(mode: .openExisting))
            switch fault {
            case "partial": try store.write { tx in try tx.delete(CrashData.key(try CrashData.last(tx), 3)) }
            case "lost": acknowledged = try store.read { try CrashData.last($0) } + 1  // as if the last commit had vanished
            default: break
            }
            let problem = try store.read { try CrashData.verify($0, acknowledged: acknowledged) }
            try store.close()
            totals.kills += 1
            totals.checked += checkedThisRound
            if let problem {
                say("round \(round): \(problem)")
                if problem.hasPrefix("lost") { totals.lost += 1 } else { totals.partial += 1 }
            }
        }
        return totals
    }
}

/// The writer child process and the acknowledgements it printed (`ack N`, printed after the
/// commit returned: only whole lines count).
///
/// `@unchecked Sendable`: its only state is a `ChildProcess`, which guards its own.
final class WriterProcess: @unchecked Sendable {
    private let child: ChildProcess

    init(engine: EngineKind, path: String, arguments: [String] = [], environment: [String: String] = [:]) throws {
        child = try ChildProcess(["crash-writer", "--engine", engine.name, "--path", path] + arguments, environment: environment)
    }

    private var acks: [UInt64] {
        child.lines.compactMap { $0.hasPrefix("ack ") ? UInt64($0.dropFirst(4)) : nil }
    }
    var output: String { child.lines.filter { !$0.hasPrefix("ack ") && !$0.isEmpty }.joined(separator: "\n") }
    var acknowledged: UInt64 { acks.last ?? 0 }
    var acknowledgedCount: Int { acks.count }

    func waitForAcks(_ n: Int, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if acknowledgedCount >= n { return true }
            if !child.isRunning { return false }
            usleep(1_000)
        }
        return false
    }

    /// SIGKILL, then wait for the process and drain what it printed before dying.
    func kill() { child.kill() }
}
