import ArgumentParser
import Foundation
import StrataEngine
import StrataToolSupport

/// `strata-harness probe`: opens a store from a separate process, for tests of what several processes
/// do to one store. Prints `opened`, then the value read or written, then holds the store open.
struct Probe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open a store from another process (a test helper).", shouldDisplay: false)

    @Option var engine: EngineChoice
    @Option var path: String
    @Option(help: "Write KEY=VALUE in a write transaction.") var put: String?
    @Option(help: "Print the value of KEY.") var get: String?
    @Option(help: "Keep the store open this many seconds before closing.") var hold: Double = 0
    @Flag(help: "Repeat the --put transaction until killed (printing `writing` once inside the first).") var repeatPut = false
    @Flag(help: "Repeat the --get transaction until killed (printing `reading` once inside the first).") var repeatGet = false
    @Flag(help: "Create the store when missing.") var create = false
    @Flag(help: "Open a temporary store of the engine (--path is ignored).") var temporary = false
    @Option(help: "Open the store of this name in the default directory (--path is ignored).") var named: String?

    func run() throws {
        let store: any KeyValueEngine
        do {
            if temporary {
                store = try EngineConfiguration.temporary(engine.engines[0]).open(EngineOptions())
            } else {
                let path = try named.map(EngineConfiguration.defaultPath(named:)) ?? path
                store = try engine.open(path, EngineOptions(mode: create ? .create : .openExisting))
            }
        } catch let error as EngineError {
            say("error: \(error)")
            throw ExitCode(2)
        }
        say("opened")
        if let put {
            let parts = put.split(separator: "=", maxSplits: 1).map(String.init)
            var first = true
            repeat {
                try store.write { tx in
                    try tx.put(Array(parts[1].utf8), forKey: Array(parts[0].utf8))
                    if first && repeatPut { say("writing") }
                }
                first = false
            } while repeatPut
            say("put \(parts[0])")
        }
        if let get {
            var first = true
            repeat {
                let value = try store.read { tx in try tx.get(Array(get.utf8)) }
                if first { say(repeatGet ? "reading" : "value: " + (value.map { String(decoding: $0, as: UTF8.self) } ?? "nil")) }
                first = false
            } while repeatGet
        }
        if hold > 0 { Thread.sleep(forTimeInterval: hold) }
        try store.close()
    }
}
