// Queries on the key-path indexes of a plain Codable record: the valid shapes compile, fetch on an
// index that is not unique and a value of the wrong type do not.
import Foundation
import Strata

struct Shelved: CodableRecord {
    var id: UUID
    var title: String
    var authors: [String]
    var isbn: String
    static let title = FieldIndex("title", \Shelved.title)
    static let author = EachIndex("author", \Shelved.authors)
    static let isbn = UniqueIndex("isbn", \Shelved.isbn)
    static let indexes = [title.index, author.index, isbn.index]
}

func shelvedQueries(_ ctx: TransactionContext) throws {
    // Valid: these compile.
    _ = try Shelved.fetch(in: ctx, id: UUID())
    _ = try Shelved.select(in: ctx, id: .lessThan(UUID()))
    _ = try Shelved.title.select(in: ctx, "Dune")
    _ = try Shelved.title.select(in: ctx, limit: 5, .range("A"..<"B"))
    _ = try Shelved.author.count(in: ctx, "Frank Herbert")
    _ = try Shelved.isbn.fetch(in: ctx, "978")
    _ = Shelved.title.query(.greaterThan("M"))
    _ = try ctx.insertNew { Ticketed(id: $0) }

    // Invalid: each says why.
    _ = try Shelved.title.fetch(in: ctx, "Dune")  // expected-error {{fetch needs a unique index: declare it as UniqueIndex, or use select}}
    _ = try Shelved.author.fetch(in: ctx, "Frank Herbert")  // expected-error {{fetch needs a unique index: an EachIndex finds every record holding the element; use select}}
    _ = try Shelved.title.select(in: ctx, 42)  // expected-error {{no exact matches in call to instance method 'select'}}
}

struct Ticketed: CodableRecord {
    var id: Int
}
