import StrataEngine

/// Ordering: unsigned bytewise, a proper prefix first, whatever the insertion order.
enum OrderCases {
    /// Keys that simpler orderings get wrong: signed bytes, prefixes, NUL, length-first.
    static let tricky: [[UInt8]] = [
        [0x00], [0x00, 0x00], [0x00, 0x01], [0x01], [0x01, 0x00], [0x7F], [0x7F, 0xFF], [0x80], [0x80, 0x00],
        [0xFE, 0xFF], [0xFF], [0xFF, 0x00], [0xFF, 0xFF], [0xFF, 0xFF, 0xFF],
        b("A"), b("Z"), b("a"), b("a") + [0], b("a") + [0, 0], b("a") + [1], b("aa"), b("aaa"), b("ab"), b("b"),
        b("ba"), b("é"), b("z"), [UInt8](repeating: 0x61, count: 511),
    ]

    static let all: [ConformanceCase] = [
        ConformanceCase("order", "tricky keys inserted shuffled scan in bytewise order") { ctx in
            var random = SeededRandom(seed: 7)
            let store = try ctx.store(with: tricky.shuffled(using: &random).map { ($0, $0) })
            try store.read { tx in try expectEqual(try tx.keys(), tricky.sorted(by: referenceLess), "forward scan") }
        },
        ConformanceCase("order", "tricky keys scan in reverse bytewise order") { ctx in
            var random = SeededRandom(seed: 8)
            let store = try ctx.store(with: tricky.shuffled(using: &random).map { ($0, $0) })
            try store.read { tx in
                try expectEqual(try tx.keys(reverse: true), tricky.sorted(by: referenceLess).reversed(), "reverse scan")
            }
        },
        ConformanceCase("order", "tricky keys inserted one transaction each keep order") { ctx in
            let store = try ctx.open()
            for key in tricky.reversed() { try store.write { tx in try tx.put(key, forKey: key) } }
            try store.read { tx in try expectEqual(try tx.keys(), tricky.sorted(by: referenceLess), "forward scan") }
        },
        ConformanceCase("order", "a key sorts before every key it prefixes") { ctx in
            let keys: [[UInt8]] = [b("abc"), b("ab"), b("a"), b("abcd"), b("b")]
            let store = try ctx.store(with: keys.map { ($0, []) })
            try store.read { tx in
                try expectEqual(try tx.keys(), [b("a"), b("ab"), b("abc"), b("abcd"), b("b")], "forward scan")
            }
        },
        ConformanceCase("order", "bytes compare unsigned: 80 and FF after 7F") { ctx in
            let store = try ctx.store(with: [([0xFF], []), ([0x80], []), ([0x7F], []), ([0x01], [])])
            try store.read { tx in try expectEqual(try tx.keys(), [[0x01], [0x7F], [0x80], [0xFF]], "forward scan") }
        },
        ConformanceCase("order", "big-endian integers scan numerically") { ctx in
            let numbers: [UInt32] = [0, 1, 255, 256, 65_535, 65_536, 1 << 24, UInt32.max]
            let keys = numbers.map { n in withUnsafeBytes(of: n.bigEndian) { Array($0) } }
            var random = SeededRandom(seed: 3)
            let store = try ctx.store(with: keys.shuffled(using: &random).map { ($0, []) })
            try store.read { tx in try expectEqual(try tx.keys(), keys, "forward scan") }
        },
        ConformanceCase("order", "100,000 random keys scan sorted, forward and reverse") { ctx in
            var random = SeededRandom(seed: 100_000)
            var keys = Set<[UInt8]>()
            while keys.count < 100_000 {
                let length = Int.random(in: 1...24, using: &random)
                keys.insert((0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
            }
            let store = try ctx.open()
            let shuffled = Array(keys)
            for chunk in stride(from: 0, to: shuffled.count, by: 10_000) {
                try store.write { tx in
                    for key in shuffled[chunk..<min(chunk + 10_000, shuffled.count)] { try tx.put([UInt8(key.count)], forKey: key) }
                }
            }
            let expected = shuffled.sorted(by: referenceLess)
            try store.read { tx in
                try expectSameList(try tx.keys(), expected, "forward scan of 100,000 random keys")
                try expectSameList(try tx.keys(reverse: true), expected.reversed(), "reverse scan of 100,000 random keys")
            }
        },
        ConformanceCase("order", "an empty store scans nothing, both directions") { ctx in
            let store = try ctx.open()
            try store.read { tx in
                try expectEqual(try tx.keys(), [], "forward")
                try expectEqual(try tx.keys(reverse: true), [], "reverse")
            }
        },
        ConformanceCase("order", "a one-key store scans that key, both directions") { ctx in
            let store = try ctx.store(with: [(b("only"), b("1"))])
            try store.read { tx in
                try expectEqual(try tx.collect(), [Pair(b("only"), b("1"))], "forward")
                try expectEqual(try tx.collect(reverse: true), [Pair(b("only"), b("1"))], "reverse")
            }
        },
    ]
}
