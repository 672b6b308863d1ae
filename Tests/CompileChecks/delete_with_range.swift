// expect: error:
func queries(_ ctx: TransactionContext) throws {
    _ = try Person.delete(in: ctx, lastName: .lessThan("D"))
}
