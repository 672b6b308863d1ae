import ArgumentParser
import Foundation
import StrataConformance
import StrataEngine

/// `strata powerloss-test`: simulated power losses. A crash writer runs under the recording shim
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
    @Option(help: ArgumentHelp("skip-sync: the shim skips every sync of the store's files (proves the checks fail).", visibility: .hidden))
    var injectFault: String?

    /// Images cut from one writer's recording.
    static let cutsPerRecording = 10

    func validate() throws {
        guard ["full", "relaxed"].contains(durability) else { throw ValidationError("--durability is full or relaxed") }
        guard FileManager.default.fileExists(atPath: shim) else { throw ValidationError("no shim at \(shim)") }
    }

    func run() throws {
        var failed = false
        let shimPath = URL(fileURLWithPath: shim).standardizedFileURL.path
        for kind in engine.engines where kind.declaration.capabilities.contains(.persistent) {
            let totals = try PowerLossRounds(engine: kind, losses: losses, relaxed: durability == "relaxed", shim: shimPath,
                                             seed: seed, skipSync: injectFault == "skip-sync").run()
            say("\(kind.name) (\(durability)): \(totals.losses) power losses, \(totals.checked) acknowledged commits checked, "
                + "\(totals.lost) lost, \(totals.partial) partial, \(totals.refused) refused, \(totals.prefix) opened at an earlier commit")
            if totals.lost + totals.partial > 0 || (durability == "full" && totals.refused > 0) { failed = true }
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

    struct Totals { var losses = 0, checked = 0, lost = 0, partial = 0, refused = 0, prefix = 0 }

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
        let operations = RecordedOperation.parse(Array(try Data(contentsOf: URL(fileURLWithPath: log))))
        try? FileManager.default.removeItem(atPath: directory)
        guard operations.contains(where: { if case .ack = $0 { true } else { false } }) else {
            throw ValidationError("the shim recorded no acknowledgement: is \(shim) preloaded?")
        }
        return operations
    }

    enum Verdict { case whole, earlierCommit, refused(String), problem(String) }

    /// Opens the image without repair and checks it: every acknowledged commit (under full
    /// durability), or a consistent earlier state (relaxed).
    private func check(_ path: String, acknowledged: UInt64) -> Verdict {
        do {
            let store = try engine.open(path, EngineOptions(mode: .openExisting))
            defer { try? store.close() }
            return try store.read { tx in
                if let problem = try CrashData.verify(tx, acknowledged: relaxed ? 0 : acknowledged) { return .problem(problem) }
                return try CrashData.last(tx) < acknowledged ? .earlierCommit : .whole
            }
        } catch let error as EngineError {
            // Cut before the first commit returned: nothing was promised, a refusal loses nothing.
            if acknowledged == 0 { return .whole }
            switch error {
            case .corrupt, .notAStore, .notFound: return .refused("\(error)")
            default: return .problem("\(error)")
            }
        } catch {
            return .problem("\(error)")
        }
    }
}
