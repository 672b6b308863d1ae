import Foundation
import StrataEngine

/// What an engine declares (capabilities, limits) held to what it does. The capability cases
/// themselves are the ones that need a capability (a `.persistent` engine must really reopen its
/// data, a `.multiProcess` one really share its store); these check the rest of the declaration.
enum DeclarationCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("declaration", "the engine reports the capabilities and limits under test") { ctx in
            let store = try ctx.open()
            try expectEqual(store.capabilities, ctx.engine.capabilities, "capabilities")
            try expectEqual(store.limits, ctx.engine.limits, "limits")
        },
        ConformanceCase("declaration", "a value over the declared maximum is refused; one without a maximum is stored") { ctx in
            let store = try ctx.open()
            guard let max = ctx.engine.limits.maxValueLength else {
                // No declared limit: a large value (4 MiB, or what one transaction may hold) is stored whole.
                let size = min(4 << 20, (ctx.engine.limits.maxBytesPerTransaction ?? .max) - 3)
                let big = [UInt8](repeating: 0x5A, count: size)
                try store.write { tx in try tx.put(big, forKey: b("big")) }
                try store.read { tx in try expectEqual(try tx.get(b("big")), big, "a \(size)-byte value") }
                return
            }
            // The bytes are never read: the refusal goes by length, before anything is written,
            // so the pages of this allocation are never touched.
            let tooLong = UnsafeMutableRawBufferPointer.allocate(byteCount: max + 1, alignment: 8)
            defer { tooLong.deallocate() }
            try store.write { tx in
                try expectError(.valueTooLarge(length: max + 1, limit: max), "put(\(max + 1) bytes)") {
                    try b("k").withUnsafeBytes { try tx.put(UnsafeRawBufferPointer(tooLong), forKey: $0) }
                }
                try tx.put(b("v"), forKey: b("k"))
            }
            try store.read { tx in try expectEqual(try tx.get(b("k")), b("v"), "the transaction went on after the refusal") }
        },
        ConformanceCase("declaration", "writes past the declared per-transaction limits are refused; earlier ones commit") { ctx in
            let store = try ctx.open()
            let limits = ctx.engine.limits
            // Limits small enough to reach in a test; larger or missing ones: 10,000 writes must fit.
            let operations = limits.maxOperationsPerTransaction.flatMap { $0 <= 100_000 ? $0 : nil }
            let bytes = limits.maxBytesPerTransaction.flatMap { $0 <= 64 << 20 ? $0 : nil }
            let value = [UInt8](repeating: 7, count: 1_000)
            let attempts = operations.map { $0 + 1 } ?? bytes.map { $0 / value.count + 2 } ?? 10_000
            var written = 0
            var refusal: EngineError?
            try store.write { tx in
                while written < attempts {
                    do {
                        try tx.put(value, forKey: [UInt8](counter: UInt64(written)))
                        written += 1
                    } catch let error as EngineError {
                        refusal = error
                        break
                    }
                }
            }
            if let operations {
                try expectEqual(refusal, .transactionTooLarge(what: "writes", limit: operations), "write \(operations + 1)")
                try expectEqual(written, operations, "writes accepted")
            } else if let bytes {
                try expectEqual(refusal, .transactionTooLarge(what: "bytes of keys and values", limit: bytes), "the write crossing \(bytes) bytes")
            } else {
                try expectEqual(refusal, nil, "10,000 writes in one transaction")
            }
            try store.read { tx in try expectEqual(try tx.keys().count, written, "keys committed") }
        },
    ]
}
