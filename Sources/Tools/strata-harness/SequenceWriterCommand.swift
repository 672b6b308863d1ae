import ArgumentParser
import Foundation
import StrataEngine
import StrataRecords
import StrataToolSupport

/// The record `strata-harness sequence-writer` inserts: an auto-increment key and the writer's name.
struct SequencedNote: CodableRecord {
    var id: Int
    var writer: String
}

/// `strata-harness sequence-writer`: inserts records with auto-increment keys from a separate process,
/// one per transaction, for the tests of generated keys across processes and kill -9. Prints
/// `opened`, then `issued N` after each commit (and `deleted N` after each delete).
struct SequenceWriter: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sequence-writer", abstract: "Insert records with auto-increment keys (a test helper).", shouldDisplay: false)

    @Option var engine: EngineChoice
    @Option var path: String
    @Option(help: "The name written in each record.") var name: String
    @Option(help: "Records to insert; 0: until killed.") var count = 100
    @Option(help: "Delete every n-th record right after inserting it (0: none).") var deleteEvery = 0

    func run() throws {
        let store = try Store(engine: try engine.open(path, EngineOptions(mode: .openExisting)))
        say("opened")
        var inserted = 0
        while count == 0 || inserted < count {
            let id = try store.withTransaction { ctx in try ctx.insertNew { SequencedNote(id: $0, writer: name) }.id }
            say("issued \(id)")
            inserted += 1
            if deleteEvery > 0 && inserted % deleteEvery == 0 {
                try store.withTransaction { ctx in _ = try SequencedNote.delete(in: ctx, id: id) }
                say("deleted \(id)")
            }
        }
        try store.close()
    }
}
