// Every invalid shape of a query on an @Index, and the macro's checks of @Index itself.
import Foundation
import Strata

@IndexKeyRecord("id")
@Index("byEmail", "email", unique: true)
@Index("byCityAge", "city", "age")
@Index("byTag", "tags")
struct IndexedPerson {
    let id: Int
    var email: String
    var city: String
    var age: Int
    var tags: [String]
    var note: String
}

func indexQueries(_ ctx: TransactionContext) throws {
    // Valid: these compile.
    _ = try IndexedPerson.byEmail.fetch(in: ctx, email: "x")
    _ = try IndexedPerson.byEmail.select(in: ctx, limit: 2, email: .greaterThan("x"))
    _ = try IndexedPerson.byCityAge.select(in: ctx, city: "x")
    _ = try IndexedPerson.byCityAge.select(in: ctx, order: .descending, city: "x", age: .lessThan(3))
    _ = try IndexedPerson.byCityAge.count(in: ctx, city: .oneOf(["x", "y"]))
    _ = try IndexedPerson.byTag.select(in: ctx, tags: "x")
    _ = try IndexedPerson.byCityAge.query(city: "x", age: .greaterThan(3)).page(in: ctx, limit: 10)
    _ = IndexedPerson.byCityAge.query(age: 3) // expected-error {{a query on index byCityAge gives its components in order without skipping any: add city first}}
    // A comparison before the last component, or in fetch.
    _ = try IndexedPerson.byCityAge.select(in: ctx, city: .lessThan("x"), age: 1) // expected-error {{only the last key component of a select or count may be a comparison}}
    _ = try IndexedPerson.byCityAge.count(in: ctx, city: .lessThan("x"), age: 1) // expected-error {{only the last key component of a select or count may be a comparison}}
    _ = try IndexedPerson.byEmail.fetch(in: ctx, email: .lessThan("x")) // expected-error {{only the last key component of a select or count may be a comparison}}
    // A skipped leading component.
    _ = try IndexedPerson.byCityAge.select(in: ctx, age: 1) // expected-error {{a query on index byCityAge gives its components in order without skipping any: add city first}}
    _ = try IndexedPerson.byCityAge.count(in: ctx, age: .greaterThan(1)) // expected-error {{a query on index byCityAge gives its components in order without skipping any: add city first}}
    // fetch on an index that is not unique.
    _ = try IndexedPerson.byCityAge.fetch(in: ctx, city: "x", age: 1) // expected-error {{fetch needs a unique index: byCityAge is not unique}}
    // A multi-valued index takes one element, not the collection.
    _ = try IndexedPerson.byTag.select(in: ctx, tags: ["x"]) // expected-error {{no exact matches in call to instance method 'select'}}
    // A field queried on the type points at its index.
    _ = try IndexedPerson.select(in: ctx, email: "x") // expected-error {{'email' is a field, not part of the key: queries select by the key (id), or through its index: byEmail.select(in:email:)}}
    _ = try IndexedPerson.select(in: ctx, note: "x") // expected-error {{'note' is a field, not part of the key: queries select by the key (id)}}
}

@IndexKeyRecord("id")
@Index("byNope", "nope") // expected-error {{index 'byNope': 'nope' is not a stored property of BadIndexes}}
struct BadIndexes {
    let id: Int
    var a: [Int]
    var b: Set<String>
}

@IndexKeyRecord("id")
@Index("byBoth", "a", "b") // expected-error {{index 'byBoth': at most one component may be an array or set}}
struct TwoCollections {
    let id: Int
    var a: [Int]
    var b: Set<String>
}

@IndexKeyRecord("id")
@Index("by-a", "a") // expected-error {{index name 'by-a' must be a Swift identifier}}
struct BadNames {
    let id: Int
    var a: Int
}

@IndexKeyRecord("id")
@Index("byJSON", "settings") // expected-error {{is stored through @Field, so its values have no key encoding}}
struct IndexOnJSON {
    let id: Int
    @Field(.json) var settings: [String: String]
}
