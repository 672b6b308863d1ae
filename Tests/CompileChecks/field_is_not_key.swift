// expect: error:
func queries(_ ctx: TransactionContext) throws {
    _ = try Person.select(in: ctx, lastName: "Dallas", firstName: "Korben", age: 45)
}
