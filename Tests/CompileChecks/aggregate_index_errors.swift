// expect: the sum's property 'name' must be a stored Int, Int8, Int16, Int32 or Int64
import Strata

@IndexKeyRecord("id")
@Index("perName", aggregate: .sum("name"))
struct Tally {
    let id: Int
    var name: String
}
