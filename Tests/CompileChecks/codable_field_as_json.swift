// expect: compiles
struct Settings: Codable { var theme: String }

@IndexKeyRecord("id")
struct Profile {
    let id: Int
    @Field(.json) var settings: Settings
}
