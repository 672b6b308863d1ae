import Foundation
import Strata

// The records in the committed v1 stores under Tests/Fixtures/StoreV1 (written by main at
// 71bcbd4, format 1). The declarations must stay as they were then: the default schema version
// of v1 hashed them as spelled (an `@Field` attribute is not part of that hash).

@IndexKeyRecord("lastName", "firstName", keyspace: "people")
struct FixturePerson: Equatable {
    let lastName: String
    let firstName: String
    var age: Int
    var email: String?
    var tags: [String]
    var score: Double
}

/// FixturePerson as a later version of the program might spell it: the same fields, so the same
/// format-2 version, but another format-1 hash.
@IndexKeyRecord("lastName", "firstName", keyspace: "people")
struct FixturePersonRespelled: Equatable {
    let lastName: Swift.String
    let firstName: String
    var age: Swift.Int
    var email: Optional<String>
    var tags: Array<String>
    var score: Double
}

struct FixturePayload: Codable, Equatable {
    var kind: String
    var weights: [Int]
}

@IndexKeyRecord("id", keyspace: "events")
struct FixtureEvent: Equatable {
    let id: Int
    var at: Date
    @Field(.json) var payload: FixturePayload  // format 1 chose JSON by overload; format 2 is told
    var blob: Data
}

@IndexKeyRecord("id", keyspace: "pinned", version: 7)
struct FixturePinned: Equatable {
    let id: UUID
    var note: String
}

/// The fixture's contents, computed the same way by the writer and the readers.
enum FormatV1Fixture {
    static let peopleCount = 2_500
    static let eventCount = 300
    static let pinnedCount = 20

    static func people() -> [FixturePerson] {
        (0..<peopleCount).map { (i: Int) -> FixturePerson in
            let email: String? = i % 3 == 0 ? nil : "p\(i)@example.com"
            let tags: [String] = (0..<(i % 4)).map { (t: Int) -> String in "t\(t)" }
            return FixturePerson(
                lastName: "last-\(i % 97)", firstName: "first-\(i)", age: i % 90, email: email, tags: tags,
                score: Double(i) / 7)
        }
    }

    static func events() -> [FixtureEvent] {
        (0..<eventCount).map { i in
            FixtureEvent(
                id: i * 3 - 100, at: Date(timeIntervalSinceReferenceDate: Double(i) * 3600.5),
                payload: FixturePayload(kind: i % 2 == 0 ? "even" : "odd", weights: [i, i * i]),
                blob: Data((0..<(i % 16)).map { (j: Int) -> UInt8 in UInt8(truncatingIfNeeded: j * 17) }))
        }
    }

    static func pinned() -> [FixturePinned] {
        (0..<pinnedCount).map { i in
            let uuid = UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", i))!
            return FixturePinned(id: uuid, note: "note \(i)")
        }
    }

    /// A key written through the engine, outside every record keyspace: the upgrade leaves it alone.
    static let rawKey = KeyCodec.encode("not-a-keyspace", 1)
    static let rawValue: [UInt8] = Array("raw bytes".utf8)
}
