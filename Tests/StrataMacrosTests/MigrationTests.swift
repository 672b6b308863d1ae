import Foundation
import Strata
import Testing

/// Version 1 of a record: age as an Int.
@IndexKeyRecord("id", keyspace: "members")
struct MemberV1 {
    let id: Int
    var age: Int
}

/// Version 2: age became a Double and an email field was added; it migrates version-1 values.
@IndexKeyRecord("id", keyspace: "members")
struct MemberV2 {
    let id: Int
    var age: Double
    var email: String?

    static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> MemberV2? {
        guard MemberV1.recordType.isVersion(version) else { return nil }
        let old = try MemberV1(key: &key, fields: &fields)
        return MemberV2(id: old.id, age: Double(old.age), email: nil)
    }
}

/// Version 3 with no migration.
@IndexKeyRecord("id", keyspace: "members")
struct MemberV3 {
    let id: Int
    var birthYear: Int
}

/// Settings as they shipped, stored as JSON inside the record.
struct SettingsV1: Codable { var color: String }
/// The settings now: a change inside the JSON type, which no field list shows.
struct SettingsV2: Codable, Equatable { var foreground: String; var dark: Bool }

@IndexKeyRecord("id", keyspace: "accounts", version: 1)
struct AccountV1 {
    let id: Int
    @Field(.json) var settings: SettingsV1
}

/// The same field list (`settings: json`), a bumped version: every version-1 value reaches `migrate`.
@IndexKeyRecord("id", keyspace: "accounts", version: 2)
struct AccountV2 {
    let id: Int
    @Field(.json) var settings: SettingsV2

    static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> AccountV2? {
        guard version == 1 else { return nil }
        let old = try AccountV1(key: &key, fields: &fields)
        return AccountV2(id: old.id, settings: SettingsV2(foreground: old.settings.color, dark: false))
    }
}

@Suite("Migrations")
struct MigrationTests {
    @Test("a record written under an older version is migrated after close and reopen; without a migration the read fails naming both versions",
          arguments: [Engines.lmdb, .leveldb, .sqlite])
    func migrate(engine: Engines) throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var store = try engine.open(path)
        try store.withTransaction { ctx in
            try ctx.insert(MemberV1(id: 1, age: 40))
            try ctx.insert(MemberV1(id: 2, age: 41))
        }
        try store.close()

        store = try engine.open(path)
        let migrated = try store.withReadTransaction { ctx in try MemberV2.select(in: ctx, id: .greaterThanOrEqual(0)) }
        #expect(migrated.map(\.age) == [40.0, 41.0] && migrated.allSatisfy { $0.email == nil })
        // Rewrite one record under version 2; both versions then live side by side.
        try store.withTransaction { ctx in try ctx.insert(MemberV2(id: 2, age: 41.5, email: "b@example.com")) }
        try store.close()

        store = try engine.open(path)
        let mixed = try store.withReadTransaction { ctx in try MemberV2.select(in: ctx, order: .ascending, id: .lessThan(10)) }
        #expect(mixed.map(\.age) == [40.0, 41.5] && mixed.map(\.email) == [nil, "b@example.com"])
        try store.close()

        // Another build of the program, where the type moved to version 3 without a migration.
        store = try engine.open(path)
        #expect(throws: RecordError.versionMismatch(type: "MemberV3", stored: MemberV1.recordType.version, current: MemberV3.recordType.version)) {
            try store.withReadTransaction { ctx in try MemberV3.select(in: ctx, id: 1) }
        }
        try store.close()
        #expect(MemberV1.recordType.version != MemberV2.recordType.version)
    }

    @Test("a change inside a @Field(.json) type with a bumped version: every old record migrates, on read and by prepare (it read as current and failed as corruptRecord)",
          arguments: [Engines.lmdb, .leveldb, .sqlite])
    func jsonFieldChange(engine: Engines) throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var store = try engine.open(path)
        try store.withTransaction { ctx in for id in 0..<25 { try ctx.insert(AccountV1(id: id, settings: SettingsV1(color: "c\(id)"))) } }
        try store.close()
        #expect(AccountV1.recordType.fields == AccountV2.recordType.fields, "the test needs equal field lists")

        store = try engine.open(path)
        let expected = (0..<25).map { SettingsV2(foreground: "c\($0)", dark: false) }
        #expect(try store.withReadTransaction { ctx in try AccountV2.select(in: ctx, id: .greaterThanOrEqual(0)) }.map(\.settings) == expected)
        let report = try store.prepare(AccountV2.self).wait()
        #expect(report.migrated == 25 && report.unconvertible == 0)
        #expect(try store.withReadTransaction { ctx in try AccountV2.select(in: ctx, id: .greaterThanOrEqual(0)) }.map(\.settings) == expected)
        try store.close()
    }
}
