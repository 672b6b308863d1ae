import Strata

// Person's declaration, reformatted with comments: the schema version must not change.
@IndexKeyRecord("lastName", "firstName", keyspace: "PersonReformatted")
struct PersonReformatted {
    let   lastName :String   // the family name
    let firstName: /* given */ String

    let age: Int
}

@IndexKeyRecord("lastName", "firstName", keyspace: "PersonRenamedField")
struct PersonRenamedField {
    let lastName: String
    let firstName: String
    let years: Int
}

// Int32 is stored as i32, Int as i64: another format, another version. (Int64 is i64 too, the
// same bytes as Int: that respelling keeps the version.)
@IndexKeyRecord("lastName", "firstName", keyspace: "PersonRetypedField")
struct PersonRetypedField {
    let lastName: String
    let firstName: String
    let age: Int32
}

@IndexKeyRecord("lastName", "firstName", keyspace: "PersonRespelled")
struct PersonRespelled {
    let lastName: Swift.String
    let firstName: Name
    let age: Int64
}

typealias Name = String
