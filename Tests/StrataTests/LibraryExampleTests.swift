import Foundation
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
import StrataRecords
import Testing

// CodableDatastore's README example (its `BookStore` with a shipped v1 and a current `Book`,
// title, authors and ISBN indexes, loads through each, range loads as an async sequence,
// persist and delete returning the old value, a transaction over several types), in Strata's
// spelling: plain Codable types, no macro.

/// The book as version 1 shipped it.
struct LibraryBookV1: CodableRecord, Sendable {
    var id: UUID
    var title: String
    var author: String
    static var keyspace: String { "Library.Book" }
}

/// The book now: several authors and an ISBN; version 2 reads version 1's values.
struct LibraryBook: CodableRecord, Equatable, Sendable {
    var id: UUID
    var title: String
    var authors: [String]
    var isbn: String
    var shelf: Int?

    static var keyspace: String { "Library.Book" }
    static var schemaVersion: UInt32? { 2 }
    static var migrations: [CodableMigration<LibraryBook>] { [.from(LibraryBookV1.self, LibraryBook.init)] }

    static let title = FieldIndex("title", \LibraryBook.title)
    static let author = EachIndex("author", \LibraryBook.authors)
    /// One book per ISBN, with a full copy in the index (CodableDatastore's `@Direct`).
    static let isbn = UniqueIndex("isbn", \LibraryBook.isbn, covering: true)
    static let indexes = [title.index, author.index, isbn.index]

    init(id: UUID, title: String, authors: [String], isbn: String, shelf: Int? = nil) {
        self.id = id
        self.title = title
        self.authors = authors
        self.isbn = isbn
        self.shelf = shelf
    }

    init(_ v1: LibraryBookV1) {
        self.init(id: v1.id, title: v1.title, authors: [v1.author], isbn: "unknown-\(v1.id.uuidString)")
    }
}

struct LibraryAuthor: CodableRecord, Equatable, Sendable {
    var id: UUID
    var fullName: String
    static let fullName = UniqueIndex("fullName", \LibraryAuthor.fullName)
    static let indexes = [fullName.index]
}

struct LibraryShelf: CodableRecord, Equatable, Sendable {
    var id: Int
    var genre: String
    static let genre = UniqueIndex("genre", \LibraryShelf.genre)
    static let indexes = [genre.index]
}

struct ShelfNotFound: Error {}

/// A deterministic UUID.
private func uuid(_ n: Int) -> UUID {
    UUID(uuid: (0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, UInt8(n >> 8), UInt8(n & 0xFF)))
}

@Suite("CodableDatastore's README example, in Strata's spelling")
struct LibraryExampleTests {
    @Test("books through every index, range loads as an async sequence, writes that return the old value, a transaction over three types",
          arguments: TestEngines.all)
    func library(kind: EngineKind) async throws {
        try await withAsyncStore(kind) { store in
            let titles = ["Anathem", "A Fire Upon the Deep", "Blindsight", "Dune", "Axiomatic", "Children of Time"]
            let books = titles.enumerated().map { i, title in
                LibraryBook(id: uuid(i), title: title, authors: i % 2 == 0 ? ["Author \(i)", "Co-author"] : ["Author \(i)"], isbn: "978-\(i)")
            }
            try await store.withTransaction { ctx in for book in books { try ctx.insert(book) } }

            // Loads by id and through the unique, covering ISBN index.
            let (byID, byISBN) = try await store.withReadTransaction { ctx in
                (try LibraryBook.fetch(in: ctx, id: uuid(3)), try LibraryBook.isbn.fetch(in: ctx, "978-3"))
            }
            #expect(byID == books[3] && byISBN == books[3])

            // A range of titles as an async sequence, in title order.
            var startingWithA: [String] = []
            for try await book in LibraryBook.title.query(.range("A"..<"B")).stream(from: store) { startingWithA.append(book.title) }
            #expect(startingWithA == ["A Fire Upon the Deep", "Anathem", "Axiomatic"])

            // Through the many-to-many author index.
            let coauthored = try await store.withReadTransaction { ctx in try LibraryBook.author.select(in: ctx, "Co-author") }
            #expect(coauthored.map(\.title) == ["Anathem", "Blindsight", "Axiomatic"], "in primary-key order")

            // Persist and delete return what they replaced.
            var edited = books[2]
            edited.title = "Blindsight (revised)"
            let revised = edited
            let (replaced, fresh, removed, absent) = try await store.withTransaction { ctx in
                (try ctx.replace(revised), try ctx.replace(LibraryBook(id: uuid(99), title: "Echopraxia", authors: ["Author 2"], isbn: "978-99")),
                 try LibraryBook.remove(in: ctx, id: uuid(5)), try LibraryBook.remove(in: ctx, id: uuid(77)))
            }
            #expect(replaced == books[2] && fresh == nil && removed == books[5] && absent == nil)
            let afterWrites = try await store.withReadTransaction { ctx in
                (try LibraryBook.title.count(in: ctx, .range("B"..<"C")), try LibraryBook.isbn.fetch(in: ctx, "978-5"), try LibraryBook.count(in: ctx))
            }
            #expect(afterWrites.0 == 1 && afterWrites.1 == nil && afterWrites.2 == 6, "\(afterWrites)")

            // One transaction over authors, shelves and books: a missing shelf undoes all of it.
            try await store.withTransaction { ctx in
                try ctx.insert(LibraryShelf(id: 1, genre: "science fiction"))
            }
            let newBooks = [(LibraryBook(id: uuid(200), title: "Permutation City", authors: ["Greg Egan"], isbn: "978-200"), "science fiction"),
                            (LibraryBook(id: uuid(201), title: "Middlemarch", authors: ["George Eliot"], isbn: "978-201"), "realism")]
            func shelve(_ books: [(LibraryBook, String)]) async throws {
                try await store.withTransaction { ctx in
                    try ctx.insert(LibraryAuthor(id: uuid(300), fullName: books[0].0.authors[0]))
                    for (book, genre) in books {
                        guard let shelf = try LibraryShelf.genre.fetch(in: ctx, genre) else { throw ShelfNotFound() }
                        var book = book
                        book.shelf = shelf.id
                        try ctx.insert(book)
                    }
                }
            }
            await #expect(throws: ShelfNotFound.self) { try await shelve(newBooks) }
            let untouched = try await store.withReadTransaction { ctx in
                (try LibraryAuthor.count(in: ctx), try LibraryBook.fetch(in: ctx, id: uuid(200)))
            }
            #expect(untouched.0 == 0 && untouched.1 == nil, "nothing of a failed transaction is kept")
            try await shelve([newBooks[0]])
            let shelved = try await store.withReadTransaction { ctx in
                (try LibraryAuthor.fullName.fetch(in: ctx, "Greg Egan"), try LibraryBook.isbn.fetch(in: ctx, "978-200"))
            }
            #expect(shelved.0?.id == uuid(300) && shelved.1?.shelf == 1)
        }
    }

    @Test("a store written by version 1 reads as version 2: on read, then through prepare, which also builds the new indexes",
          arguments: TestEngines.all.filter { $0.declaration.capabilities.contains(.persistent) })
    func migration(kind: EngineKind) throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let old = (0..<50).map { LibraryBookV1(id: uuid($0), title: "Title \($0)", author: "Author \($0 % 7)") }
        do {
            let store = try Store(kind.configuration(path: directory.path))
            defer { try? store.close() }
            try store.withTransaction { ctx in for book in old { try ctx.insert(book) } }
        }
        let store = try Store(kind.configuration(path: directory.path))
        defer { try? store.close() }
        // On read, before prepare: by id; the new indexes are not built yet, and say so.
        #expect(try store.withReadTransaction { ctx in try LibraryBook.fetch(in: ctx, id: uuid(7)) } == LibraryBook(old[7]))
        #expect(throws: RecordError.self) { try store.withReadTransaction { ctx in try LibraryBook.author.select(in: ctx, "Author 3") } }
        let report = try store.prepare(LibraryBook.self).wait()
        #expect(report.migrated == old.count)
        let (all, byAuthor, byISBN) = try store.withReadTransaction { ctx in
            (try LibraryBook.select(in: ctx), try LibraryBook.author.select(in: ctx, "Author 3"),
             try LibraryBook.isbn.fetch(in: ctx, "unknown-\(uuid(9).uuidString)"))
        }
        #expect(all == old.map(LibraryBook.init), "every book, migrated, in id order")
        #expect(byAuthor.map(\.id) == old.filter { $0.author == "Author 3" }.map(\.id))
        #expect(byISBN == LibraryBook(old[9]))
    }
}
