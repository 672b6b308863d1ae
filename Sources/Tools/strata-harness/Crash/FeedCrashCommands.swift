import ArgumentParser
import Foundation
import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataRecords
import StrataToolSupport

// Kill -9 of writers while the change feed is on: child processes (two at once where the engine
// allows several processes) commit transactions and print each one they committed; the driver
// kills them at random moments, then reads the feed on from the token it kept and replays it on
// a model of the records. The feed must hold exactly the committed transactions: a change that
// never committed, or a committed one missing, leaves the model unlike the store; a token that
// skips or repeats shows in the versions.

/// A note of the feed crash test: key `id` (0 is the counter of transactions), a value.
struct FeedCrashNote: Record {
    var id: Int
    var value: Int
    static let recordType = RecordType(keyspace: "FeedCrash", version: 1, key: [("id", Int.self)])
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(value) }
    init(id: Int, value: Int) { (self.id, self.value) = (id, value) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        value = try fields.read()
    }
    static func key(_ id: Int) -> EncodedIndexKey { EncodedIndexKey(bytes: KeyCodec.encode(id)) }
}

/// `strata-harness feed-crash-writer`: transactions until killed; transaction `n` (the counter's next
/// value) sets the counter, writes notes `n % 37 + 1` and `7n % 37 + 1` and deletes note
/// `3n % 37 + 1`. Prints `ack n` after each commit.
struct FeedCrashWriter: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write with the change feed on until killed (feed-crash-test helper).", shouldDisplay: false)

    @Option var engine: EngineChoice
    @Option var path: String

    func run() throws {
        let store = try Store(engine: try engine.open(path, EngineOptions(mode: .openExisting, durability: .full)))
        while true {
            let n = try store.withTransaction { ctx -> Int in
                let n = (try ctx.fetch(FeedCrashNote.self, key: FeedCrashNote.key(0))?.value ?? 0) + 1
                try ctx.insert(FeedCrashNote(id: 0, value: n))
                try ctx.insert(FeedCrashNote(id: n % 37 + 1, value: n))
                try ctx.insert(FeedCrashNote(id: (7 * n) % 37 + 1, value: n))
                _ = try ctx.delete(FeedCrashNote.self, key: FeedCrashNote.key((3 * n) % 37 + 1))
                return n
            }
            say("ack \(n)")
        }
    }
}

/// `strata-harness feed-crash-test`: kills writers with SIGKILL at random moments while the change feed
/// is on, and checks the feed against the store after each kill.
struct FeedCrashTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Kill writers with SIGKILL while the change feed is on; check that the feed holds exactly the committed transactions and that a reader resumes without a gap.")

    @Option(help: "lmdb, leveldb, sqlite or all.") var engine: EngineChoice = .all
    @Option(help: "Kills per engine.") var kills = 20
    @Option(help: "Random seed for the kill delays.") var seed: UInt64 = 1
    @Option(help: ArgumentHelp("Damage the feed after each kill (proves the checks can fail): drop (delete the newest transaction's chunk).", visibility: .hidden))
    var injectFault: String?

    func run() throws {
        var failed = false
        for kind in engine.engines where kind.declaration.capabilities.contains(.persistent) {
            let (transactions, problems) = try rounds(kind)
            let writers = kind.declaration.capabilities.contains(.multiProcess) ? "two writers" : "one writer"
            say("\(kind.name): \(kills) kills of \(writers), \(transactions) committed transactions checked in the feed, \(problems) rounds with a wrong feed")
            if problems > 0 { failed = true }
        }
        if failed { throw ExitCode.failure }
    }

    /// One engine's rounds on one store; the committed transactions checked and the rounds that failed.
    private func rounds(_ kind: EngineKind) throws -> (Int, Int) {
        let path = NSTemporaryDirectory() + "strata-feed-crash-\(kind.name)-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let setup = try Store(engine: try kind.open(path, EngineOptions(mode: .create)))
        try setup.enableChangeFeed(retention: .commits(100_000))
        var token = try setup.changeFeedEnd()
        try setup.close()
        var random = SeededRandom(seed: seed)
        var model: Set<Int> = []
        var (checked, problems) = (0, 0)
        let writers = kind.declaration.capabilities.contains(.multiProcess) ? 2 : 1
        for round in 0..<kills {
            let children = try (0..<writers).map { _ in try ChildProcess(["feed-crash-writer", "--engine", kind.name, "--path", path]) }
            func acks(_ child: ChildProcess) -> Int { child.lines.compactMap { $0.hasPrefix("ack ") ? Int($0.dropFirst(4)) : nil }.last ?? 0 }
            guard children[0].waitForLines(3, seconds: 60).count >= 3 else {
                children.forEach { $0.kill() }
                throw ValidationError("round \(round): the writer printed nothing in 60 s:\n\(children[0].lines.joined(separator: "\n"))")
            }
            for child in children {
                usleep(UInt32.random(in: 0...30_000, using: &random))
                child.kill()
            }
            let acknowledged = children.map(acks).max() ?? 0
            if injectFault == "drop" {
                let engine = try kind.open(path, EngineOptions(mode: .openExisting))
                try engine.write { tx in
                    if let newest = try tx.keys(.prefix([0] + KeyCodec.encode("changes")), reverse: true, limit: 1).first { try tx.delete(newest) }
                }
                try engine.close()
            }
            let store = try Store(engine: try kind.open(path, EngineOptions(mode: .openExisting)))
            defer { try? store.close() }
            let before = token.version
            if let problem = try check(store, from: &token, model: &model, acknowledged: acknowledged, writers: writers) {
                say("round \(round): \(problem)")
                problems += 1
                // Start the next round from what the store holds, so one fault counts once.
                model = Set(try store.withReadTransaction { try FeedCrashNote.select(in: $0).map(\.id) })
                token = try store.changeFeedEnd()
            }
            checked += Int(token.version - before)
        }
        return (checked, problems)
    }

    /// Reads the feed on from `token` and replays it on `model`; a description of what is wrong, or nil.
    private func check(_ store: Store, from token: inout ChangeToken, model: inout Set<Int>, acknowledged: Int, writers: Int) throws -> String? {
        var expected = token.version
        while true {
            let page = try store.changes(since: token, limit: 50)
            for entry in page.entries {
                if entry.version != expected && entry.version != expected + 1 {
                    return "the feed went from version \(expected) to \(entry.version)"
                }
                expected = entry.version
                let id = try entry.change.key.bytes.withUnsafeBytes { raw in
                    var reader = KeyReader(raw)
                    return try reader.read(Int.self)
                }
                switch entry.change.kind {
                case .insert where model.contains(id), .update where !model.contains(id), .delete where !model.contains(id):
                    return "version \(entry.version): \(entry.change.kind) of note \(id), which the feed says \(model.contains(id) ? "exists" : "does not exist")"
                case .insert, .update: model.insert(id)
                case .delete: model.remove(id)
                }
            }
            token = page.next
            if page.isAtEnd { break }
            if page.entries.isEmpty { return "an empty page of the feed before its end, at \(token)" }
        }
        return try store.withReadTransaction { ctx in
            let notes = try FeedCrashNote.select(in: ctx)
            let stored = Set(notes.map(\.id))
            if stored != model {
                return "the feed's replay differs from the store: \(stored.subtracting(model).sorted()) stored only, \(model.subtracting(stored).sorted()) in the feed only"
            }
            let counter = notes.first { $0.id == 0 }?.value ?? 0
            // One version per transaction, and every transaction counted: the counter is the last version.
            if UInt64(counter) + 1 != token.version { return "the counter is \(counter) but the feed ends before version \(token.version)" }
            if counter < acknowledged || counter > acknowledged + writers {
                return "the counter is \(counter), \(acknowledged) acknowledged by \(writers) writer(s)"
            }
            return nil
        }
    }
}
