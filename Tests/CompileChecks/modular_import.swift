// expect: compiles
// The modular path: the macro and the record layer through `import StrataMacros` alone (no
// umbrella module), with one engine's module. The expansion names the modules that define each
// type (StrataRecords, StrataKeyCodec), never `Strata`.
import StrataMacros
import StrataMemory

@IndexKeyRecord("city", "id")
@Index("byAge", "age")
@Index("byEmail", "email", unique: true)
struct Resident {
    let city: String
    let id: Int
    var age: Int
    var email: String
}

func modular() throws -> (Int, Int, [Resident], Resident?) {
    let store = try Store(.memory)
    try store.withTransaction { ctx in try ctx.insert(Resident(city: "Paris", id: 1, age: 30, email: "a@x")) }
    return try store.withReadTransaction { ctx in
        (try Resident.count(in: ctx, city: "Paris"),
         try Resident.byAge.count(in: ctx, age: .greaterThan(20)),
         try Resident.byAge.query(age: 30).select(in: ctx) + Resident.select(in: ctx, city: "Paris", id: .lessThan(5)),
         try Resident.byEmail.fetch(in: ctx, email: "a@x"))
    }
}
