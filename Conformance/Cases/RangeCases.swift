import StrataEngine

/// Range scans: every bound combination, both directions, limits, paging, prefixes.
/// Expected results come from the reference order in `CaseContext.swift`, written without the
/// engine layer's own comparator.
enum RangeCases {
    /// The store every range case scans: "b" "d" "f" "h" "j", plus keys that share prefixes.
    static let fixture: [[UInt8]] = [b("b"), b("d"), b("d") + [0], b("da"), b("f"), b("h"), b("ha"), b("j")]

    /// A named range; each becomes a forward and a reverse case.
    static let ranges: [(String, KeyRange)] = {
        let lowers: [(String, KeyBound)] = [("unbounded", .unbounded), ("inclusive d", .inclusive(b("d"))), ("exclusive d", .exclusive(b("d")))]
        let uppers: [(String, KeyBound)] = [("unbounded", .unbounded), ("inclusive h", .inclusive(b("h"))), ("exclusive h", .exclusive(b("h")))]
        var result: [(String, KeyRange)] = []
        for (ln, lo) in lowers { for (un, up) in uppers { result.append(("lower \(ln), upper \(un)", KeyRange(lower: lo, upper: up))) } }
        result += [
            ("inclusive bounds between keys (c...g)", .closed(b("c"), b("g"))),
            ("exclusive bounds between keys (c<..<g)", KeyRange(lower: .exclusive(b("c")), upper: .exclusive(b("g")))),
            ("whole range before the first key", .closed(b("a"), b("aa"))),
            ("whole range after the last key", .closed(b("k"), b("z"))),
            ("bounds beyond both ends", .closed([0x00], [0xFF])),
            ("lower above upper is empty", .closed(b("h"), b("d"))),
            ("lower above upper, exclusive, is empty", KeyRange(lower: .exclusive(b("h")), upper: .exclusive(b("d")))),
            ("single key, closed [d, d]", .closed(b("d"), b("d"))),
            ("single key, half-open [d, d) is empty", .halfOpen(b("d"), b("d"))),
            ("single key, (d, d] is empty", KeyRange(lower: .exclusive(b("d")), upper: .inclusive(b("d")))),
            ("empty lower bound means from the first key", KeyRange(lower: .inclusive([]), upper: .inclusive(b("d")))),
            ("empty exclusive lower bound means from the first key", KeyRange(lower: .exclusive([]), upper: .inclusive(b("d")))),
            ("empty upper bound admits nothing", KeyRange(lower: .unbounded, upper: .inclusive([]))),
            ("lower bound longer than any key", KeyRange(lower: .inclusive(b("d") + [UInt8](repeating: 0, count: 600)))),
            ("upper bound longer than any key", KeyRange(upper: .exclusive(b("f") + [UInt8](repeating: 0, count: 600)))),
            ("lower bound equal to a key plus 00 (exclusive d 00)", KeyRange(lower: .exclusive(b("d") + [0]), upper: .exclusive(b("f")))),
            ("prefix d", .prefix(b("d"))),
            ("prefix h", .prefix(b("h"))),
        ]
        return result
    }()

    static let prefixFixture: [[UInt8]] = [[0xFE], [0xFE, 0xFF], [0xFF], [0xFF, 0x00], [0xFF, 0xFF], [0xFF, 0xFF, 0x01], [0xFF, 0xFF, 0xFF], b("a") + [0xFF], b("a") + [0xFF, 0xFF], b("b")]

    static let all: [ConformanceCase] = boundCases + prefixCases + limitCases + pagingCases

    static let boundCases: [ConformanceCase] = ranges.flatMap { name, range in
        [false, true].map { reverse in
            ConformanceCase("range", name + (reverse ? ", reverse" : "")) { ctx in
                let store = try ctx.store(with: fixture.map { ($0, $0 + b("=v")) })
                try store.read { tx in
                    let expected = referenceScan(fixture, range, reverse: reverse)
                    try expectEqual(try tx.keys(range, reverse: reverse), expected, "keys")
                    try expectEqual(try tx.collect(range, reverse: reverse), expected.map { Pair($0, $0 + b("=v")) }, "pairs")
                }
            }
        }
    }

    static let prefixCases: [ConformanceCase] = [
        ("prefix of all FF bytes (FF)", [0xFF]), ("prefix of all FF bytes (FF FF)", [0xFF, 0xFF]), ("prefix ending in FF (a FF)", b("a") + [0xFF]),
    ].flatMap { (name: String, prefix: [UInt8]) in
        [false, true].map { reverse in
            ConformanceCase("range", name + (reverse ? ", reverse" : "")) { ctx in
                let store = try ctx.store(with: prefixFixture.map { ($0, []) })
                let expected = prefixFixture.filter { $0.starts(with: prefix) }.sorted(by: referenceLess)
                try store.read { tx in
                    try expectEqual(try tx.keys(.prefix(prefix), reverse: reverse), reverse ? expected.reversed() : expected, "keys")
                }
            }
        }
    }

    static let limitCases: [ConformanceCase] = [
        ("limit 0 returns nothing", 0), ("limit 1 returns the first", 1), ("limit n returns exactly n", 3),
        ("limit equal to the result returns all", 5), ("limit above the result returns all", 1_000),
    ].flatMap { (name: String, limit: Int) in
        [false, true].map { reverse in
            ConformanceCase("range", name + (reverse ? ", reverse" : "")) { ctx in
                let store = try ctx.store(with: fixture.map { ($0, []) })
                let range = KeyRange.closed(b("d"), b("h"))
                try store.read { tx in
                    try expectEqual(try tx.keys(range, reverse: reverse, limit: limit),
                                    referenceScan(fixture, range, reverse: reverse, limit: limit), "keys with limit \(limit)")
                    try expectEqual(try tx.keys(.all, reverse: reverse, limit: limit),
                                    referenceScan(fixture, .all, reverse: reverse, limit: limit), "whole store with limit \(limit)")
                }
            }
        }
    } + [false, true].map { reverse in
        ConformanceCase("range", "the visitor stops the scan by returning false" + (reverse ? ", reverse" : "")) { ctx in
            let store = try ctx.store(with: fixture.map { ($0, []) })
            var seen: [[UInt8]] = []
            try store.read { tx in
                try tx.scan(.all, reverse: reverse) { key, _ in
                    seen.append(Array(key))
                    return seen.count < 2
                }
            }
            try expectEqual(seen, referenceScan(fixture, .all, reverse: reverse, limit: 2), "visited keys")
        }
    }

    static let negativeLimit = ConformanceCase("range", "a negative limit is refused") { ctx in
        let store = try ctx.store(with: fixture.map { ($0, []) })
        try expectError(.invalidArgument("scan limit -1 is negative"), "limit -1") { try store.read { tx in try tx.keys(.all, limit: -1) } }
        try expectError(.invalidArgument("scan limit -1 is negative"), "limit -1, reverse") {
            try store.read { tx in try tx.keys(.all, reverse: true, limit: -1) }
        }
    }

    static let pagingCases: [ConformanceCase] = [negativeLimit] + [false, true].map { reverse in
        ConformanceCase("range", "paging after the last key seen has no duplicates and no gaps" + (reverse ? ", reverse" : "")) { ctx in
            var random = SeededRandom(seed: 42)
            var keys = Set<[UInt8]>()
            while keys.count < 1_000 { keys.insert((0..<Int.random(in: 1...4, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }) }
            let store = try ctx.store(with: keys.map { ($0, []) })
            var pages: [[UInt8]] = []
            var last: [UInt8]?
            while true {
                let range = last.map { reverse ? KeyRange(upper: .exclusive($0)) : KeyRange(lower: .exclusive($0)) } ?? .all
                let page = try store.read { tx in try tx.keys(range, reverse: reverse, limit: 7) }
                if page.isEmpty { break }
                pages += page
                last = page.last
            }
            let expected = keys.sorted(by: referenceLess)
            try expectSameList(pages, reverse ? expected.reversed() : expected, "keys of all pages")
        }
    }
}
