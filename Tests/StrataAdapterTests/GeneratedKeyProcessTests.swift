import Foundation
import StrataBundledEngines
import StrataEngine
import StrataRecords
import Testing

/// What `strata-harness sequence-writer` inserts (the same keyspace and layout).
private struct SequencedNote: CodableRecord, Equatable {
    var id: Int
    var writer: String
}

/// The `issued N` and `deleted N` lines of a writer's output.
private func lines(_ output: String, _ verb: String) -> [Int] {
    output.split(separator: "\n").compactMap { line in line.hasPrefix(verb + " ") ? Int(line.dropFirst(verb.count + 1)) : nil }
}

@Suite("Generated keys across processes")
struct GeneratedKeyProcessTests {
    @Test("writers in several processes, one killed with SIGKILL mid-run, never issue a key twice or reuse a deleted one",
          arguments: ["lmdb", "sqlite"])
    func severalWriters(engine: String) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let kind = try #require(BundledEngines.named(engine))
        try Store(kind.configuration(path: dir.path)).close()
        func writer(_ name: String, count: Int, deleteEvery: Int) throws -> BackgroundProcess {
            try BackgroundProcess(harnessTool, ["sequence-writer", "--engine", engine, "--path", dir.path, "--name", name,
                                               "--count", "\(count)", "--delete-every", "\(deleteEvery)"])
        }
        // A runs until killed; B runs beside it and past its death; C starts after it.
        let a = try writer("a", count: 0, deleteEvery: 3), b = try writer("b", count: 300, deleteEvery: 4)
        #expect(a.waitFor("issued 60"), "\(a.output)")
        kill(a.process.processIdentifier, SIGKILL)
        _ = a.wait()
        let c = try writer("c", count: 100, deleteEvery: 5)
        #expect(b.wait() == 0, "\(b.output)")
        #expect(c.wait() == 0, "\(c.output)")

        let issued = ["a": lines(a.output, "issued"), "b": lines(b.output, "issued"), "c": lines(c.output, "issued")]
        let deleted = Set(lines(a.output, "deleted") + lines(b.output, "deleted") + lines(c.output, "deleted"))
        let all = issued.values.flatMap { $0 }
        #expect(issued["b"]?.count == 300 && issued["c"]?.count == 100)
        #expect(Set(all).count == all.count, "a key issued twice: \(all.sorted())")
        // Every key C was issued is above every key A committed before it died.
        #expect((issued["c"]?.min() ?? 0) > (issued["a"]?.max() ?? 0))
        let store = try Store(kind.configuration(path: dir.path))
        defer { try? store.close() }
        let records = try store.withReadTransaction { ctx in try SequencedNote.select(in: ctx) }
        for (name, keys) in issued {
            // A may have been killed after deleting its last record and before saying so.
            for key in keys where !deleted.contains(key) && !(name == "a" && key == keys.last) {
                #expect(records.contains(SequencedNote(id: key, writer: name)), "\(name)'s record \(key) is missing or another writer's")
            }
        }
        #expect(records.allSatisfy { !deleted.contains($0.id) }, "a deleted key came back")
        // A's last commit may have happened after its last line: that record is A's, above the rest of A's.
        let unprinted = records.filter { !all.contains($0.id) }
        #expect(unprinted.count <= 1 && unprinted.allSatisfy { $0.writer == "a" }, "records no writer reported: \(unprinted)")
        let next = try store.withTransaction { ctx in try ctx.nextID(SequencedNote.self) }
        #expect(next > (all + records.map(\.id)).max()!, "the sequence after every writer: \(next)")
    }
}
