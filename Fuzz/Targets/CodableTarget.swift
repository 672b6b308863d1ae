import FuzzSupport
import Foundation
@testable import StrataRecords

/// The binary Codable form (plain `Codable` records): the input is a stored value. A value that
/// decodes as `Shelf` must re-encode to bytes that decode to an equal value; the typeless reader
/// `strata dump` uses must answer or throw on every input.
enum CodableTarget {
    enum Condition: Codable, Equatable, Sendable {
        case new
        case used(grade: Int)
        case damaged(String, pages: [Int])
    }

    struct Book: Codable, Equatable, Sendable {
        var id: Int
        var title: String
        var price: Double?
        var condition: Condition
        var authors: [String]
        var ratings: [String: Int8]
        var added: Date
        var cover: Data?
        var isbn: UUID?

        // NaN prices compare by their bits: a NaN must come back a NaN.
        static func == (a: Book, b: Book) -> Bool {
            a.id == b.id && a.title == b.title && a.price?.bitPattern == b.price?.bitPattern && a.condition == b.condition
                && a.authors == b.authors && a.ratings == b.ratings && a.added.timeIntervalSinceReferenceDate.bitPattern
                == b.added.timeIntervalSinceReferenceDate.bitPattern && a.cover == b.cover && a.isbn == b.isbn
        }
    }

    struct Shelf: Codable, Equatable, Sendable {
        var id: Int
        var name: String
        var books: [Book]
        var nested: [[UInt16?]]
        var counts: [Int: UInt64]
    }

    static let target = FuzzTarget(name: "codable", run: run, seeds: seeds)

    static func run(_ input: UnsafeRawBufferPointer) {
        _ = try? CodableValueDecoder.storedValue(from: input, recordKey: .int(7))
        guard let shelf = try? CodableValueDecoder.decode(Shelf.self, from: input, recordID: 7) else { return }
        var bytes: [UInt8] = []
        do {
            try CodableValueEncoder.encode(shelf, isRecordID: { ($0 as? Int) == 7 }, to: &bytes)
            let again = try bytes.withUnsafeBytes { try CodableValueDecoder.decode(Shelf.self, from: $0, recordID: 7) }
            if again != shelf { violated("\(shelf) came back as \(again)") }
        } catch {
            violated("\(shelf) decoded, but its encoding does not: \(error)")
        }
    }

    static func seeds() -> [[UInt8]] {
        let book = Book(id: 1, title: "Dune", price: 9.5, condition: .used(grade: 2), authors: ["Frank Herbert"],
                        ratings: ["ann": 5, "bob": -1], added: Date(timeIntervalSinceReferenceDate: 1e8), cover: Data([1, 2]),
                        isbn: UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))
        var other = book
        (other.id, other.price, other.condition, other.cover, other.isbn) = (7, .nan, .damaged("wet", pages: [1, 99]), nil, nil)
        let shelves = [
            Shelf(id: 7, name: "", books: [], nested: [], counts: [:]),
            Shelf(id: 7, name: "sci-fi é", books: [book, other], nested: [[1, nil], []], counts: [1: 2, -5: .max]),
            Shelf(id: 3, name: "new", books: [Book(id: 0, title: "", price: nil, condition: .new, authors: [], ratings: [:],
                                                   added: .distantPast, cover: nil, isbn: nil)], nested: [[nil]], counts: [0: 0]),
        ]
        return shelves.map { shelf in
            var bytes: [UInt8] = []
            try! CodableValueEncoder.encode(shelf, isRecordID: { ($0 as? Int) == 7 }, to: &bytes)
            return bytes
        }
    }
}
