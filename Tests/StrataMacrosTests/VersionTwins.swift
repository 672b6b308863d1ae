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

@IndexKeyRecord("lastName", "firstName", keyspace: "PersonRetypedField")
struct PersonRetypedField {
    let lastName: String
    let firstName: String
    let age: Int64
}
