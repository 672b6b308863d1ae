import Foundation
@testable import StrataConformance
import StrataEngine
import Testing

@Suite("Concurrency stress")
struct StressTests {
    static let accounts = 20
    static let start: UInt64 = 1_000

    static func key(_ i: Int) -> [UInt8] { [0x61, UInt8(i)] }
    static func balance(_ bytes: [UInt8]?) -> UInt64 { (bytes ?? []).reduce(0) { $0 << 8 | UInt64($1) } }
    static func bytes(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }

    /// Moves a random amount between two random accounts in one transaction.
    static func transfer(_ tx: any KeyValueWriter, _ random: inout SeededRandom) throws {
        let from = Int.random(in: 0..<accounts, using: &random), to = Int.random(in: 0..<accounts, using: &random)
        let a = balance(try tx.get(key(from)))
        let amount = UInt64.random(in: 0...min(a, 50), using: &random)
        try tx.put(bytes(a - amount), forKey: key(from))
        try tx.put(bytes(balance(try tx.get(key(to))) + amount), forKey: key(to))
    }

    /// The sum of all balances in one snapshot; the invariant is that it never changes.
    static func total(_ tx: any KeyValueReader) throws -> UInt64 {
        var sum: UInt64 = 0
        try tx.scan(.prefix([0x61]), reverse: false, limit: nil) { _, value in
            sum += balance(Array(value))
            return true
        }
        return sum
    }

    @Test("one writer moving value, four readers checking the total in every snapshot", arguments: Engines.onDisk)
    func transfersWithReaders(engine: EngineUnderTest) throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try engine.open(dir.path, EngineOptions(mode: .create, durability: .relaxed))
        try store.write { tx in for i in 0..<Self.accounts { try tx.put(Self.bytes(Self.start), forKey: Self.key(i)) } }
        let expected = UInt64(Self.accounts) * Self.start
        let done = Flag()
        let readers = (0..<4).map { r in
            BackgroundThread {
                var snapshots = 0
                while !done.isSet || snapshots == 0 {
                    let sum = try store.read { try Self.total($0) }
                    if sum != expected { throw ConformanceFailure("reader \(r) saw a total of \(sum), expected \(expected)") }
                    snapshots += 1
                }
            }
        }
        var random = SeededRandom(seed: 11)
        for _ in 0..<3_000 { try store.write { try Self.transfer($0, &random) } }
        done.set()
        for reader in readers { try reader.join() }
        let final: UInt64 = try store.read { tx in try Self.total(tx) }
        #expect(final == expected)
        try store.close()
    }

    @Test("32 tasks transferring at once: no spurious failure, no deadlock, the total holds", arguments: Engines.onDisk)
    func concurrentWriters(engine: EngineUnderTest) async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try engine.open(dir.path, EngineOptions(mode: .create, durability: .relaxed))
        try await store.write { tx in for i in 0..<Self.accounts { try tx.put(Self.bytes(Self.start), forKey: Self.key(i)) } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<32 {
                group.addTask {
                    for n in 0..<50 {
                        try await store.write { tx in
                            var random = SeededRandom(seed: UInt64(t * 1_000 + n))
                            try Self.transfer(tx, &random)
                        }
                        let sum = try await store.read { try Self.total($0) }
                        if sum != UInt64(Self.accounts) * Self.start { throw ConformanceFailure("a task saw a total of \(sum)") }
                    }
                }
            }
            try await group.waitForAll()
        }
        let final = try await store.read { tx in try Self.total(tx) }
        #expect(final == UInt64(Self.accounts) * Self.start)
        try store.close()
    }
}
