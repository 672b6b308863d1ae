// expect: compiles
// A user's module that defines its own `Record`, `Strata`, `Query` and `Order`: the macro's
// expansion names Strata's types by their defining modules, so these do not capture them.
import Strata

struct Record { var note: String }
enum Strata { static let version = 1 }
struct Query {}
enum Order { case byName }
struct Int32Box { var value: Int32 }

@IndexKeyRecord("id")
@Index("byName", "name")
struct Person {
    let id: Int
    var name: String
    var box: String
}

func shadowed(_ ctx: TransactionContext) throws -> (Record, Int, [Person], Person?) {
    (Record(note: "mine \(Strata.version)"),
     try Person.byName.count(in: ctx, name: "Ada"),
     try Person.select(in: ctx, id: .greaterThan(1)) + Person.byName.query(name: "Ada").select(in: ctx),
     try Person.fetch(in: ctx, id: 1))
}
