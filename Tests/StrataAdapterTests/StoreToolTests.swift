import Foundation
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
import StrataLevelDB
import StrataRecords
import Testing

/// A record the `strata` tool has never seen: it reads it through the catalog alone.
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

    static let all = [
        Note(id: 1, text: "line\nbreak \"quoted\"", stars: 5, tags: ["a", "b"]),
        Note(id: 2, text: "é", stars: -1, tags: []),
        Note(id: 3, text: "", stars: 5, tags: ["b"]),
    ]
}

/// `text` as one word of a POSIX shell command (the clone may sit in a path with spaces).
private func quoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// Whether `text` holds a control character other than a line feed (a terminal escape, a carriage return).
private func hasControlCharacters(_ text: String) -> Bool {
    text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || $0.value == 0x7F }
}

@Suite("strata stats, dump, verify, copy and backup on every on-disk engine")
struct StoreToolTests {
    private func makeStore(_ kind: EngineKind, _ path: String) throws {
        let store = try Store(kind.configuration(path: path))
        try store.withTransaction { ctx in for n in Note.all { try ctx.insert(n) } }
        try store.close()
    }

    @Test("each subcommand works on the store's files alone, exits 0, and prints no control characters into a pipe",
          arguments: BundledEngines.onDisk)
    func subcommands(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let path = dir.path + "/store"
        try makeStore(kind, path)

        let stats = try runProgram(strataTool, ["stats", path])
        #expect(stats.status == 0, "\(stats.output)")
        #expect(stats.output.contains("store \(path) (\(kind.name))"))
        #expect(stats.output.contains("keyspace Note: 3 records"), "\(stats.output)")
        #expect(stats.output.contains("index byStars (stars: Int): readable, generation 1, 3 entries"), "\(stats.output)")
        #expect(stats.output.contains("index byTag (each tags: String): readable, generation 1, 3 entries"), "\(stats.output)")

        let json = try runProgram(strataTool, ["stats", path, "--json"])
        let decoded = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        let keyspaces = (decoded?["store"] as? [String: Any])?["keyspaces"] as? [[String: Any]]
        #expect(keyspaces?.first?["records"] as? Int == 3, "\(json.output)")

        let dump = try runProgram(strataTool, ["dump", path])
        let version = Note.recordType.version
        #expect(dump.status == 0)
        #expect(dump.output.split(separator: "\n") == [
            #"{"keyspace":"Note","key":[1],"version":\#(version),"fields":{"text":"line\nbreak \"quoted\"","stars":5,"tags":["a","b"]}}"#,
            #"{"keyspace":"Note","key":[2],"version":\#(version),"fields":{"text":"é","stars":-1,"tags":[]}}"#,
            #"{"keyspace":"Note","key":[3],"version":\#(version),"fields":{"text":"","stars":5,"tags":["b"]}}"#,
        ])
        let ranged = try runProgram(strataTool, ["dump", path, "--keyspace", "Note", "--from", "[2]", "--to", "[3]"])
        #expect(ranged.output.split(separator: "\n").count == 1 && ranged.output.contains(#""key":[2]"#), "\(ranged.output)")

        let verify = try runProgram(strataTool, ["verify", path])
        #expect(verify.status == 0, "\(verify.output)")
        #expect(verify.output.contains("index Note.byStars: 3 entries, 0 missing, 0 stale"), "\(verify.output)")
        #expect(verify.output.contains("pairs/s") && verify.output.contains("done"), "the progress line: \(verify.output)")
        #expect(verify.output.contains("ok: nothing wrong"))

        for target in BundledEngines.onDisk {
            let copy = try runProgram(strataTool, ["copy", path, dir.path + "/copy-\(target.name)", "--to", target.name])
            #expect(copy.status == 0, "\(copy.output)")
            #expect(copy.output.contains("\(kind.name) → \(target.name)") && copy.output.contains("verified: 3 records"), "\(copy.output)")
            let again = try runProgram(strataTool, ["dump", dir.path + "/copy-\(target.name)"])
            #expect(again.output == dump.output)
            #expect(!hasControlCharacters(copy.output))
        }
        let backup = try runProgram(strataTool, ["backup", path, dir.path + "/backup"])
        #expect(backup.status == 0, "\(backup.output)")
        #expect(try runProgram(strataTool, ["verify", dir.path + "/backup"]).status == 0)
        for output in [stats.output, dump.output, verify.output, backup.output] { #expect(!hasControlCharacters(output)) }
    }

    @Test("verify exits 1 naming a damaged record; unopenable stores exit 2 naming the store", arguments: BundledEngines.onDisk)
    func failures(kind: EngineKind) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let path = dir.path + "/store"
        try makeStore(kind, path)
        let engine = try kind.open(path, EngineOptions(mode: .openExisting))
        let key = KeyCodec.encode("Note", 2)
        try engine.write { tx in
            var value = try #require(try tx.get(key))
            value[value.count - 5] ^= 1
            try tx.put(value, forKey: key)
        }
        try engine.close()
        let verify = try runProgram(strataTool, ["verify", path])
        #expect(verify.status == 1)
        #expect(verify.output.contains(#"problem: checksumMismatch at ["Note",2]"#), "\(verify.output)")
        let json = try runProgram(strataTool, ["verify", path, "--json"])
        #expect(json.status == 1 && json.output.contains(#""problemCount" : 1"#), "\(json.output)")

        let missing = try runProgram(strataTool, ["verify", dir.path + "/nothing"])
        #expect(missing.status == 2 && missing.output.contains("\(dir.path)/nothing: no such store"), "\(missing.output)")
        try makeStore(kind, dir.path + "/other")
        let occupied = try runProgram(strataTool, ["copy", path, dir.path + "/other"])
        #expect(occupied.status == 2 && occupied.output.contains("already holds data"), "\(occupied.output)")
    }

    @Test("on a terminal, stats and dump (into a file) show a progress line rewritten in place; in a pipe, none")
    func progressOnTerminal() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let path = dir.path + "/store"
        try makeStore(BundledEngines.onDisk[0], path)
        let script = try #require(which("script"), "script (util-linux) gives the tool a terminal")
        for (command, label) in [("stats", "stats"), ("dump", "dump")] {
            // `script` runs the tool on a pseudo-terminal; its standard output goes to a file.
            let shell = "\(quoted(strataTool)) \(command) \(quoted(path)) > \(quoted(dir.path + "/" + command + ".out"))"
            let terminal = try runProgram(script, ["-qec", shell, "/dev/null"])
            #expect(terminal.status == 0, "\(terminal.output)")
            #expect(terminal.output.contains("\r\(label) \(path): ") && terminal.output.contains(" pairs (100%)")
                    && terminal.output.contains("\u{1B}[K"),
                    "\(terminal.output.debugDescription)")
            #expect(terminal.output.contains(", done"), "\(terminal.output.debugDescription)")
            let written = try String(contentsOfFile: "\(dir.path)/\(command).out", encoding: .utf8)
            #expect(!hasControlCharacters(written) && !written.contains("pairs/s"), "the output file holds the output only")
            let piped = try runProgram(strataTool, [command, path])
            #expect(!piped.output.contains("pairs/s"), "no progress in a pipe: \(piped.output)")
        }
        // dump on a terminal prints records there: no progress line among them.
        let onTerminal = try runProgram(script, ["-qec", "\(quoted(strataTool)) dump \(quoted(path))", "/dev/null"])
        #expect(onTerminal.output.contains(#""keyspace":"Note""#) && !onTerminal.output.contains("pairs/s"), "\(onTerminal.output)")
    }

    @Test("a LevelDB store in use by another process is refused with the way to back it up")
    func levelDBInUse() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try Store(.leveldb(path: dir.path))
        defer { try? store.close() }
        try store.insert(Note.all[0])
        let result = try runProgram(strataTool, ["backup", dir.path, dir.path + "-backup"])
        #expect(result.status == 2)
        #expect(result.output.contains("locked by another process") && result.output.contains("Store.copy(to:)"), "\(result.output)")
    }
}
