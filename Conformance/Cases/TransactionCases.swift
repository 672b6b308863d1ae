import Foundation
import StrataEngine

struct Abort: Error, Equatable {}

/// Transactions: atomicity, read-your-writes, snapshots, serialized writers, nesting.
enum TransactionCases {
    static let all: [ConformanceCase] = atomicity + readYourWrites + snapshots + concurrency + misuse

    static let base: [([UInt8], [UInt8])] = [(b("b"), b("1")), (b("d"), b("2")), (b("f"), b("3")), (b("h"), b("4"))]

    static let atomicity: [ConformanceCase] = [
        ConformanceCase("transaction", "a thrown error rolls back every put") { ctx in
            let store = try ctx.store(with: base)
            do {
                try store.write { tx in
                    try tx.put(b("x"), forKey: b("c"))
                    try tx.put(b("x"), forKey: b("d"))
                    throw Abort()
                }
                throw ConformanceFailure("the write did not rethrow the body's error")
            } catch is Abort {}
            try store.read { tx in try expectEqual(try tx.collect(), base.map { Pair($0.0, $0.1) }, "pairs") }
        },
        ConformanceCase("transaction", "a thrown error rolls back deletes") { ctx in
            let store = try ctx.store(with: base)
            _ = try? store.write { tx in
                try tx.delete(b("b"))
                try tx.delete(b("h"))
                throw Abort()
            }
            try store.read { tx in try expectEqual(try tx.keys(), base.map(\.0), "keys") }
        },
        ConformanceCase("transaction", "the body's own error is rethrown unchanged") { ctx in
            let store = try ctx.open()
            do {
                try store.write { _ in throw Abort() }
            } catch let error as Abort {
                try expectEqual(error, Abort(), "error")
                return
            }
            throw ConformanceFailure("no error came out of the write")
        },
        ConformanceCase("transaction", "a failure in the middle commits nothing") { ctx in
            let store = try ctx.store(with: base)
            do {
                try store.write { tx in
                    for i in 0..<100 { try tx.put([UInt8(i)], forKey: b("m") + [UInt8(i)]) }
                    try tx.put(b("v"), forKey: [UInt8](repeating: 0x6D, count: 600))  // refused: too large
                    try tx.put(b("never"), forKey: b("z"))
                }
                throw ConformanceFailure("the oversized key was accepted")
            } catch EngineError.keyTooLarge {}
            try store.read { tx in try expectEqual(try tx.keys(), base.map(\.0), "keys after the failed transaction") }
        },
        ConformanceCase("transaction", "write and read return the body's value") { ctx in
            let store = try ctx.open()
            try expectEqual(try store.write { tx in try tx.put(b("1"), forKey: b("a")); return 41 }, 41, "write's result")
            try expectEqual(try store.read { tx in try tx.get(b("a")) }, b("1"), "read's result")
        },
        ConformanceCase("transaction", "an empty write transaction commits") { ctx in
            let store = try ctx.store(with: base)
            try store.write { _ in }
            try store.read { tx in try expectEqual(try tx.keys().count, base.count, "key count") }
        },
        ConformanceCase("transaction", "10,000 writes commit together") { ctx in
            let store = try ctx.open()
            try store.write { tx in for i in 0..<10_000 { try tx.put([], forKey: [UInt8](counter: UInt64(i))) } }
            try store.read { tx in try expectEqual(try tx.keys().count, 10_000, "key count") }
        },
    ]

    static let readYourWrites: [ConformanceCase] = [
        ConformanceCase("transaction", "get sees the transaction's own puts and deletes") { ctx in
            let store = try ctx.store(with: base)
            try store.write { tx in
                try tx.put(b("new"), forKey: b("c"))
                try tx.put(b("over"), forKey: b("d"))
                try tx.delete(b("f"))
                try expectEqual(try tx.get(b("c")), b("new"), "get(c)")
                try expectEqual(try tx.get(b("d")), b("over"), "get(d)")
                try expectEqual(try tx.get(b("f")), nil, "get(f)")
                try expectEqual(try tx.exists(b("f")), false, "exists(f)")
                try expectEqual(try tx.get(b("h")), b("4"), "get(h)")
            }
        },
    ] + [false, true].flatMap { reverse in
        [
            ConformanceCase("transaction", "scans see inserts between keys and deletes of existing keys" + (reverse ? ", reverse" : "")) { ctx in
                let store = try ctx.store(with: base)
                try store.write { tx in
                    try tx.put(b("c!"), forKey: b("c"))
                    try tx.put(b("a!"), forKey: b("a"))
                    try tx.put(b("z!"), forKey: b("z"))
                    try tx.delete(b("d"))
                    try tx.delete(b("h"))
                    try tx.put(b("f!"), forKey: b("f"))
                    let expected = [Pair(b("a"), b("a!")), Pair(b("b"), b("1")), Pair(b("c"), b("c!")), Pair(b("f"), b("f!")), Pair(b("z"), b("z!"))]
                    try expectEqual(try tx.collect(reverse: reverse), reverse ? expected.reversed() : expected, "pairs")
                }
            },
            ConformanceCase("transaction", "bounded scans with limits see the transaction's writes" + (reverse ? ", reverse" : "")) { ctx in
                let store = try ctx.store(with: base)
                try store.write { tx in
                    try tx.put([], forKey: b("e"))
                    try tx.delete(b("f"))
                    try tx.put([], forKey: b("g"))
                    let range = KeyRange(lower: .exclusive(b("b")), upper: .exclusive(b("h")))
                    let all = [b("d"), b("e"), b("g")]
                    try expectEqual(try tx.keys(range, reverse: reverse), reverse ? all.reversed() : all, "keys")
                    try expectEqual(try tx.keys(range, reverse: reverse, limit: 2), Array((reverse ? all.reversed() : all).prefix(2)), "keys, limit 2")
                }
            },
            ConformanceCase("transaction", "a put then delete of a new key leaves it out of scans" + (reverse ? ", reverse" : "")) { ctx in
                let store = try ctx.store(with: base)
                try store.write { tx in
                    try tx.put([], forKey: b("c"))
                    try tx.delete(b("c"))
                    try expectEqual(try tx.keys(reverse: reverse), reverse ? base.map(\.0).reversed() : base.map(\.0), "keys")
                }
            },
        ]
    } + [
        ConformanceCase("transaction", "delete then put of a key keeps the new value after commit") { ctx in
            let store = try ctx.store(with: base)
            try store.write { tx in
                try tx.delete(b("d"))
                try tx.put(b("again"), forKey: b("d"))
            }
            try store.read { tx in try expectEqual(try tx.get(b("d")), b("again"), "get(d)") }
        },
        ConformanceCase("transaction", "put then delete of a key leaves it absent after commit") { ctx in
            let store = try ctx.store(with: base)
            try store.write { tx in
                try tx.put(b("x"), forKey: b("q"))
                try tx.delete(b("q"))
                try tx.delete(b("b"))
            }
            try store.read { tx in try expectEqual(try tx.keys(), [b("d"), b("f"), b("h")], "keys") }
        },
    ]

    typealias Change = @Sendable (any KeyValueWriter) throws -> Void
    static let changes: [(String, Change)] = [
        ("a later commit's insert", { tx in try tx.put(b("new"), forKey: b("c")) }),
        ("a later commit's delete", { tx in try tx.delete(b("d")) }),
        ("a later commit's overwrite", { tx in try tx.put(b("changed"), forKey: b("f")) }),
        ("a later commit's clear", { tx in try tx.clear(.all) }),
    ]
    static let snapshots: [ConformanceCase] = changes.map { (name: String, change: @escaping Change) in
        ConformanceCase("transaction", "a reader's snapshot ignores \(name)") { ctx in
            let store: SharedEngine = try ctx.store(with: base)
            let started = Signal(), committed = Signal()
            let writer = BackgroundThread {
                try started.wait()
                defer { committed.fire() }
                try store.write { tx in try change(tx) }
            }
            try store.read { tx in
                let before = try tx.collect()
                started.fire()
                try committed.wait()
                try expectEqual(try tx.collect(), before, "scan after the commit")
                try expectEqual(try tx.collect(reverse: true), before.reversed(), "reverse scan after the commit")
                for (k, v) in base { try expectEqual(try tx.get(k), v, "get(\(hex(k))) after the commit") }
            }
            try writer.join()
        }
    } + [
        ConformanceCase("transaction", "a reader that first reads after a commit still sees the state at its start") { ctx in
            let store: SharedEngine = try ctx.store(with: base)
            let started = Signal(), committed = Signal()
            let writer = BackgroundThread {
                try started.wait()
                defer { committed.fire() }
                try store.write { tx in
                    try tx.put(b("new"), forKey: b("c"))
                    try tx.delete(b("b"))
                }
            }
            try store.read { tx in
                started.fire()  // no read yet
                try committed.wait()
                try expectEqual(try tx.get(b("c")), nil, "get(c), first read after the commit")
                try expectEqual(try tx.keys(), base.map(\.0), "keys")
            }
            try writer.join()
            try store.read { tx in try expectEqual(try tx.get(b("c")), b("new"), "get(c) in a new reader") }
        },
        ConformanceCase("transaction", "a writer sees every earlier commit") { ctx in
            let store = try ctx.store(with: base)
            for i in 0..<20 {
                try store.write { tx in
                    try expectEqual(try tx.keys().count, base.count + i, "keys seen by writer \(i)")
                    try tx.put([], forKey: b("n") + [UInt8(i)])
                }
            }
        },
    ]

    static let concurrency: [ConformanceCase] = [
        ConformanceCase("transaction", "8 async tasks' read-modify-write increments are exact") { ctx in
            let store: SharedEngine = try ctx.open()
            let tasks = 8, increments = 50
            try blockingAwait {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<tasks {
                        group.addTask {
                            for _ in 0..<increments {
                                try await store.write { tx in
                                    let value = try tx.get(b("counter"))?.counter ?? 0
                                    try tx.put([UInt8](counter: value + 1), forKey: b("counter"))
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let final = try store.read { tx in try tx.get(b("counter"))?.counter }
            try expectEqual(final, UInt64(tasks * increments), "counter")
        },
        ConformanceCase("transaction", "8 threads' read-modify-write increments are exact") { ctx in
            let store: SharedEngine = try ctx.open()
            let threads = (0..<8).map { _ in
                BackgroundThread {
                    for _ in 0..<50 {
                        try store.write { tx in
                            let value = try tx.get(b("counter"))?.counter ?? 0
                            try tx.put([UInt8](counter: value + 1), forKey: b("counter"))
                        }
                    }
                }
            }
            for thread in threads { try thread.join() }
            try expectEqual(try store.read { tx in try tx.get(b("counter"))?.counter }, 400, "counter")
        },
        ConformanceCase("transaction", "a second writer waits for the first instead of failing") { ctx in
            let store: SharedEngine = try ctx.open()
            let firstIn = Signal(), release = Signal()
            let secondDone = Flag()
            let first = BackgroundThread {
                try store.write { tx in
                    try tx.put(b("1"), forKey: b("first"))
                    firstIn.fire()
                    try release.wait()
                }
            }
            try firstIn.wait()
            let second = BackgroundThread {
                try store.write { tx in
                    try expectEqual(try tx.get(b("first")), b("1"), "the second writer sees the first's commit")
                    try tx.put(b("2"), forKey: b("second"))
                }
                secondDone.set()
            }
            Thread.sleep(forTimeInterval: 0.1)
            try expectEqual(secondDone.isSet, false, "the second writer finished while the first held the slot")
            release.fire()
            try first.join()
            try second.join()
            try store.read { tx in try expectEqual(try tx.keys(), [b("first"), b("second")], "keys") }
        },
        ConformanceCase("transaction", "readers run while a writer holds the write slot") { ctx in
            let store: SharedEngine = try ctx.store(with: base)
            let writerIn = Signal(), release = Signal()
            let writer = BackgroundThread {
                try store.write { tx in
                    try tx.put([], forKey: b("pending"))
                    writerIn.fire()
                    try release.wait()
                }
            }
            try writerIn.wait()
            let reader = BackgroundThread {
                try store.read { tx in try expectEqual(try tx.get(b("pending")), nil, "uncommitted write seen") }
            }
            let readerFinished = BackgroundThread { try reader.join() }
            // The reader must finish while the writer still holds the slot.
            try readerFinished.join()
            release.fire()
            try writer.join()
        },
        ConformanceCase("transaction", "async reads and writes from many tasks") { ctx in
            let store: SharedEngine = try ctx.open()
            let total = try blockingAwait {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for i in 0..<16 {
                        group.addTask {
                            try await store.write { tx in try tx.put([UInt8(i)], forKey: b("k") + [UInt8(i)]) }
                            return try await store.read { tx in try tx.keys(.prefix(b("k"))).count }
                        }
                    }
                    return try await group.reduce(0, +)
                }
            }
            try expectTrue(total >= 16, "each task saw at least its own key")
            try expectEqual(try store.read { tx in try tx.keys().count }, 16, "key count")
        },
    ]

    static let misuse: [ConformanceCase] = [
        ConformanceCase("transaction", "a put inside a scan visitor is refused and the scan goes on") { ctx in
            let store = try ctx.store(with: base)
            var visited = 0
            try store.write { tx in
                try tx.scan(.all, reverse: false, limit: nil) { _, _ in
                    visited += 1
                    try expectError(.writeWhileReading, "put during scan") { try tx.put(b("x"), forKey: b("c")) }
                    try expectError(.writeWhileReading, "delete during scan") { try tx.delete(b("d")) }
                    try expectError(.writeWhileReading, "clear during scan") { try tx.clear(.all) }
                    return true
                }
                try tx.put(b("after"), forKey: b("c"))
            }
            try expectEqual(visited, base.count, "keys visited")
            try store.read { tx in try expectEqual(try tx.keys(), [b("b"), b("c"), b("d"), b("f"), b("h")], "keys") }
        },
        ConformanceCase("transaction", "a put inside a withValue body is refused") { ctx in
            let store = try ctx.store(with: base)
            try store.write { tx in
                try [UInt8](b("b")).withUnsafeBytes { key in
                    try tx.withValue(forKey: key) { _ in
                        try expectError(.writeWhileReading, "put inside withValue") { try tx.put(b("x"), forKey: b("b")) }
                    }
                }
            }
            try store.read { tx in try expectEqual(try tx.get(b("b")), b("1"), "get(b)") }
        },
        ConformanceCase("transaction", "a put inside a withValue body for a missing key is refused") { ctx in
            let store = try ctx.store(with: base)
            try store.write { tx in
                try [UInt8](b("missing")).withUnsafeBytes { key in
                    try tx.withValue(forKey: key) { value in
                        try expectEqual(value == nil, true, "the key is missing")
                        try expectError(.writeWhileReading, "put inside withValue(nil)") { try tx.put(b("x"), forKey: b("missing")) }
                    }
                }
            }
            try store.read { tx in try expectEqual(try tx.get(b("missing")), nil, "get(missing)") }
        },
        ConformanceCase("transaction", "reads inside a scan visitor work") { ctx in
            let store = try ctx.store(with: base)
            var values: [[UInt8]] = []
            try store.read { tx in
                try tx.scan(.all, reverse: false, limit: nil) { key, _ in
                    values.append(try tx.get(Array(key)) ?? [])
                    values.append(contentsOf: try tx.keys(KeyRange(lower: .exclusive(Array(key))), limit: 1))
                    return true
                }
            }
            try expectEqual(values, [b("1"), b("d"), b("2"), b("f"), b("3"), b("h"), b("4")], "values read inside the visitor")
        },
        ConformanceCase("transaction", "a read inside a read on the same store is refused") { ctx in
            let store = try ctx.open()
            try store.read { _ in try expectError(.nestedTransaction, "nested read") { try store.read { _ in } } }
        },
        ConformanceCase("transaction", "a write inside a write on the same store is refused") { ctx in
            let store = try ctx.open()
            try store.write { tx in
                try tx.put(b("1"), forKey: b("outer"))
                try expectError(.nestedTransaction, "nested write") { try store.write { _ in } }
            }
            try store.read { tx in try expectEqual(try tx.get(b("outer")), b("1"), "the outer write committed") }
        },
        ConformanceCase("transaction", "a read inside a write and a write inside a read are refused") { ctx in
            let store = try ctx.open()
            try store.write { _ in try expectError(.nestedTransaction, "read in write") { try store.read { _ in } } }
            try store.read { _ in try expectError(.nestedTransaction, "write in read") { try store.write { _ in } } }
        },
        ConformanceCase("transaction", "close inside a transaction is refused") { ctx in
            let store = try ctx.open()
            try store.read { _ in try expectError(.nestedTransaction, "close in read") { try store.close() } }
            try store.write { tx in try tx.put([], forKey: b("still open")) }
        },
        ConformanceCase("transaction", "a transaction used after its closure is refused") { ctx in
            let store = try ctx.store(with: base)
            let reader = try store.read { $0 }
            try expectError(.transactionEnded, "get after the read ended") { try reader.get(b("b")) }
            try expectError(.transactionEnded, "scan after the read ended") { try reader.keys() }
            let writer = try store.write { $0 }
            try expectError(.transactionEnded, "put after the write ended") { try writer.put([], forKey: b("late")) }
            try store.read { tx in try expectEqual(try tx.get(b("late")), nil, "get(late)") }
        },
    ]
}
