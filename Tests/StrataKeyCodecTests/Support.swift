import Foundation
import StrataConformance
import StrataKeyCodec

/// The bytes of one component.
func encoded<C: KeyComponent>(_ value: C) -> [UInt8] {
    var writer = KeyWriter()
    writer.append(value)
    return writer.bytes
}

/// Decodes exactly one component from `bytes` (trailing bytes are an error).
func decoded<C: KeyComponent>(_ bytes: [UInt8], as: C.Type = C.self) throws -> C {
    try bytes.withUnsafeBytes { raw in
        var reader = KeyReader(raw)
        let value = try reader.read(C.self)
        try reader.finish()
        return value
    }
}

/// Unsigned bytewise order, written here independently of the library.
func bytesLess(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

/// "AB CD" → [0xAB, 0xCD]
func hexBytes(_ text: String) -> [UInt8] {
    text.split(separator: " ").map { UInt8($0, radix: 16)! }
}


enum Suit: String, KeyComponent, CaseIterable { case clubs, diamonds, hearts, spades }
enum Rank: Int, KeyComponent { case two = 2, ten = 10, ace = 14 }
