import Foundation

/// A field format descriptor from the catalog (`i64`, `optional(array(string))`, `json`, …),
/// parsed so the field's bytes can be read without the Swift type (RecordFormat.md, "Field
/// formats").
///
/// Formats whose bytes only their own code knows (`codec(…)`, `custom(…)`, and any descriptor this
/// build does not know) are ``opaque(_:)``: their length is unknown, so a reader stops there and
/// hands the rest of the value over as bytes.
public indirect enum FieldLayout: Sendable, Hashable {
    /// `bool`: one byte, `00` or `01`.
    case bool
    /// `i8` … `i64`: a zigzag varint holding a signed integer of `bits` bits.
    case signed(bits: Int)
    /// `u8` … `u64`: a varint holding an unsigned integer of `bits` bits.
    case unsigned(bits: Int)
    /// `f32` and `f64`: the IEEE bits, 4 or 8 bytes little-endian; `string`: a length-prefixed UTF-8
    /// string; `bytes`: a length-prefixed byte string; `uuid`: 16 bytes; `date`: an `f64` of seconds
    /// since 2001-01-01 UTC; `url`: a `string`; `json`: a `string` of JSON text, `{"value": …}`.
    case f32, f64, string, bytes, uuid, date, url, json
    /// `optional(F)`: `00` for `nil`, or `01` then a value of the inner layout.
    case optional(FieldLayout)
    /// `array(F)`: a varint count, then the elements in the inner layout.
    case array(FieldLayout)
    /// `set(F)`: stored as `array(F)`, in any order.
    case set(FieldLayout)
    /// `map(K,V)`: a varint count, then a key and a value per entry.
    case map(FieldLayout, FieldLayout)
    /// `raw(F)`: an enum case stored as its raw value, in the raw value's layout.
    case raw(FieldLayout)
    /// A format whose bytes only its own code knows (`codec(…)`, `custom(…)`, or a descriptor this
    /// build does not know), with its descriptor.
    case opaque(String)

    /// The layout a descriptor names.
    public init(_ format: FieldFormat) {
        self = Self.parse(Substring(format.descriptor)) ?? .opaque(format.descriptor)
    }

    private static func parse(_ d: Substring) -> FieldLayout? {
        switch d {
        case "bool": return .bool
        case "i8": return .signed(bits: 8)
        case "i16": return .signed(bits: 16)
        case "i32": return .signed(bits: 32)
        case "i64": return .signed(bits: 64)
        case "u8": return .unsigned(bits: 8)
        case "u16": return .unsigned(bits: 16)
        case "u32": return .unsigned(bits: 32)
        case "u64": return .unsigned(bits: 64)
        case "f32": return .f32
        case "f64": return .f64
        case "string": return .string
        case "bytes": return .bytes
        case "uuid": return .uuid
        case "date": return .date
        case "url": return .url
        case "json": return .json
        default: break
        }
        guard let open = d.firstIndex(of: "("), d.last == ")" else { return nil }
        let name = d[..<open]
        let arguments = splitArguments(d[d.index(after: open)..<d.index(before: d.endIndex)])
        let inner = arguments.map { parse($0) ?? .opaque(String($0)) }
        switch (name, inner.count) {
        case ("optional", 1): return .optional(inner[0])
        case ("array", 1): return .array(inner[0])
        case ("set", 1): return .set(inner[0])
        case ("map", 2): return .map(inner[0], inner[1])
        case ("raw", 1): return .raw(inner[0])
        default: return nil
        }
    }

    /// `a,map(b,c)` → `a`, `map(b,c)`.
    private static func splitArguments(_ s: Substring) -> [Substring] {
        var parts: [Substring] = []
        var depth = 0
        var start = s.startIndex
        for i in s.indices {
            switch s[i] {
            case "(": depth += 1
            case ")": depth -= 1
            case "," where depth == 0:
                parts.append(s[start..<i])
                start = s.index(after: i)
            default: break
            }
        }
        parts.append(s[start...])
        return parts
    }

    /// Whether every byte of the format can be read without the Swift type.
    public var isDescribed: Bool {
        switch self {
        case .opaque: return false
        case .optional(let f), .array(let f), .set(let f), .raw(let f): return f.isDescribed
        case .map(let k, let v): return k.isDescribed && v.isDescribed
        default: return true
        }
    }

    /// Whether values of this layout have a key encoding (``StoredValue/keyEncoding``): the
    /// scalars, and optionals of them.
    var hasKeyEncoding: Bool {
        switch self {
        case .bool, .signed, .unsigned, .f32, .f64, .string, .bytes, .uuid, .date: return true
        case .optional(let f): return f.hasKeyEncoding
        default: return false
        }
    }

    /// Reads one value of this layout. Throws for bytes the format cannot hold, and for
    /// ``opaque(_:)`` layouts (callers check ``isDescribed`` first).
    public func read(_ r: inout FieldReader) throws(FieldDecodingError) -> StoredValue {
        switch self {
        case .bool: return .bool(try r.read(Bool.self))
        case .signed(let bits):
            let v = try r.read(Int64.self)
            guard bits == 64 || (v >= -(1 << (bits - 1)) && v < 1 << (bits - 1)) else {
                throw FieldDecodingError(offset: r.offset, reason: "\(v) does not fit i\(bits)")
            }
            return .int(v)
        case .unsigned(let bits):
            let v = try r.read(UInt64.self)
            guard bits == 64 || v < 1 << bits else { throw FieldDecodingError(offset: r.offset, reason: "\(v) does not fit u\(bits)") }
            return .uint(v)
        case .f32: return .float(try r.read(Float.self))
        case .f64: return .double(try r.read(Double.self))
        case .string: return .string(try r.read(String.self))
        case .bytes: return .bytes(Array(try r.readBytes()))
        case .uuid: return .uuid(try r.read(UUID.self))
        case .date: return .date(try r.read(Double.self))
        case .url: return .url(try r.read(String.self))
        case .json:
            let start = r.offset
            let text = try r.read(String.self)
            guard (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil else {
                throw FieldDecodingError(offset: start, reason: "the JSON field is not valid JSON")
            }
            return .json(text)
        case .optional(let inner):
            return try r.read(Bool.self) ? try inner.read(&r) : .null
        case .array(let element), .set(let element):
            var values: [StoredValue] = []
            for _ in 0..<(try r.readCount()) { values.append(try element.read(&r)) }
            return .array(values)
        case .map(let key, let value):
            var pairs: [StoredValue.Pair] = []
            for _ in 0..<(try r.readCount()) { pairs.append(StoredValue.Pair(key: try key.read(&r), value: try value.read(&r))) }
            return .map(pairs)
        case .raw(let inner): return try inner.read(&r)
        case .opaque(let name): throw FieldDecodingError(offset: r.offset, reason: "the format \(name) is not described in the catalog")
        }
    }
}
