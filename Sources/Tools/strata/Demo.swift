import ArgumentParser
import Foundation
import StrataBundledEngines
import StrataEngine

/// `strata demo`: writes and reads the same data through every engine.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write and read through every engine (the default command).")

    func run() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("strata-demo-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for kind in BundledEngines.all {
            let path = root + "/" + kind.name
            let store = try kind.open(path)
            try store.write { tx in
                for (i, name) in ["Dallas", "Leeloo", "Zorg", "Cornelius", "Ruby"].enumerated() {
                    try tx.put(Array("\(i + 1)".utf8), forKey: Array("person/\(name)".utf8))
                }
            }
            let names = try store.read { tx in
                try tx.keys(.prefix(Array("person/".utf8)), reverse: true, limit: 3).map { String(decoding: $0.dropFirst(7), as: UTF8.self) }
            }
            print("\(kind.name.padding(toLength: 8, withPad: " ", startingAt: 0)) last three people, descending: \(names.joined(separator: ", "))")
            try store.close()
        }
    }
}
