import Foundation
import StrataRecords
import StrataBundledEngines
import StrataEtcd
import StrataEtcdCluster
import StrataEngine
import StrataKeyCodec

/// A hand-written record with a two-component key, as the README shows.
struct Person: Record, Equatable {
    var lastName: String
    var firstName: String
    var age: Int
    var email: String?

    static let recordType = RecordType(keyspace: "Person", version: 1, key: [("lastName", String.self), ("firstName", String.self)])

    func writeKey(to key: inout KeyWriter) {
        key.append(lastName)
        key.append(firstName)
    }

    func writeFields(to fields: inout FieldWriter) {
        fields.write(age)
        fields.write(email)
    }

    init(lastName: String, firstName: String, age: Int, email: String? = nil) {
        self.lastName = lastName
        self.firstName = firstName
        self.age = age
        self.email = email
    }

    init(key: inout KeyReader, fields: inout FieldReader) throws {
        lastName = try key.read()
        firstName = try key.read()
        age = try fields.read()
        email = try fields.read()
    }
}

/// A record keyed by (sensor, time), with fields of many kinds.
struct Reading: Record, Equatable {
    enum Unit: String, FieldValue, Codable { case celsius, kelvin }
    struct Calibration: Codable, Equatable { var offset: Double; var note: String }

    var sensor: Int
    var time: Date
    var value: Double
    var unit: Unit
    var tags: [String]
    var flags: Set<Int>
    var extra: [String: Int]
    var id: UUID
    var source: URL?
    var calibration: Calibration
    var payload: Data

    /// Fields described to the catalog, so tools decode every format without this type.
    static let recordType = RecordType(
        keyspace: "Reading", version: 1, key: [("sensor", Int.self), ("time", Date.self)],
        fields: [("value", Double.fieldFormat), ("unit", Unit.fieldFormat), ("tags", [String].fieldFormat), ("flags", Set<Int>.fieldFormat),
                 ("extra", [String: Int].fieldFormat), ("id", UUID.fieldFormat), ("source", URL?.fieldFormat), ("calibration", .json),
                 ("payload", Data.fieldFormat)])

    func writeKey(to key: inout KeyWriter) {
        key.append(sensor)
        key.append(time)
    }

    func writeFields(to fields: inout FieldWriter) {
        fields.write(value)
        fields.write(unit)
        fields.write(tags)
        fields.write(flags)
        fields.write(extra)
        fields.write(id)
        fields.write(source)
        fields.writeJSON(calibration)
        fields.write(payload)
    }

    init(sensor: Int, time: Date, value: Double, unit: Unit = .celsius, tags: [String] = [], flags: Set<Int> = [], extra: [String: Int] = [:],
         id: UUID = UUID(), source: URL? = nil, calibration: Calibration = .init(offset: 0, note: ""), payload: Data = Data()) {
        (self.sensor, self.time, self.value, self.unit, self.tags, self.flags) = (sensor, time, value, unit, tags, flags)
        (self.extra, self.id, self.source, self.calibration, self.payload) = (extra, id, source, calibration, payload)
    }

    init(key: inout KeyReader, fields: inout FieldReader) throws {
        sensor = try key.read()
        time = try key.read()
        value = try fields.read()
        unit = try fields.read()
        tags = try fields.read()
        flags = try fields.read()
        extra = try fields.read()
        id = try fields.read()
        source = try fields.read()
        calibration = try fields.readJSON()
        payload = try fields.read()
    }
}

/// A fresh temporary directory; `cleanup()` removes it.
struct TemporaryDirectory {
    let path: String
    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-records-\(UUID().uuidString)").path
    }
    func cleanup() { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs `body` with a fresh store of `kind`, closed and removed afterwards.
func withStore<R>(_ kind: EngineKind, _ body: (Store, String) throws -> R) throws -> R {
    let dir = TemporaryDirectory()
    defer { dir.cleanup() }
    let store = try Store(kind.configuration(path: dir.path))
    defer { try? store.close() }
    return try body(store, dir.path)
}

/// ``withStore(_:_:)`` for an async body.
func withAsyncStore<R>(_ kind: EngineKind, _ body: (Store) async throws -> R) async throws -> R {
    let dir = TemporaryDirectory()
    defer { dir.cleanup() }
    let store = try Store(kind.configuration(path: dir.path))
    defer { try? store.close() }
    return try await body(store)
}

let people: [Person] = [
    Person(lastName: "Dallas", firstName: "Korben", age: 45),
    Person(lastName: "Dallas", firstName: "Leeloo", age: 25),
    Person(lastName: "Dallas", firstName: "Anna", age: 60),
    Person(lastName: "Dallas", firstName: "Zed", age: 70),
    Person(lastName: "Rhod", firstName: "Ruby", age: 30),
    Person(lastName: "Zorg", firstName: "Jean-Baptiste", age: 50),
    Person(lastName: "Cornelius", firstName: "Vito", age: 65),
    Person(lastName: "Dallas\u{0}", firstName: "Nul", age: 1),
]

/// The engines the record-layer tests run on: every bundled engine, and etcd on a one-member
/// cluster on loopback that the first test needing it starts (its members are stopped by PID when
/// the test process exits, also when a test fails). These tests are about the record layer, so the
/// cluster is the cheapest that keeps etcd's semantics: one member (replication is the conformance
/// run's and the fault tests', on 3 members; each commit on 3 costs a second round of Raft) and
/// cleartext (the tests open hundreds of stores, each a TLS handshake through BoringSSL built
/// unoptimized in a debug build: 67 s of the suite's 345; TLS is the etcd suites' and the
/// conformance run's, whose clusters speak mutual TLS).
enum TestEngines {
    static let all: [EngineKind] = BundledEngines.all + [etcd]

    static let cluster = try! LocalCluster(members: 1, flags: ["--max-txn-ops=20000", "--max-request-bytes=67108864"], tls: nil)

    /// The writer lock's lease. These tests are not about its expiry (the etcd suites are), and under
    /// ThreadSanitizer on a loaded machine the thread renewing it can starve past 5 s: a commit then
    /// fails with `mustRetry`, as documented, but not because of the code under test.
    static let leaseTTL = ProcessInfo.processInfo.environment["STRATA_SANITIZER"] == nil ? 5 : 30

    static var etcd: EngineKind {
        .etcd(EtcdOptions(endpoints: cluster.endpoints, leaseTTL: leaseTTL, maxTransactionOperations: 20_000, maxRequestBytes: 64 << 20))
    }
}
