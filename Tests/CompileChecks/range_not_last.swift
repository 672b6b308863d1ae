// expect: only the last key component of a query may be a comparison
func queries(_ ctx: TransactionContext) throws {
    _ = try Person.select(in: ctx, lastName: .lessThan("D"), firstName: "Korben")
}
