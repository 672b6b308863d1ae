import Foundation
import StrataBundledEngines
import StrataConformance
@testable import StrataEngine
@testable import StrataRecords
import Testing

/// The temporary stores' directories (`strata-temporary-<uid>` in the system's temporary directory).
private func temporaryStores() -> Set<String> {
    let root = TemporaryDirectoryLease.root
    return Set(((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).map { (root as NSString).appendingPathComponent($0) })
}

@Suite("Temporary stores", .serialized)
struct TemporaryStoreTests {
    @Test("a temporary store works like any other and is deleted at close, or when released unclosed; etcd, which keeps its store in its cluster, is refused",
          arguments: TestEngines.all)
    func deletedAtClose(kind: EngineKind) throws {
        let before = temporaryStores()
        let store: Store
        do {
            store = try Store(.temporary(kind))
        } catch let error as EngineError {
            #expect(kind.declaration.capabilities.contains(.persistent) && kind.name == "etcd", "\(kind) refused: \(error)")
            #expect(error == .invalidArgument("a temporary store needs an engine that keeps its store in a directory; etcd keeps it elsewhere"))
            #expect(temporaryStores() == before, "a refused temporary store left files")
            return
        }
        #expect(kind.name != "etcd", "etcd's temporary store was not refused: closing it would leave its keys in the cluster")
        try store.withTransaction { ctx in for id in 0..<100 { try ctx.insert(Note(id: id, text: "n\(id)")) } }
        #expect(try store.withReadTransaction { ctx in try Query<Note>().select(in: ctx) }.count == 100)
        _ = try store.compact()  // forwarded to the engine inside
        #expect(try store.withReadTransaction { ctx in try Query<Note>().select(in: ctx) }.count == 100)
        let created = temporaryStores().subtracting(before)
        #expect(created.count == 2, "a directory and its lock file: \(created)")
        if kind.declaration.capabilities.contains(.persistent) {
            #expect(created.contains { FileManager.default.fileExists(atPath: ($0 as NSString).appendingPathComponent("store")) })
        }
        try store.close()
        #expect(temporaryStores().intersection(created).isEmpty, "left after close: \(temporaryStores().intersection(created))")

        // Released without closing: deleted as well.
        do {
            let unclosed = try Store(.temporary(kind))
            try unclosed.withTransaction { ctx in try ctx.insert(Note(id: 1, text: "x")) }
            #expect(temporaryStores().subtracting(before).count == 2)
        }
        #expect(temporaryStores().subtracting(before).isEmpty, "left by a store released unclosed")
    }

    @Test("two temporary stores at once are two stores")
    func twoAtOnce() throws {
        let a = try Store(.temporary(.lmdb)), b = try Store(.temporary(.lmdb))
        try a.withTransaction { ctx in try ctx.insert(Note(id: 1, text: "a")) }
        #expect(try b.withReadTransaction { ctx in try Query<Note>().select(in: ctx) }.isEmpty)
        try a.close()
        try b.close()
    }

    @Test("a temporary store left by a process killed with SIGKILL is deleted by the next temporary store opened; a live one's is not")
    func sweptAfterCrash() throws {
        let before = temporaryStores()
        let holder = try Self.probe(["--engine", "lmdb", "--path", "unused", "--temporary", "--put", "a=1", "--hold", "60"])
        let crashed = try Self.probe(["--engine", "sqlite", "--path", "unused", "--temporary", "--put", "a=1", "--hold", "60"])
        let deadline = Date().addingTimeInterval(30)
        while temporaryStores().subtracting(before).count < 4 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        Thread.sleep(forTimeInterval: 0.5)  // both wrote their key
        let live = temporaryStores().subtracting(before)
        try #require(live.count == 4, "two directories and their lock files: \(live)")
        kill(crashed.processIdentifier, SIGKILL)
        crashed.waitUntilExit()
        #expect(temporaryStores().subtracting(before) == live, "the killed process's store is left until a sweep")

        let store = try Store(.temporary(.memory))  // sweeps
        let after = temporaryStores().subtracting(before)
        #expect(after.count == 4, "the live holder's two and this store's two: \(after)")
        #expect(live.subtracting(after).count == 2, "the killed process's directory and lock file are gone")
        try store.close()
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        try Store(.temporary(.memory)).close()
        #expect(temporaryStores().subtracting(before).isEmpty, "the second killed process's store is swept too")
    }

    @Test("a named store lives in $XDG_DATA_HOME/strata")
    func named() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let child = try Self.probe(["--engine", "lmdb", "--path", "unused", "--named", "notes", "--create", "--put", "a=1"], environment: ["XDG_DATA_HOME": dir.path])
        child.waitUntilExit()
        #expect(child.terminationStatus == 0)
        #expect(FileManager.default.fileExists(atPath: dir.path + "/strata/notes/data.mdb"))
    }

    /// A `strata-harness probe` child with `arguments`, its output discarded.
    private static func probe(_ arguments: [String], environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: harnessExecutable)
        process.arguments = ["probe"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    @Test("a store name is one path component", arguments: ["", "a/b", ".", "..", "/abs"])
    func badNames(name: String) {
        #expect(throws: EngineError.self) { try EngineConfiguration.defaultPath(named: name) }
    }
}
