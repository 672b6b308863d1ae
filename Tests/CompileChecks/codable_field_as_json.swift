// expect: compiles
import Strata
struct Settings: Codable { var theme: String }

@IndexKeyRecord("id")
struct Profile {
    let id: Int
    @Field(.json) var settings: Settings
}
