import Foundation
@_spi(StrataInternals) import StrataEngine

/// A child process running this executable, whose output lines (standard output and standard
/// error) are collected as they come: the driver of the crash tests, which kill it at chosen moments.
///
/// `@unchecked Sendable`: `Process` and `Pipe` are set up before the reader starts; the collected
/// lines are behind their own lock.
public final class ChildProcess: @unchecked Sendable {
    private let process = Process()
    private let pipe = Pipe()
    /// The last line, not finished yet, and the whole lines.
    private let output = Locked<(partial: String, complete: [String])>(("", []))
    private var reader: PipeReader?

    /// Starts this executable with `arguments`, with `environment` added to this process's environment.
    public init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        reader = PipeReader(pipe.fileHandleForReading) { [weak self] in self?.take($0) }
    }

    private func take(_ data: Data) {
        output.withLock { output in
            output.partial += String(decoding: data, as: UTF8.self)
            while let newline = output.partial.firstIndex(of: "\n") {
                output.complete.append(String(output.partial[..<newline]))
                output.partial.removeSubrange(...newline)
            }
        }
    }

    /// The whole lines printed so far.
    public var lines: [String] { output.withLock { $0.complete } }
    /// Whether the child is still running.
    public var isRunning: Bool { process.isRunning }

    /// The signal that ended the child, once it ended by one (SIGKILL from ``kill()`` included).
    public var terminationSignal: Int32? {
        !process.isRunning && process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil
    }

    /// Waits until the child printed `count` lines (or finished, or the time ran out); the lines so far.
    public func waitForLines(_ count: Int, seconds: Double) -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline && process.isRunning && output.withLock({ $0.complete.count }) < count { usleep(500) }
        return lines
    }

    /// Waits for the child to exit by itself (SIGKILL when `seconds` pass first); every line it printed.
    public func waitForExit(seconds: Double) -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline && process.isRunning { usleep(1_000) }
        kill()
        return lines
    }

    /// SIGKILL, then wait for the process and drain what it printed before dying.
    public func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        reader?.waitForEnd()
    }
}

/// The rounds of a crash test of an online job on one engine: each round makes a store, starts a
/// child that runs the job and prints a line per committed batch (`batch N phase…`), kills it
/// with SIGKILL after a random number of those lines (and a random pause of up to 5 ms), then
/// checks the store.
public enum JobCrashRounds {
    /// Runs `kills` rounds at `path` (removed after each): `setUp` makes the store, the child runs
    /// this executable with `arguments`, and is killed after 1 to `batches` lines; `check` says
    /// what is wrong with the store afterwards (`nil`: nothing), printed through `say` with the
    /// round's number. Returns how many kills landed in each phase (the words after `batch N`,
    /// named by `phase`; the last line itself when it is not a batch's, as `finished`) and how many
    /// rounds found a problem. `seed` picks the moments.
    public static func run(path: String, kills: Int, seed: UInt64, batches: Int, arguments: [String],
                           setUp: () throws -> Void, phase: (String) -> String = { $0 }, check: () throws -> String?,
                           say: (String) -> Void) throws -> (phases: [String: Int], problems: Int) {
        var random = SeededRandom(seed: seed)
        var phases: [String: Int] = [:]
        var problems = 0
        for round in 0..<kills {
            defer { try? FileManager.default.removeItem(atPath: path) }
            try setUp()
            let target = Int.random(in: 1...max(1, batches), using: &random)
            let child = try ChildProcess(arguments)
            let lines = child.waitForLines(target, seconds: 120)
            usleep(UInt32.random(in: 0...5_000, using: &random))
            child.kill()
            // `batch N phase…` names its phase; any other last line (`finished`, an error) shows as it is.
            let last = lines.last ?? "starting", words = last.split(separator: " ")
            phases[phase(words.first == "batch" ? words.dropFirst(2).joined(separator: " ") : last), default: 0] += 1
            if let problem = try check() {
                say("round \(round): \(problem)")
                problems += 1
            }
        }
        return (phases, problems)
    }

    /// `12 in build, 8 in migration`: where the kills landed, for a summary line.
    public static func describe(_ phases: [String: Int]) -> String {
        phases.sorted { $0.key < $1.key }.map { "\($0.value) in \($0.key)" }.joined(separator: ", ")
    }
}
