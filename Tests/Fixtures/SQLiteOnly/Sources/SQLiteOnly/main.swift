import Foundation
import StrataMacros
import StrataSQLite

// Records declared with the macro, through `import StrataMacros` alone: the expansion names
// StrataRecords and StrataKeyCodec, never the umbrella module.
@IndexKeyRecord("notebook", "id")
@Index("byTag", "tag")
struct Note: Equatable {
    let notebook: String
    let id: Int
    var tag: String
    var text: String
}

func check(_ condition: Bool, _ what: String) {
    guard condition else { fatalError("sqlite-only fixture: \(what)") }
}

let path = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-only-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: path) }
let store = try Store(.sqlite(path: path))
try store.withTransaction { ctx in
    for i in 1...5 { try ctx.insert(Note(notebook: i <= 3 ? "work" : "home", id: i, tag: i % 2 == 0 ? "even" : "odd", text: "note \(i)")) }
}
try store.withReadTransaction { ctx in
    let work = try Note.select(in: ctx, notebook: "work")
    check(work.map(\.text) == ["note 1", "note 2", "note 3"], "select by the key's first component: \(work)")
    check(try Note.select(in: ctx, notebook: "work", id: .greaterThan(1)).map(\.id) == [2, 3], "select with a comparison")
    check(try Note.count(in: ctx, notebook: "home") == 2, "count")
    check(try Note.byTag.select(in: ctx, tag: "even").map(\.id) == [4, 2], "select on an index (tag, then key order: home before work)")
    check(try Note.byTag.count(in: ctx, tag: "odd") == 3, "count on an index")
    check(try Note.byTag.query(tag: "odd").page(in: ctx, limit: 2).records.map(\.id) == [5, 1], "a page of an index query")
    check(try Note.fetch(in: ctx, notebook: "home", id: 5)?.text == "note 5", "fetch")
}
try store.close()
print("ok: macro records through StrataMacros and StrataSQLite (select, count, index queries, fetch)")
