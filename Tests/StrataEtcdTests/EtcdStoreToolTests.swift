import Foundation
import StrataEngine
@_spi(Testing) import StrataEtcd
import StrataEtcdCluster
import StrataKeyCodec
import StrataLMDB
import StrataRecords
import Testing

/// A record `strata-etcd` has never seen: the tools read it through the catalog alone.
private struct Note: Record {
    var id: Int
    var text: String
    var stars: Int
    var tags: [String]

    static let recordType = RecordType(keyspace: "Note", key: [("id", Int.self)],
                                       fields: [("text", String.fieldFormat), ("stars", Int.fieldFormat), ("tags", [String].fieldFormat)])
    static let indexes = [RecordIndex<Note>("byStars", .field("stars", \.stars)), RecordIndex<Note>("byTag", .each("tags", \.tags))]

    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.write(text); fields.write(stars); fields.write(tags) }
    init(id: Int, text: String, stars: Int, tags: [String]) { (self.id, self.text, self.stars, self.tags) = (id, text, stars, tags) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read(); text = try fields.read(); stars = try fields.read(); tags = try fields.read()
    }

    /// `count` notes, each with an index entry per index and tag (four writes a note).
    static func some(_ count: Int) -> [Note] {
        (1...count).map { Note(id: $0, text: "note \($0)", stars: $0 % 5, tags: ["t\($0 % 3)", "all"]) }
    }
}

/// Runs `strata-etcd` with `arguments`; its status and its standard output and error together.
private func runEtcdTool(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: etcdTool)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// Whether `text` holds a control character other than a line feed (a terminal escape, a carriage return).
private func hasControlCharacters(_ text: String) -> Bool {
    text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || $0.value == 0x7F }
}

/// A store of `notes` at `prefix` on `options`' cluster, written in transactions within its limits.
private func makeStore(_ options: EtcdOptions, prefix: String, notes: [Note]) throws {
    let store = try Store(.etcd(prefix: prefix, options: options))
    for chunk in stride(from: 0, to: notes.count, by: 25) {
        try store.withTransaction { ctx in for n in notes[chunk..<min(chunk + 25, notes.count)] { try ctx.insert(n) } }
    }
    try store.close()
}

@Suite("strata-etcd stats, dump, verify, copy and backup on etcd stores", .serialized)
struct EtcdStoreToolTests {
    /// The cluster has etcd's default limits (128 operations a transaction), so a copy into it
    /// takes many transactions.
    private let options = Clusters.options(Clusters.defaults)
    private var endpoints: String { options.endpoints.joined(separator: ",") }
    /// The flags that reach the cluster: its endpoints and its TLS files.
    private var reach: [String] { Clusters.toolArguments(options) }

    @Test("each subcommand on an etcd store by --endpoints; copies to and from a directory's engine read back the same")
    func subcommands() throws {
        let dir = NSTemporaryDirectory() + "strata-etcd-tools-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let prefix = Clusters.prefix("tools")
        let store = "etcd:" + prefix
        try makeStore(options, prefix: prefix, notes: Note.some(300))

        let stats = try runEtcdTool(["stats", store] + reach)
        #expect(stats.status == 0, "\(stats.output)")
        #expect(stats.output.contains("store \(store) at \(endpoints) (etcd)"), "\(stats.output)")
        #expect(stats.output.contains("keyspace Note: 300 records"), "\(stats.output)")
        #expect(stats.output.contains("index byTag (each tags: String): readable, generation 1, 600 entries"), "\(stats.output)")
        #expect(!stats.output.contains("file "), "an etcd store has no files")

        let dump = try runEtcdTool(["dump", store] + reach)
        let lines = dump.output.split(separator: "\n")
        #expect(dump.status == 0 && lines.count == 300, "\(dump.output.prefix(500))")
        #expect(lines.first == #"{"keyspace":"Note","key":[1],"version":\#(Note.recordType.version),"fields":{"text":"note 1","stars":1,"tags":["t1","all"]}}"#)

        let verify = try runEtcdTool(["verify", store] + reach)
        #expect(verify.status == 0, "\(verify.output)")
        #expect(verify.output.contains("index Note.byStars: 300 entries, 0 missing, 0 stale"), "\(verify.output)")

        // etcd → LMDB, and back into a new etcd store in transactions of at most 126 pairs.
        let lmdb = dir + "/lmdb"
        let out = try runEtcdTool(["copy", store, lmdb, "--to", "lmdb"] + reach)
        #expect(out.status == 0, "\(out.output)")
        #expect(out.output.contains("etcd → lmdb") && out.output.contains("verified: 300 records"), "\(out.output)")
        #expect(try runEtcdTool(["dump", lmdb]).output == dump.output)
        let back = "etcd:" + Clusters.prefix("tools-back")
        let copied = try runEtcdTool(["copy", lmdb, back] + reach)
        #expect(copied.status == 0, "\(copied.output)")
        let pairs = try #require(copied.output.split(separator: "\n").first { $0.hasPrefix("copy: ") }.flatMap { Int($0.split(separator: " ")[1]) })
        let transactions = try #require(copied.output.firstMatch(of: /(\d+) transactions/).flatMap { Int($0.1) })
        #expect(pairs > 1_200 && transactions >= (pairs - 1) / 126 + 1, "\(copied.output)")
        #expect(copied.output.contains("lmdb → etcd") && copied.output.contains("verified: 300 records"), "\(copied.output)")
        #expect(try runEtcdTool(["dump", back] + reach).output == dump.output)

        let backup = "etcd:" + Clusters.prefix("tools-backup")
        let saved = try runEtcdTool(["backup", store, backup] + reach)
        #expect(saved.status == 0, "\(saved.output)")
        #expect(try runEtcdTool(["verify", backup] + reach).status == 0)
        for output in [stats.output, dump.output, verify.output, out.output, copied.output, saved.output] {
            #expect(!hasControlCharacters(output))
        }

        // A flipped value byte: verify exits 1 naming the record.
        let engine = try EtcdEngine(prefix: prefix, etcd: options)
        try engine.write { tx in
            var value = try #require(try tx.get(KeyCodec.encode("Note", 2)))
            value[value.count - 5] ^= 1
            try tx.put(value, forKey: KeyCodec.encode("Note", 2))
        }
        try engine.close()
        let damaged = try runEtcdTool(["verify", store] + reach)
        #expect(damaged.status == 1)
        #expect(damaged.output.contains(#"problem: checksumMismatch at ["Note",2]"#), "\(damaged.output)")
    }

    @Test("bad arguments exit 64 and unopenable stores 2, each naming the store")
    func failures() throws {
        let dir = NSTemporaryDirectory() + "strata-etcd-tools-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let prefix = Clusters.prefix("tools-failures")
        try makeStore(options, prefix: prefix, notes: Note.some(3))

        let noCluster = try runEtcdTool(["stats", "etcd:" + prefix])
        #expect(noCluster.status == 64 && noCluster.output.contains("etcd:\(prefix): say where the cluster is with --endpoints"), "\(noCluster.output)")
        let engineGiven = try runEtcdTool(["stats", "etcd:" + prefix, "--engine", "lmdb"] + reach)
        #expect(engineGiven.status == 64 && engineGiven.output.contains("is an etcd store"), "\(engineGiven.output)")
        let noTarget = try runEtcdTool(["copy", "etcd:" + prefix, dir + "/x"] + reach)
        #expect(noTarget.status == 64 && noTarget.output.contains("needs --to"), "\(noTarget.output)")

        let missing = try runEtcdTool(["verify", "etcd:nothing-\(UUID().uuidString)"] + reach)
        #expect(missing.status == 2 && missing.output.contains("strata-etcd: etcd:nothing-"), "\(missing.output)")
        let other = Clusters.prefix("tools-occupied")
        try makeStore(options, prefix: other, notes: Note.some(1))
        let occupied = try runEtcdTool(["backup", "etcd:" + prefix, "etcd:" + other] + reach)
        #expect(occupied.status == 2 && occupied.output.contains("already holds data"), "\(occupied.output)")
        let itself = try runEtcdTool(["backup", "etcd:" + prefix, "etcd:" + prefix] + reach)
        #expect(itself.status == 2 && itself.output.contains("already open"), "\(itself.output)")
        let started = ContinuousClock.now
        let unreachable = try runEtcdTool(["stats", "etcd:" + prefix, "--endpoints", "http://127.0.0.1:9", "--timeout", "1"])
        #expect(unreachable.status == 2 && unreachable.output.contains("etcd:\(prefix) at http://127.0.0.1:9: "), "\(unreachable.output)")
        #expect(ContinuousClock.now - started < .seconds(8), "--timeout bounds the wait")
    }

    @Test("on a cluster with authentication: --user with the password in STRATA_ETCD_PASSWORD; a wrong one exits 2 naming it")
    func authentication() throws {
        let cluster = try LocalCluster(members: 1)
        defer { cluster.stop() }
        let admin = try EtcdKeySpace(Clusters.options(cluster))
        try makeStore(Clusters.options(cluster), prefix: "notes", notes: Note.some(3))  // before authentication is on
        try admin.enableAuthentication(user: "root", password: "s3cret")
        let endpoints = cluster.endpoints.joined(separator: ",")
        let reach = Clusters.toolArguments(Clusters.options(cluster))
        let good = try runEtcdTool(["stats", "etcd:notes", "--user", "root"] + reach, environment: ["STRATA_ETCD_PASSWORD": "s3cret"])
        #expect(good.status == 0 && good.output.contains("keyspace Note: 3 records"), "\(good.output)")
        let wrong = try runEtcdTool(["stats", "etcd:notes", "--user", "root"] + reach, environment: ["STRATA_ETCD_PASSWORD": "guess"])
        #expect(wrong.status == 2 && wrong.output.contains("etcd:notes at \(endpoints): ") && wrong.output.contains("root"), "\(wrong.output)")
        let none = try runEtcdTool(["stats", "etcd:notes"] + reach)
        #expect(none.status == 2 && none.output.contains("etcd:notes at \(endpoints): "), "\(none.output)")
    }

    @Test("a pair over the destination's limits is refused before anything is written")
    func destinationLimits() throws {
        let dir = NSTemporaryDirectory() + "strata-etcd-tools-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // In LMDB: 300 notes, then one whose text is over etcd's value limit (about 1.1 MB by
        // default), last in key order, so a copy without the check would write batches first.
        let source = try Store(.lmdb(path: dir + "/lmdb"))
        try source.withTransaction { ctx in
            for n in Note.some(300) { try ctx.insert(n) }
            try ctx.insert(Note(id: 1_000, text: String(repeating: "x", count: 1_300_000), stars: 0, tags: []))
        }
        try source.close()
        let prefix = Clusters.prefix("tools-limits")
        let copy = try runEtcdTool(["copy", dir + "/lmdb", "etcd:" + prefix] + reach)
        #expect(copy.status == 2, "\(copy.output)")
        #expect(copy.output.contains("cannot hold a value of 1300"), "\(copy.output)")
        #expect(copy.output.contains("nothing was written"), "\(copy.output)")
        let keys = try EtcdKeySpace(options).keys(withPrefix: EtcdKeySpace.namespace(ofPrefix: prefix))
        #expect(keys.count <= 1, "at most the store's marker: \(keys.count) keys")
    }
}
