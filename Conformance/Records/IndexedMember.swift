import StrataKeyCodec
import StrataRecords

/// The record the index cases store: one index of every kind (unique on a plain and on an
/// optional field, composite, multi-valued, covering). Written by hand: the kit builds without
/// the macro.
struct IndexedMember: Record, Equatable, Sendable {
    var id: Int
    var email: String
    var nickname: String?
    var city: String
    var age: Int
    var tags: [String]

    static let recordType = RecordType(
        keyspace: "IndexedMember", key: [("id", Int.self)],
        fields: [("email", String.fieldFormat), ("nickname", String?.fieldFormat), ("city", String.fieldFormat),
                 ("age", Int.fieldFormat), ("tags", [String].fieldFormat)])
    static let byEmail = RecordIndex<IndexedMember>("byEmail", .field("email", \.email), unique: true)
    static let byNickname = RecordIndex<IndexedMember>("byNickname", .field("nickname", \.nickname), unique: true)
    static let byCityAge = RecordIndex<IndexedMember>("byCityAge", .field("city", \.city), .field("age", \.age))
    static let byTag = RecordIndex<IndexedMember>("byTag", .each("tags", \.tags))
    static let byAgeCovering = RecordIndex<IndexedMember>("byAgeCovering", .field("age", \.age), covering: true)
    static let indexes = [byEmail, byNickname, byCityAge, byTag, byAgeCovering]

    init(id: Int, email: String, nickname: String? = nil, city: String, age: Int, tags: [String] = []) {
        (self.id, self.email, self.nickname, self.city, self.age, self.tags) = (id, email, nickname, city, age, tags)
    }

    func writeKey(to key: inout KeyWriter) { key.append(id) }

    func writeFields(to fields: inout FieldWriter) {
        fields.write(email)
        fields.write(nickname)
        fields.write(city)
        fields.write(age)
        fields.write(tags)
    }

    init(key: inout KeyReader, fields: inout FieldReader) throws {
        id = try key.read()
        email = try fields.read()
        nickname = try fields.read()
        city = try fields.read()
        age = try fields.read()
        tags = try fields.read()
    }

    /// The key of the record with `id`, for typed fetches and deletes.
    static func key(_ id: Int) -> EncodedIndexKey { EncodedIndexKey(bytes: KeyCodec.encode(id)) }

    /// Five members with every kind of value: shared cities, duplicate tags, no tags, `nil` nicknames.
    static let cast = [
        IndexedMember(id: 1, email: "korben@taxi.nyc", nickname: "Major", city: "New York", age: 45, tags: ["pilot", "taxi"]),
        IndexedMember(id: 2, email: "leeloo@fhloston.space", city: "New York", age: 25, tags: ["supreme", "being", "supreme"]),
        IndexedMember(id: 3, email: "ruby@rhod.fm", nickname: "Ruby", city: "Fhloston", age: 30, tags: ["radio"]),
        IndexedMember(id: 4, email: "zorg@zorg.corp", city: "Paris", age: 50),
        IndexedMember(id: 5, email: "vito@temple.org", city: "Paris", age: 65, tags: ["priest", "taxi"]),
    ]
}

/// The same keyspace before it had indexes (one Swift type per keyspace and store).
struct UnindexedMember: Record {
    var member: IndexedMember
    static let recordType = IndexedMember.recordType
    init(_ member: IndexedMember) { self.member = member }
    func writeKey(to key: inout KeyWriter) { member.writeKey(to: &key) }
    func writeFields(to fields: inout FieldWriter) { member.writeFields(to: &fields) }
    init(key: inout KeyReader, fields: inout FieldReader) throws { member = try IndexedMember(key: &key, fields: &fields) }
}
