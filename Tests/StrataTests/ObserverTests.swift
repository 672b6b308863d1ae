import Foundation
import StrataBundledEngines
import StrataEngine
import StrataKeyCodec
@testable import StrataRecords
import Testing

/// Every commit an observer is told of, in order.
final class CommitRecorder: TransactionObserver, @unchecked Sendable {  // `commits` is guarded by `lock`
    private let lock = NSLock()
    private var commits: [[RecordChange]] = []
    func didCommit(_ changes: [RecordChange]) { lock.withLock { commits.append(changes) } }
    var all: [[RecordChange]] { lock.withLock { commits } }
}

@Suite("Transaction observers")
struct ObserverTests {
    private static func memberChange(_ id: Int, _ kind: RecordChange.Kind) -> RecordChange {
        RecordChange(keyspace: "Member", key: EncodedIndexKey(bytes: KeyCodec.encode(id)), kind: kind)
    }

    private static func personChange(_ key: [UInt8], _ kind: RecordChange.Kind) -> RecordChange {
        RecordChange(keyspace: "Person", key: EncodedIndexKey(bytes: key), kind: kind)
    }

    @Test("an observer sees exactly the committed changes of 1,000 random transactions (rollbacks included), in commit order, on an indexed and a plain type",
          arguments: TestEngines.all)
    func randomTransactions(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let log = CommitRecorder()
            try store.withTransaction { ctx in try ctx.insert(Member(id: 99, email: "before@x", city: "A", age: 1)) }  // before the observer: not seen
            store.add(observer: log)
            var random = SeededGenerator(seed: 0x0B5E)
            var members: Set<Int> = [99], persons: Set<[UInt8]> = []
            var expected: [[RecordChange]] = []
            for step in 0..<1_000 {
                struct Abort: Error {}
                let abort = Int.random(in: 0..<6, using: &random) == 0
                var (workingMembers, workingPersons) = (members, persons)
                var changes: [RecordChange] = []
                do {
                    try store.withTransaction { (ctx: TransactionContext) throws in
                        for _ in 0..<Int.random(in: 1...5, using: &random) {
                            let id = Int.random(in: 0..<40, using: &random)
                            let last = ["A", "B", "A\0"].randomElement(using: &random)!, first = "f\(Int.random(in: 0..<8, using: &random))"
                            let personKey = KeyCodec.encode(last, first)
                            switch Int.random(in: 0..<12, using: &random) {
                            case 0..<4:
                                try ctx.insert(Member(id: id, email: "m\(id).\(step)@x", city: ["A", "B"].randomElement(using: &random)!, age: id % 5))
                                changes.append(Self.memberChange(id, workingMembers.insert(id).inserted ? .insert : .update))
                            case 4..<6:
                                try ctx.insert(Person(lastName: last, firstName: first, age: step))
                                changes.append(Self.personChange(personKey, workingPersons.insert(personKey).inserted ? .insert : .update))
                            case 6:
                                #expect(try ctx.delete(Member.self, key: EncodedIndexKey(bytes: KeyCodec.encode(id))) == workingMembers.contains(id))
                                if workingMembers.remove(id) != nil { changes.append(Self.memberChange(id, .delete)) }
                            case 7:
                                #expect(try ctx.delete(Person(lastName: last, firstName: first, age: 0)) == workingPersons.contains(personKey))
                                if workingPersons.remove(personKey) != nil { changes.append(Self.personChange(personKey, .delete)) }
                            case 8:
                                let gone = workingMembers.filter { (id..<(id + 4)).contains($0) }.sorted()
                                #expect(try ctx.delete(Member.self, .all.then(Comparison.range(id..<(id + 4)))) == gone.count)
                                workingMembers.subtract(gone)
                                changes += gone.map { Self.memberChange($0, .delete) }
                            case 9:
                                let prefix = KeyCodec.encode(last)
                                let gone = workingPersons.filter { $0.starts(with: prefix) && $0[prefix.count] != 0xFF }.sorted { $0.lexicographicallyPrecedes($1) }
                                #expect(try ctx.delete(Person.self, .all.equal(last)) == gone.count)
                                workingPersons.subtract(gone)
                                changes += gone.map { Self.personChange($0, .delete) }
                            default:
                                _ = try ctx.insertIfAbsent(Person(lastName: last, firstName: first, age: -1))
                                if workingPersons.insert(personKey).inserted { changes.append(Self.personChange(personKey, .insert)) }
                            }
                        }
                        if abort { throw Abort() }
                    }
                    (members, persons) = (workingMembers, workingPersons)
                    if !changes.isEmpty { expected.append(changes) }
                } catch is Abort {}
            }
            let seen = log.all
            #expect(seen.count == expected.count, "\(kind): \(seen.count) commits told, \(expected.count) expected")
            for (i, (told, wanted)) in zip(seen, expected).enumerated() where told != wanted {
                Issue.record("\(kind): commit \(i): told \(told), expected \(wanted)")
                break
            }
            store.remove(observer: log)
            try store.withTransaction { ctx in try ctx.insert(Member(id: 98, email: "after@x", city: "A", age: 1)) }
            #expect(log.all.count == seen.count, "a removed observer is told nothing")
        }
    }

    @Test("a write that throws and is caught by the body changes nothing and is not told; what the body wrote is",
          arguments: TestEngines.all)
    func caughtFailures(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            try store.withTransaction { ctx in for name in ["a", "b"] { try ctx.insert(Person(lastName: "P", firstName: name, age: 1)) } }
            let log = CommitRecorder()
            store.add(observer: log)
            try store.withTransaction { (ctx: TransactionContext) throws in
                // Writes inside a scan's visitor are refused (writeWhileReading); the body goes on.
                try Person.forEach(in: ctx, .all) { _ in
                    #expect(throws: (any Error).self) { try ctx.insert(Person(lastName: "Q", firstName: "new", age: 2)) }
                    #expect(throws: (any Error).self) { try ctx.delete(Person.self, .all.equal("P")) }
                    #expect(throws: (any Error).self) { try ctx.insert(Member(id: 7, email: "x@x", city: "A", age: 1)) }
                    return true
                }
                try ctx.insert(Person(lastName: "R", firstName: "kept", age: 3))
            }
            #expect(try store.withReadTransaction { ctx in try Person.count(in: ctx) } == 3)
            #expect(log.all == [[Self.personChange(KeyCodec.encode("R", "kept"), .insert)]], "\(log.all)")
        }
    }

    @Test("concurrent writers: commits are told in commit order, each once", arguments: TestEngines.all)
    func commitOrder(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let log = CommitRecorder()
            store.add(observer: log)
            let writers = 4, each = 25
            let failures = NSLock()
            nonisolated(unsafe) var errors: [String] = []  // guarded by `failures`
            DispatchQueue.concurrentPerform(iterations: writers) { writer in
                for _ in 0..<each {
                    do {
                        // Each commit inserts the next number: commit order is number order.
                        try store.withTransaction { ctx in
                            let next = try Person.count(in: ctx, .all.equal("seq"))
                            try ctx.insert(Person(lastName: "seq", firstName: String(format: "%04d", next), age: writer))
                        }
                    } catch {
                        failures.withLock { errors.append("\(error)") }
                    }
                }
            }
            #expect(failures.withLock { errors.isEmpty }, "\(errors)")
            let told = log.all.map { $0.map(\.key.bytes) }
            let expected = (0..<(writers * each)).map { [KeyCodec.encode("seq", String(format: "%04d", $0))] }
            let firstWrong = zip(told, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(told.count == expected.count && firstWrong == nil,
                    "\(kind): \(told.count) commits told of \(expected.count); the first out of order: \(firstWrong.map(String.init) ?? "none")")
        }
    }

    /// Writes an audit record for each commit that changed a `Member`, from `didCommit`, and
    /// logs every commit it is told of.
    final class AuditingObserver: TransactionObserver, @unchecked Sendable {  // `commits` is guarded by `lock`
        private let lock = NSLock()
        private var commits: [[RecordChange]] = []
        weak var store: Store?
        var all: [[RecordChange]] { lock.withLock { commits } }
        func didCommit(_ changes: [RecordChange]) {
            lock.withLock { commits.append(changes) }
            guard let store, let member = changes.first(where: { $0.keyspace == "Member" }) else { return }
            try? store.withTransaction { ctx in
                try ctx.insert(Person(lastName: "audit", firstName: "\(member.key.bytes)", age: 0))
            }
        }
    }

    @Test("an observer may write to the same store from didCommit: no deadlock, its commit is told after the one that caused it",
          arguments: TestEngines.all)
    func observerWrites(kind: EngineKind) throws {
        try withStore(kind) { store, _ in
            let observer = AuditingObserver()
            observer.store = store
            store.add(observer: observer)
            for id in 0..<3 {
                try store.withTransaction { ctx in try ctx.insert(Member(id: id, email: "m\(id)@x", city: "A", age: 1)) }
            }
            let told = observer.all
            #expect(told.count == 6, "\(told)")
            for (i, commit) in told.enumerated() {
                #expect(commit.first?.keyspace == (i % 2 == 0 ? "Member" : "Person"), "commit \(i): \(commit)")
            }
            #expect(try store.withReadTransaction { ctx in try ctx.select(Person.self).count } == 3)
        }
    }
}
