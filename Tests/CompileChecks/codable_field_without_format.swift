// expect: this type is not a FieldValue: store the field as JSON with @Field(.json)
import Strata
struct Settings: Codable { var theme: String }

@IndexKeyRecord("id")
struct Profile {
    let id: Int
    var settings: Settings
}
