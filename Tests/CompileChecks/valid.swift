// expect: compiles
func queries(_ ctx: TransactionContext) throws {
    _ = try Person.select(in: ctx, lastName: "Dallas", firstName: .lessThan("L"))
    _ = try Person.select(in: ctx, lastName: "Dallas", firstName: "Korben")
    _ = try Person.select(in: ctx, lastName: .range("A"..<"M"), limit: 3, order: .descending)
    _ = try Person.select(in: ctx, lastName: "Dallas")
    _ = try Person.count(in: ctx, lastName: "Dallas", firstName: .oneOf(["A", "B"]))
    _ = try Person.delete(in: ctx, lastName: "Dallas", firstName: "Korben")
}
