// expect: compiles
func queries(_ ctx: TransactionContext) throws {
    _ = try Person.select(in: ctx, lastName: "Dallas", firstName: .lessThan("L"))
    _ = try Person.select(in: ctx, lastName: "Dallas", firstName: "Korben")
    _ = try Person.select(in: ctx, limit: 3, order: .descending, lastName: .range("A"..<"M"))
    _ = try Person.select(in: ctx, lastName: "Dallas")
    _ = try Person.count(in: ctx, lastName: "Dallas", firstName: .oneOf(["A", "B"]))
    _ = try Person.delete(in: ctx, lastName: "Dallas", firstName: "Korben")
}
