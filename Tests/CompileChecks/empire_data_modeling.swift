// Empire's "Data Modeling" key-ordering example, written on the type: the two queries compile,
// the line Empire marks `// ERROR` does not, and says why.
import Strata

@IndexKeyRecord("lastName", "firstName")
struct FullName {
    let lastName: String
    let firstName: String
    let age: Int
}

func keyOrdering(_ context: TransactionContext) throws {
    // scan query on the first component
    _ = try FullName.select(in: context, lastName: .greaterThan("Dallas"))

    // constrain first component, scan query on the second
    _ = try FullName.select(in: context, lastName: "Dallas", firstName: .lessThanOrEqual("Korben"))

    // ERROR: an unsupported key arrangement
    _ = try FullName.select(in: context, lastName: .lessThan("Zorg"), firstName: .lessThanOrEqual("Jean-Baptiste")) // expected-error {{only the last key component of a select or count may be a comparison}}
}
