import StrataEngine

/// Point operations: get, put, delete, exists, key and value limits.
enum PointCases {
    static let all: [ConformanceCase] = basics + specialBytes + keyLimits + values

    static let basics: [ConformanceCase] = [
        ConformanceCase("point", "get of a missing key is nil") { ctx in
            let store = try ctx.store(with: [(b("a"), b("1"))])
            try store.read { tx in
                try expectEqual(try tx.get(b("b")), nil, "get(b)")
                try expectEqual(try tx.exists(b("b")), false, "exists(b)")
            }
        },
        ConformanceCase("point", "put then get returns the value") { ctx in
            let store = try ctx.store(with: [(b("k"), b("v"))])
            try store.read { tx in try expectEqual(try tx.get(b("k")), b("v"), "get(k)") }
        },
        ConformanceCase("point", "overwrite replaces the value") { ctx in
            let store = try ctx.store(with: [(b("k"), b("old"))])
            try store.write { tx in try tx.put(b("new"), forKey: b("k")) }
            try store.read { tx in
                try expectEqual(try tx.get(b("k")), b("new"), "get(k)")
                try expectEqual(try tx.keys(), [b("k")], "keys after overwrite")
            }
        },
        ConformanceCase("point", "delete removes the key") { ctx in
            let store = try ctx.store(with: [(b("a"), b("1")), (b("b"), b("2"))])
            try store.write { tx in try tx.delete(b("a")) }
            try store.read { tx in
                try expectEqual(try tx.get(b("a")), nil, "get(a)")
                try expectEqual(try tx.keys(), [b("b")], "keys")
            }
        },
        ConformanceCase("point", "delete of a missing key is not an error") { ctx in
            let store = try ctx.store(with: [(b("a"), b("1"))])
            try store.write { tx in try tx.delete(b("zzz")) }
            try store.read { tx in try expectEqual(try tx.keys(), [b("a")], "keys") }
        },
        ConformanceCase("point", "exists tells present from missing") { ctx in
            let store = try ctx.store(with: [(b("a"), b("1"))])
            try store.read { tx in
                try expectEqual(try tx.exists(b("a")), true, "exists(a)")
                try expectEqual(try tx.exists(b("a\0")), false, "exists(a 00)")
            }
        },
        ConformanceCase("point", "withValue lends the stored bytes") { ctx in
            let store = try ctx.store(with: [(b("k"), [1, 2, 3])])
            let sum = try store.read { tx in
                try [UInt8](b("k")).withUnsafeBytes { key in
                    try tx.withValue(forKey: key) { $0.map { $0.reduce(0) { $0 + Int($1) } } }
                }
            }
            try expectEqual(sum, 6, "sum of the lent bytes")
        },
        ConformanceCase("point", "putReportingReplaced tells a new key from a replaced one, the transaction's own writes and rollbacks included") { ctx in
            // Random puts (reporting or not), deletes and clears of 24 keys, in transactions of
            // up to 40 writes, one in five rolled back, against a model; values up to 3 KiB
            // (LMDB keeps those on pages of their own).
            let store = try ctx.store(with: [])
            var random = SeededRandom(seed: 45)
            var model: [[UInt8]: [UInt8]] = [:]
            let keys = (0..<24).map { b("k") + [UInt8($0 / 5), UInt8($0)] }
            for round in 0..<60 {
                var view = model
                let abort = random.next() % 5 == 0
                do {
                    try store.write { tx in
                        for step in 0..<Int(random.next() % 40) {
                            let key = keys[Int(random.next() % UInt64(keys.count))]
                            let value = [UInt8](repeating: UInt8(step), count: random.next() % 4 == 0 ? 3_000 : Int(random.next() % 20))
                            switch random.next() % 6 {
                            case 0, 1, 2:
                                let replaced = try key.withUnsafeBytes { k in try value.withUnsafeBytes { try tx.putReportingReplaced($0, forKey: k) } }
                                try expectEqual(replaced, view[key] != nil, "round \(round), step \(step): putReportingReplaced(\(hex(key)))")
                                view[key] = value
                            case 3:
                                try tx.put(value, forKey: key)
                                view[key] = value
                            case 4:
                                try tx.delete(key)
                                view[key] = nil
                            default:
                                let from = keys[Int(random.next() % UInt64(keys.count))]
                                try tx.clear(KeyRange(lower: .inclusive(from), upper: .exclusive(from + [0xFF, 0xFF])))
                                for key in view.keys where !referenceLess(key, from) && referenceLess(key, from + [0xFF, 0xFF]) { view[key] = nil }
                            }
                        }
                        try expectEqual(try tx.keys(), view.keys.sorted(by: referenceLess), "round \(round): the transaction's keys")
                        if abort { throw Abort() }
                    }
                    model = view
                } catch is Abort {}
                try store.read { tx in
                    for key in keys { try expectEqual(try tx.get(key), model[key], "round \(round): get(\(hex(key))) after the commit or rollback") }
                }
            }
        },
    ]

    static let specialBytes: [ConformanceCase] = [
        ("00", [0x00]), ("7F", [0x7F]), ("80", [0x80]), ("FF", [0xFF]),
    ].map { (name, byte: [UInt8]) in
        ConformanceCase("point", "keys containing \(name) bytes round-trip") { ctx in
            let keys: [[UInt8]] = [byte, byte + byte, b("a") + byte, byte + b("a"), b("a") + byte + b("b")]
            let store = try ctx.store(with: keys.map { ($0, $0 + [1]) })
            try store.read { tx in
                for key in keys { try expectEqual(try tx.get(key), key + [1], "get(\(hex(key)))") }
                try expectEqual(try tx.keys(), keys.sorted(by: referenceLess), "keys in order")
            }
        }
    } + [
        ConformanceCase("point", "a key and the same key plus 00 are different keys") { ctx in
            let store = try ctx.store(with: [(b("a"), b("1")), (b("a") + [0], b("2"))])
            try store.read { tx in
                try expectEqual(try tx.get(b("a")), b("1"), "get(a)")
                try expectEqual(try tx.get(b("a") + [0]), b("2"), "get(a 00)")
            }
        },
    ]

    static let keyLimits: [ConformanceCase] = [
        ConformanceCase("point", "a 511-byte key is stored, read and scanned") { ctx in
            let key = [UInt8](repeating: 0x61, count: 511)
            let store = try ctx.store(with: [(key, b("v"))])
            try store.read { tx in
                try expectEqual(try tx.get(key), b("v"), "get(511 bytes)")
                try expectEqual(try tx.keys(), [key], "keys")
            }
        },
        ConformanceCase("point", "keys of every length up to 511 bytes can be deleted") { ctx in
            let keys = [1, 2, 8, 9, 64, 255, 256, 510, 511].map { [UInt8](repeating: 0x6B, count: $0) }
            let store = try ctx.store(with: keys.map { ($0, b("v")) } + [(b("stay"), b("v"))])
            try store.write { tx in for key in keys { try tx.delete(key) } }
            try store.read { tx in
                try expectEqual(try tx.keys(), [b("stay")], "keys after deleting keys of 1 to 511 bytes")
                for key in keys { try expectEqual(try tx.get(key), nil, "get(\(key.count) bytes) after delete") }
            }
        },
        ConformanceCase("point", "a 512-byte key is refused by put") { ctx in
            let store = try ctx.open()
            try expectError(.keyTooLarge(length: 512, limit: 511), "put(512 bytes)") {
                try store.write { tx in try tx.put(b("v"), forKey: [UInt8](repeating: 1, count: 512)) }
            }
            try store.read { tx in try expectEqual(try tx.keys(), [], "keys after refusal") }
        },
        ConformanceCase("point", "a 512-byte key is refused by get") { ctx in
            let store = try ctx.open()
            try expectError(.keyTooLarge(length: 512, limit: 511), "get(512 bytes)") {
                try store.read { tx in try tx.get([UInt8](repeating: 1, count: 512)) }
            }
        },
        ConformanceCase("point", "a 512-byte key is refused by delete") { ctx in
            let store = try ctx.open()
            try expectError(.keyTooLarge(length: 512, limit: 511), "delete(512 bytes)") {
                try store.write { tx in try tx.delete([UInt8](repeating: 1, count: 512)) }
            }
        },
        ConformanceCase("point", "an empty key is refused by put") { ctx in
            let store = try ctx.open()
            try expectError(.emptyKey, "put(empty)") { try store.write { tx in try tx.put(b("v"), forKey: []) } }
            try store.read { tx in try expectEqual(try tx.keys(), [], "keys after refusal") }
        },
        ConformanceCase("point", "an empty key is refused by get and exists") { ctx in
            let store = try ctx.open()
            try expectError(.emptyKey, "get(empty)") { try store.read { tx in try tx.get([]) } }
            try expectError(.emptyKey, "exists(empty)") { try store.read { tx in try tx.exists([]) } }
        },
        ConformanceCase("point", "an empty key is refused by delete") { ctx in
            let store = try ctx.open()
            try expectError(.emptyKey, "delete(empty)") { try store.write { tx in try tx.delete([]) } }
        },
        ConformanceCase("point", "a refused key leaves the transaction usable") { ctx in
            let store = try ctx.open()
            try store.write { tx in
                try tx.put(b("1"), forKey: b("a"))
                try expectError(.emptyKey, "put(empty)") { try tx.put(b("v"), forKey: []) }
                try tx.put(b("2"), forKey: b("b"))
            }
            try store.read { tx in try expectEqual(try tx.keys(), [b("a"), b("b")], "keys committed") }
        },
    ]

    static let values: [ConformanceCase] = [
        ConformanceCase("point", "an empty value is a value, not a missing key") { ctx in
            let store = try ctx.store(with: [(b("e"), [])])
            try store.read { tx in
                try expectEqual(try tx.get(b("e")), [], "get(e)")
                try expectEqual(try tx.exists(b("e")), true, "exists(e)")
                try expectEqual(try tx.collect(), [Pair(b("e"), [])], "scan")
            }
        },
        ConformanceCase("point", "an empty value stays distinct from missing after overwrite") { ctx in
            let store = try ctx.store(with: [(b("e"), b("full"))])
            try store.write { tx in try tx.put([], forKey: b("e")) }
            try store.read { tx in try expectEqual(try tx.get(b("e")), [], "get(e)") }
        },
        ConformanceCase("point", "a 1 MiB value round-trips") { ctx in
            var random = SeededRandom(seed: 1)
            let value = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let store = try ctx.store(with: [(b("big"), value), (b("small"), b("s"))])
            try store.read { tx in
                try expectSameList(try tx.get(b("big")) ?? [], value, "bytes of the 1 MiB value")
                try expectEqual(try tx.get(b("small")), b("s"), "get(small)")
            }
        },
        ConformanceCase("point", "sixteen 1 MiB values in one transaction round-trip") { ctx in
            let values = (0..<16).map { i in [UInt8](repeating: UInt8(i), count: (1 << 20) + i) }
            let store = try ctx.store(with: values.enumerated().map { ([UInt8(1), UInt8($0.offset)], $0.element) })
            try store.read { tx in
                for (i, value) in values.enumerated() {
                    try expectSameList(try tx.get([1, UInt8(i)]) ?? [], value, "bytes of value \(i)")
                }
            }
        },
        ConformanceCase("point", "a value holding every byte value round-trips") { ctx in
            let value = (0...255).map { UInt8($0) } + (0...255).reversed().map { UInt8($0) }
            let store = try ctx.store(with: [(b("all"), value)])
            try store.read { tx in try expectEqual(try tx.get(b("all")), value, "get(all)") }
        },
    ]
}
