import ArgumentParser
import Foundation
import StrataConformance
import StrataEngine
import StrataToolSupport

/// `strata-harness power-loss-test`: simulated power losses. A crash writer runs under the recording shim
/// (`Tests/Shims/powerloss.c`); disk images are built from what it wrote and synced, cut at random
/// points (``PowerLossImage``), then opened without repair and checked as the kill harness does.
struct PowerLossTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Simulate power losses during commits; check what every engine opens afterwards.")

    @Option(help: "lmdb, leveldb, sqlite or all.") var engine: EngineChoice = .all
    @Option(help: "Simulated power losses per engine.") var losses = 20
    @Option(help: "full: every acknowledged commit must survive; relaxed: a prefix of the commits, or a typed refusal.")
    var durability: String = "full"
    @Option(help: "The compiled shim (cc -shared -fPIC -o powerloss.so Tests/Shims/powerloss.c -ldl)..") var shim: String
    @Option(help: "Random seed.") var seed: UInt64 = 1
    @Option(help: ArgumentHelp("skip-sync: the shim skips every sync of the store's files; crash-check: every checker crashes (proves the checks fail).",
                               visibility: .hidden))
    var injectFault: String?

    /// Images cut from one writer's recording.
    static let cutsPerRecording = 10

    func validate() throws {
        guard ["full", "relaxed"].contains(durability) else { throw ValidationError("--durability is full or relaxed") }
        guard [nil, "skip-sync", "crash-check"].contains(injectFault) else { throw ValidationError("--inject-fault is skip-sync or crash-check") }
        guard FileManager.default.fileExists(atPath: shim) else { throw ValidationError("no shim at \(shim)") }
    }

    func run() throws {
        var failed = false
        // LD_PRELOAD splits its list at spaces and colons, with no escaping: the shim is preloaded
        // from a copy in the temporary directory, so a checkout under a path with a space works.
        let shimPath = URL(fileURLWithPath: NSTemporaryDirectory()).resolvingSymlinksInPath().path + "/strata-powerloss-\(getpid()).so"
        guard !shimPath.contains(where: { $0 == " " || $0 == ":" }) else {
            throw ValidationError("LD_PRELOAD cannot name \(shimPath) (a space or colon): set TMPDIR to a directory without one")
        }
        try? FileManager.default.removeItem(atPath: shimPath)
        try FileManager.default.copyItem(atPath: shim, toPath: shimPath)
        defer { try? FileManager.default.removeItem(atPath: shimPath) }
        for kind in engine.engines where kind.declaration.capabilities.contains(.persistent) {
            let totals = try PowerLossRounds(engine: kind, losses: losses, relaxed: durability == "relaxed", shim: shimPath,
                                             seed: seed, skipSync: injectFault == "skip-sync",
                                             crashCheck: injectFault == "crash-check").run()
            say("\(kind.name) (\(durability)): \(totals.losses) power losses, \(totals.checked) acknowledged commits checked, "
                + "\(totals.lost) lost, \(totals.partial) partial, \(totals.refused) refused, \(totals.crashed) crashed, \(totals.prefix) opened at an earlier commit")
            if totals.lost + totals.partial + totals.crashed > 0 || (durability == "full" && totals.refused > 0) { failed = true }
        }
        if failed { throw ExitCode.failure }
    }
}

/// One engine's simulated power losses.
struct PowerLossRounds {
    let engine: EngineKind
    let losses: Int
    let relaxed: Bool
    let shim: String
    let seed: UInt64
    let skipSync: Bool
    let crashCheck: Bool

    struct Totals { var losses = 0, checked = 0, lost = 0, partial = 0, refused = 0, crashed = 0, prefix = 0 }

    func run() throws -> Totals {
        let base = URL(fileURLWithPath: NSTemporaryDirectory()).resolvingSymlinksInPath().path + "/strata-powerloss-\(engine.name)-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: base) }
        var random = SeededRandom(seed: seed)
        var totals = Totals()
        var recording = 0
        while totals.losses < losses {
            recording += 1
            let operations = try record(in: "\(base)/recording-\(recording)", random: &random)
            for cut in 0..<min(PowerLossTest.cutsPerRecording, losses - totals.losses) {
                // Anywhere in the recording, commits included.
                let at = Int.random(in: 0...operations.count, using: &random)
                let mode = LossMode.allCases[totals.losses % LossMode.allCases.count]
                let image = PowerLossImage(operations[..<at], mode: mode, random: &random)
                let path = "\(base)/image-\(recording)-\(cut)"
                try image.write(to: path)
                defer { try? FileManager.default.removeItem(atPath: path) }
                let verdict = check(path, acknowledged: image.acknowledged)
                totals.losses += 1
                totals.checked += Int(image.acknowledged)
                switch verdict {
                case .whole: break
                case .earlierCommit: totals.prefix += 1
                case let .refused(error):
                    totals.refused += 1
                    say("recording \(recording), operation \(at) of \(operations.count), \(mode): refused: \(error)")
                case let .crashed(what):
                    totals.crashed += 1
                    say("recording \(recording), operation \(at) of \(operations.count), \(mode): crashed: \(what)")
                case let .problem(problem):
                    say("recording \(recording), operation \(at) of \(operations.count), \(mode): \(problem)")
                    if problem.hasPrefix("lost") { totals.lost += 1 } else { totals.partial += 1 }
                }
            }
        }
        return totals
    }

    /// Runs a crash writer under the shim until it acknowledged a few commits, kills it, and
    /// returns what the shim recorded.
    private func record(in directory: String, random: inout SeededRandom) throws -> [RecordedOperation] {
        let store = directory + "/store", log = directory + "/operations", acks = directory + "/acks"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        var environment = ["LD_PRELOAD": shim, "STRATA_POWERLOSS_DIR": store, "STRATA_POWERLOSS_LOG": log, "STRATA_POWERLOSS_ACKS": acks]
        if skipSync { environment["STRATA_POWERLOSS_SKIP_SYNC"] = "1" }
        let writer = try WriterProcess(engine: engine, path: store, arguments: (relaxed ? ["--relaxed"] : []) + ["--ack-file", acks],
                                       environment: environment)
        let wanted = Int.random(in: 3...30, using: &random)
        guard writer.waitForAcks(wanted, seconds: 60) else {
            writer.kill()
            throw ValidationError("the writer acknowledged fewer than \(wanted) commits in 60 s:\n\(writer.output)")
        }
        writer.kill()
        guard let recorded = FileManager.default.contents(atPath: log) else {
            throw ValidationError("the shim recorded nothing: is \(shim) preloaded?\n\(writer.output)")
        }
        let operations = RecordedOperation.parse(Array(recorded))
        try? FileManager.default.removeItem(atPath: directory)
        guard operations.contains(where: { if case .ack = $0 { true } else { false } }) else {
            throw ValidationError("the shim recorded no acknowledgement: is \(shim) preloaded?")
        }
        return operations
    }

    enum Verdict { case whole, earlierCommit, refused(String), problem(String), crashed(String) }

    /// Checks the image in a child process (`strata-harness power-loss-check`): LMDB does not checksum its
    /// pages, and a page damaged in place (only a disk that loses synced writes can do that) may
    /// crash the process inside liblmdb. A crash is a verdict of its own, never the harness's end.
    private func check(_ path: String, acknowledged: UInt64) -> Verdict {
        let arguments = ["power-loss-check", "--engine", engine.name, "--path", path, "--acknowledged", "\(acknowledged)"]
            + (relaxed ? ["--relaxed"] : [])
        let child: ChildProcess
        do {
            child = try ChildProcess(arguments + (crashCheck ? ["--inject-fault", "crash"] : []),
                                     environment: ["SWIFT_BACKTRACE": "enable=no"])
        } catch {
            return .problem("cannot start the checker: \(error)")
        }
        let lines = child.waitForExit(seconds: 120)
        switch child.terminationSignal {
        case SIGKILL?: return .problem("the checker did not finish in 120 s")
        case let signal?: return .crashed("opening and reading the image killed the checker with signal \(signal)")
        case nil: break
        }
        guard let line = lines.last(where: { $0.hasPrefix(PowerLossCheck.prefix) }) else {
            return .problem("the checker printed no verdict: \(lines.joined(separator: "\n"))")
        }
        let verdict = line.dropFirst(PowerLossCheck.prefix.count)
        let word = verdict.prefix { $0 != " " }, detail = String(verdict.dropFirst(word.count).drop { $0 == " " })
        switch word {
        case "whole": return .whole
        case "earlier": return .earlierCommit
        case "refused": return .refused(detail)
        default: return .problem(detail)
        }
    }
}

/// `strata-harness power-loss-check`: opens one power-loss image without repair and prints its verdict
/// (a helper of `power-loss-test`, run as a child so that a crash inside an engine is reported).
struct PowerLossCheck: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check one power-loss image (power-loss-test helper).", shouldDisplay: false)

    /// Starts the verdict line: `verdict whole`, `verdict earlier`, `verdict refused <error>` or `verdict problem <what>`.
    static let prefix = "verdict "

    @Option var engine: EngineChoice
    @Option var path: String
    @Option(help: "Acknowledged commits when the power was lost.") var acknowledged: UInt64
    @Flag(help: "Relaxed durability: a consistent earlier state is enough.") var relaxed = false
    @Option(help: ArgumentHelp("crash: die of SIGABRT before opening (proves a crash is reported).", visibility: .hidden))
    var injectFault: String?

    func run() {
        // abort() (SIGABRT), not SIGSEGV: AddressSanitizer (make sanitize) turns a SIGSEGV into a
        // report and exit code 1, where the harness must see a death by signal. abort() also
        // unblocks SIGABRT, which a parent (the test runner) may leave blocked across exec.
        if injectFault == "crash" { abort() }
        say(Self.prefix + verdict().joined(separator: " ").replacingOccurrences(of: "\n", with: " "))
    }

    /// Every acknowledged commit (under full durability), or a consistent earlier state (relaxed).
    private func verdict() -> [String] {
        do {
            let store = try engine.open(path, EngineOptions(mode: .openExisting))
            defer { try? store.close() }
            return try store.read { tx in
                if let problem = try CrashData.verify(tx, acknowledged: relaxed ? 0 : acknowledged) { return ["problem", problem] }
                return try CrashData.last(tx) < acknowledged ? ["earlier"] : ["whole"]
            }
        } catch let error as EngineError {
            // Cut before the first commit returned: nothing was promised, a refusal loses nothing.
            if acknowledged == 0 { return ["whole"] }
            switch error {
            case .corrupt, .notAStore, .notFound: return ["refused", "\(error)"]
            default: return ["problem", "\(error)"]
            }
        } catch {
            return ["problem", "\(error)"]
        }
    }
}
