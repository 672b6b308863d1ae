// expect: a query gives the key components in order without skipping any; add lastName first
func queries(_ ctx: TransactionContext) throws {
    _ = try Person.select(in: ctx, firstName: "Korben")
}
