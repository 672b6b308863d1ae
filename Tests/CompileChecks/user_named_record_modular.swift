// expect: compiles
// The same with `import StrataMacros` alone: a user's `Record` and `Strata` beside the macro.
import StrataMacros

struct Record { var note: String }
enum Strata {}

@IndexKeyRecord("id")
@Index("byTag", "tags")
struct Item {
    let id: Int
    var tags: [String]
}

func shadowedModular(_ ctx: TransactionContext) throws -> (Record, [Item], Int) {
    (Record(note: "mine"), try Item.byTag.select(in: ctx, tags: "x"), try Item.count(in: ctx, id: .lessThan(3)))
}
