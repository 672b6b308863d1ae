// expect: compiles
// Twenty valid queries on a 4-component key: run.sh prints how long type-checking takes (#14
// asks for under 2 s; keep the generated overloads few enough for that).
import Foundation
import Strata

@IndexKeyRecord("region", "city", "year", "id")
struct Sale {
    let region: String
    let city: String
    let year: Int
    let id: UUID
    var amount: Double
}

func twentyQueries(_ ctx: TransactionContext, _ id: UUID) throws {
    _ = try Sale.select(in: ctx, region: "EU")
    _ = try Sale.select(in: ctx, region: .greaterThan("A"))
    _ = try Sale.select(in: ctx, limit: 5, region: .range("A"..<"M"))
    _ = try Sale.select(in: ctx, region: "EU", city: "Oslo")
    _ = try Sale.select(in: ctx, limit: 10, region: "EU", city: .lessThan("P"))
    _ = try Sale.select(in: ctx, order: .ascending, region: "EU", city: .lessThanOrEqual("P"))
    _ = try Sale.select(in: ctx, region: "EU", city: "Oslo", year: 2024)
    _ = try Sale.select(in: ctx, region: "EU", city: "Oslo", year: .greaterThanOrEqual(2020))
    _ = try Sale.select(in: ctx, limit: 1, order: .descending, region: "EU", city: "Oslo", year: .closedRange(2020...2024))
    _ = try Sale.select(in: ctx, region: "EU", city: "Oslo", year: 2024, id: id)
    _ = try Sale.select(in: ctx, region: "EU", city: "Oslo", year: 2024, id: .oneOf([id]))
    _ = try Sale.count(in: ctx, region: "EU")
    _ = try Sale.count(in: ctx, region: "EU", city: .greaterThan("B"))
    _ = try Sale.count(in: ctx, region: "EU", city: "Oslo", year: .lessThan(2000))
    _ = try Sale.count(in: ctx, region: "EU", city: "Oslo", year: 2024, id: id)
    _ = try Sale.delete(in: ctx, region: "EU", city: "Oslo")
    _ = try Sale.delete(in: ctx, region: "EU", city: "Oslo", year: 2024, id: id)
    _ = try Sale.fetch(in: ctx, region: "EU", city: "Oslo", year: 2024, id: id)
    _ = try Sale.exists(in: ctx, region: "EU", city: "Oslo", year: 2024, id: id)
    _ = try Sale.fetch(in: ctx, key: Sale.IndexKey(region: "EU", city: "Oslo", year: 2024, id: id))
}
