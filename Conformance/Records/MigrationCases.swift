import Foundation
import StrataConformance
import StrataEngine
import StrataKeyCodec
import StrataRecords

/// A profile of the cases below: key `id`, one field `theme` stored as JSON; each version or
/// build is a type of its own on keyspace "Profile" and says only its version and theme type.
protocol Profile: Record {
    associatedtype Theme: Codable
    var id: Int { get }
    var theme: Theme { get }
    init(id: Int, theme: Theme)
}

extension Profile {
    func writeKey(to key: inout KeyWriter) { key.append(id) }
    func writeFields(to fields: inout FieldWriter) { fields.writeJSON(theme) }
    init(key: inout KeyReader, fields: inout FieldReader) throws {
        let id: Int = try key.read()
        self.init(id: id, theme: try fields.readJSON())
    }
    /// The record type of version `version`, or of the derived version when `nil`.
    static func profileType(version: UInt32?) -> RecordType {
        RecordType(keyspace: "Profile", version: version, key: [("id", Int.self)], fields: [("theme", .json)])
    }
}

/// A profile as it shipped: its theme, a `Codable` type, stored as one JSON field, version 1.
struct ProfileV1: Profile {
    struct Theme: Codable { var color: String }
    var id: Int
    var theme: Theme
    static let recordType = profileType(version: 1)
}

/// The profile now: the theme type changed inside the JSON field, so the field list (`theme:
/// json`) did not, and the version was bumped to 2; it migrates version 1.
struct ProfileV2: Profile, Equatable {
    struct Theme: Codable, Equatable { var foreground: String; var background: String }
    var id: Int
    var theme: Theme
    static let recordType = profileType(version: 2)
    static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> ProfileV2? {
        guard version == 1 else { return nil }
        return migrated(try ProfileV1(key: &key, fields: &fields))
    }
    static func migrated(_ old: ProfileV1) -> ProfileV2 { ProfileV2(id: old.id, theme: Theme(foreground: old.theme.color, background: "white")) }
}

/// A later build again: version 3, the same field list, and a migration from version 2 only.
struct ProfileV3: Profile {
    var id: Int
    var theme: ProfileV2.Theme
    static let recordType = profileType(version: 3)
    static func migrate(fromVersion version: UInt32, key: inout KeyReader, fields: inout FieldReader) throws -> ProfileV3? {
        guard version == 2 else { return nil }
        return try ProfileV3(key: &key, fields: &fields)
    }
}

/// Version 1 of another program's profile, whose theme is a JSON string.
struct ProfileV1Plain: Profile {
    var id: Int
    var theme: String
    static let recordType = profileType(version: 1)
}

/// That profile declared with no explicit version: derived from its key and fields.
struct ProfileDerived: Profile, Equatable {
    var id: Int
    var theme: String
    static let recordType = profileType(version: nil)
}

/// Schema versions (EvolvingASchema.md): an explicit version bump always reaches `migrate`, on
/// read and through `prepare`, even when the field list stayed the same (a type inside a JSON
/// field changed); a version the type cannot convert is a typed error naming both versions.
/// Reopening is what a new build of a program does, so these need a persistent engine.
enum MigrationCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("migration", "an explicit version bump with the same field list migrates every old record: on read, then through prepare; a version the type cannot convert is versionMismatch naming both", requires: .persistent) { ctx in
            let old = (0..<40).map { ProfileV1(id: $0, theme: .init(color: "c\($0)")) }
            let first = try ctx.recordStore()
            try first.withTransaction { tx in for profile in old { try tx.insert(profile) } }
            try first.close()

            let expected = old.map(ProfileV2.migrated)
            let second = try ctx.recordStore()
            let read = try second.withReadTransaction { tx in try Query<ProfileV2>().select(in: tx) }
            try expectSameList(read, expected, "version-1 records read as version 2 (each through migrate)")
            try expectEqual(try second.withReadTransaction { tx in try tx.fetch(ProfileV2.self, key: EncodedIndexKey(bytes: KeyCodec.encode(7))) },
                            expected[7], "one version-1 record fetched by key")
            // A version the type cannot convert is refused by name, before and after prepare.
            try second.close()
            let third = try ctx.recordStore()
            try expectRecordError(.versionMismatch(type: "ProfileV3", stored: 1, current: 3), "version 3 reading version 1") {
                try third.withReadTransaction { tx in try Query<ProfileV3>().select(in: tx) }
            }
            try third.close()

            // prepare rewrites every version-1 record as version 2: version 3 then reads them all.
            let fourth = try ctx.recordStore()
            let report = try fourth.prepare(ProfileV2.self).wait()
            try expectEqual(report.migrated, old.count, "records prepare migrated")
            try expectEqual(report.unconvertible, 0, "records prepare could not convert")
            try expectSameList(try fourth.withReadTransaction { tx in try Query<ProfileV2>().select(in: tx) }, expected, "records after prepare")
            try fourth.close()
            let fifth = try ctx.recordStore()
            try expectEqual(try fifth.withReadTransaction { tx in try Query<ProfileV3>().select(in: tx) }.count, old.count,
                            "version 3 (migrating version 2 only) reads every record once prepare rewrote them")
        },

        ConformanceCase("migration", "a derived version reads a stored version with exactly its field list as current", requires: .persistent) { ctx in
            let first = try ctx.recordStore()
            try first.withTransaction { tx in try tx.insert(ProfileV1Plain(id: 1, theme: "plain")) }
            try first.close()
            try expectTrue(ProfileDerived.recordType.version != 1, "the derived version differs from 1")
            let second = try ctx.recordStore()
            let read = try second.withReadTransaction { tx in try Query<ProfileDerived>().select(in: tx) }
            try expectEqual(read, [ProfileDerived(id: 1, theme: "plain")], "a version-1 record read by the derived declaration")
        },
    ]
}
