import StrataEngine

/// Ranged delete: the range cases applied to `clear`, then scanned.
enum ClearCases {
    static let all: [ConformanceCase] = RangeCases.ranges.map { name, range in
        ConformanceCase("clear", name) { ctx in
            let fixture = RangeCases.fixture
            let store = try ctx.store(with: fixture.map { ($0, $0) })
            let removed = try store.write { tx in try tx.clear(range) }
            let survivors = fixture.filter { !referenceContains(range, $0) }.sorted(by: referenceLess)
            try expectEqual(removed, fixture.count - survivors.count, "clear's count")
            try store.read { tx in
                try expectEqual(try tx.keys(), survivors, "keys left")
                try expectEqual(try tx.keys(reverse: true), survivors.reversed(), "keys left, reverse")
            }
        }
    } + [
        ConformanceCase("clear", "prefix of all FF bytes") { ctx in
            let store = try ctx.store(with: RangeCases.prefixFixture.map { ($0, []) })
            let removed = try store.write { tx in try tx.clear(.prefix([0xFF, 0xFF])) }
            let survivors = RangeCases.prefixFixture.filter { !$0.starts(with: [0xFF, 0xFF]) }.sorted(by: referenceLess)
            try expectEqual(removed, RangeCases.prefixFixture.count - survivors.count, "clear's count")
            try store.read { tx in try expectEqual(try tx.keys(), survivors, "keys left") }
        },
        ConformanceCase("clear", "clearing everything leaves an empty store") { ctx in
            let store = try ctx.store(with: (0..<500).map { ([UInt8(($0 >> 8) + 1), UInt8($0 & 0xFF)], []) })
            try expectEqual(try store.write { tx in try tx.clear(.all) }, 500, "clear's count")
            try store.read { tx in try expectEqual(try tx.keys(), [], "keys left") }
        },
        ConformanceCase("clear", "clearing an empty store removes nothing") { ctx in
            let store = try ctx.open()
            try expectEqual(try store.write { tx in try tx.clear(.all) }, 0, "clear's count")
        },
        ConformanceCase("clear", "a cleared range is seen by the same transaction") { ctx in
            let store = try ctx.store(with: RangeCases.fixture.map { ($0, []) })
            try store.write { tx in
                try tx.clear(.closed(b("d"), b("h")))
                try expectEqual(try tx.get(b("f")), nil, "get(f) after clear")
                try expectEqual(try tx.keys(), [b("b"), b("ha"), b("j")], "keys after clear")
                try expectEqual(try tx.keys(reverse: true), [b("j"), b("ha"), b("b")], "reverse keys after clear")
            }
        },
        ConformanceCase("clear", "clear counts keys written earlier in the same transaction") { ctx in
            let store = try ctx.store(with: [(b("b"), []), (b("d"), [])])
            let removed = try store.write { tx in
                try tx.put([], forKey: b("c"))
                try tx.delete(b("d"))
                return try tx.clear(.closed(b("a"), b("z")))
            }
            try expectEqual(removed, 2, "clear's count (b and c; d was deleted)")
            try store.read { tx in try expectEqual(try tx.keys(), [], "keys left") }
        },
        ConformanceCase("clear", "puts after a clear in the same transaction survive") { ctx in
            let store = try ctx.store(with: RangeCases.fixture.map { ($0, []) })
            try store.write { tx in
                try tx.clear(.all)
                try tx.put(b("new"), forKey: b("d"))
            }
            try store.read { tx in try expectEqual(try tx.collect(), [Pair(b("d"), b("new"))], "pairs") }
        },
        ConformanceCase("clear", "a clear rolled back removes nothing") { ctx in
            let store = try ctx.store(with: RangeCases.fixture.map { ($0, []) })
            struct Abort: Error {}
            _ = try? store.write { tx in
                try tx.clear(.all)
                throw Abort()
            }
            try store.read { tx in try expectEqual(try tx.keys(), RangeCases.fixture.sorted(by: referenceLess), "keys") }
        },
    ]
}
