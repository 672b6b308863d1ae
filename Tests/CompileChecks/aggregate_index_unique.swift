// expect: index 'perCity' keeps totals: it can be neither unique nor covering
import Strata

@IndexKeyRecord("id")
@Index("perCity", "city", unique: true, aggregate: .count)
struct Town {
    let id: Int
    var city: String
}
