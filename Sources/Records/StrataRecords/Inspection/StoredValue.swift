import Foundation
import StrataKeyCodec

/// A key component or field value read from stored bytes without the Swift type: what
/// `strata dump` prints and `strata verify` recomputes index entries from.
public indirect enum StoredValue: Sendable, Hashable {
    /// `nil`: an absent `optional(F)` field, or a `nil` optional key component.
    case null
    /// A `bool` field or a `Bool` key component.
    case bool(Bool)
    /// A signed integer field (`i8` … `i64`), or an integer key component that fits `Int64`.
    case int(Int64)
    /// An unsigned integer field (`u8` … `u64`), or an integer key component above `Int64.max` (keys
    /// do not record signedness).
    case uint(UInt64)
    /// An `f32` field or a `Float` key component.
    case float(Float)
    /// An `f64` field or a `Double` key component.
    case double(Double)
    /// A `string` field or a `String` key component.
    case string(String)
    /// A `bytes` field (`Data`, `[UInt8]`) or a byte-string key component.
    case bytes([UInt8])
    /// A `uuid` field or a `UUID` key component.
    case uuid(UUID)
    /// Seconds since 2001-01-01 UTC (a `Date`'s `timeIntervalSinceReferenceDate`).
    case date(Double)
    /// A `url` field: the stored `absoluteString`, not parsed.
    case url(String)
    /// An array's or a set's elements, in stored order.
    case array([StoredValue])
    /// A dictionary's entries, in stored order.
    case map([Pair])
    /// A `@Field(.json)` value: the stored JSON text (`{"value": …}`).
    case json(String)
    /// Bytes of a format the catalog cannot describe (a `FieldCodec`'s or a type's own).
    case opaque(format: String, bytes: [UInt8])

    /// One entry of a ``map(_:)``.
    public struct Pair: Sendable, Hashable {
        /// The entry's key, read in the map's key layout.
        public let key: StoredValue
        /// The entry's value, read in the map's value layout.
        public let value: StoredValue
    }

    /// Decodes one key component of any type by its type code (KeyEncoding.md).
    public static func readKeyComponent(_ reader: inout KeyReader) throws(KeyDecodingError) -> StoredValue {
        let code = try reader.peek()
        switch code {
        case TypeCode.null:
            _ = try reader.readByte()
            return .null
        case TypeCode.bytes: return .bytes(try reader.read([UInt8].self))
        case TypeCode.string: return .string(try reader.read(String.self))
        case (TypeCode.integerZero - 8)...(TypeCode.integerZero + 8):
            let start = reader.offset
            let (negative, magnitude) = try reader.readInteger()
            if !negative { return magnitude <= UInt64(Int64.max) ? .int(Int64(magnitude)) : .uint(magnitude) }
            // -Int64.min's magnitude is 2^63: the one negative magnitude past Int64.max. A larger
            // one is no integer of Swift's (a damaged key: it trapped, found by the `record` fuzz target).
            guard magnitude <= UInt64(Int64.max) + 1 else { throw KeyDecodingError(offset: start, reason: .overflow("Int64")) }
            return .int(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude))
        case TypeCode.float: return .float(try reader.read(Float.self))
        case TypeCode.double: return .double(try reader.read(Double.self))
        case TypeCode.false, TypeCode.true: return .bool(try reader.read(Bool.self))
        case TypeCode.uuid: return .uuid(try reader.read(UUID.self))
        case TypeCode.date: return .date(try reader.read(Date.self).timeIntervalSinceReferenceDate)
        default: throw reader.error(.unexpectedTypeCode(code, expected: "a key component"))
        }
    }

    /// Decodes every component of `bytes`, a key or the tail of one.
    public static func keyComponents(_ bytes: some Collection<UInt8>) throws(KeyDecodingError) -> [StoredValue] {
        let array = Array(bytes)
        var values: [StoredValue] = []
        var failure: KeyDecodingError?
        array.withUnsafeBytes { raw in
            var reader = KeyReader(raw)
            do throws(KeyDecodingError) {
                while !reader.isAtEnd { values.append(try readKeyComponent(&reader)) }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return values
    }

    /// The value's bytes in the key encoding, as an index entry holds it; `nil` for values with
    /// no key encoding (collections, URLs, JSON, opaque bytes).
    public var keyEncoding: [UInt8]? {
        var writer = KeyWriter(capacity: 16)
        switch self {
        case .null: writer.write(TypeCode.null)
        case .bool(let v): writer.append(v)
        case .int(let v): writer.append(v)
        case .uint(let v): writer.append(v)
        case .float(let v): writer.append(v)
        case .double(let v): writer.append(v)
        case .string(let v): writer.append(v)
        case .bytes(let v): writer.append(v)
        case .uuid(let v): writer.append(v)
        case .date(let v): writer.append(Date(timeIntervalSinceReferenceDate: v))
        case .url, .array, .map, .json, .opaque: return nil
        }
        return writer.bytes
    }

    /// The value as JSON text: numbers and strings as themselves, bytes as `{"hex": …}`, dates as
    /// ISO 8601 text, maps as objects when every key is a string (else arrays of pairs), JSON
    /// fields as their stored JSON, opaque bytes as `{"format": …, "hex": …}`.
    public var json: String {
        var out = ""
        writeJSON(to: &out)
        return out
    }

    func writeJSON(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let v): out += v ? "true" : "false"
        case .int(let v): out += String(v)
        case .uint(let v): out += String(v)
        case .float(let v): out += Self.number(Double(v))
        case .double(let v): out += Self.number(v)
        case .string(let v): Self.quote(v, into: &out)
        case .bytes(let v): out += "{\"hex\":\"\(Self.hex(v))\"}"
        case .uuid(let v): Self.quote(v.uuidString, into: &out)
        case .date(let v): Self.quote(Self.iso8601(v), into: &out)
        case .url(let v): Self.quote(v, into: &out)
        case .array(let elements):
            out += "["
            for (i, element) in elements.enumerated() {
                if i > 0 { out += "," }
                element.writeJSON(to: &out)
            }
            out += "]"
        case .map(let pairs):
            let stringKeys = pairs.allSatisfy { if case .string = $0.key { return true } else { return false } }
            out += stringKeys ? "{" : "["
            for (i, pair) in pairs.enumerated() {
                if i > 0 { out += "," }
                if stringKeys {
                    pair.key.writeJSON(to: &out)
                    out += ":"
                    pair.value.writeJSON(to: &out)
                } else {
                    out += "["
                    pair.key.writeJSON(to: &out)
                    out += ","
                    pair.value.writeJSON(to: &out)
                    out += "]"
                }
            }
            out += stringKeys ? "}" : "]"
        case .json(let text): out += text
        case .opaque(let format, let bytes):
            out += "{\"format\":"
            Self.quote(format, into: &out)
            out += ",\"hex\":\"\(Self.hex(bytes))\"}"
        }
    }

    /// JSON has no NaN or infinities: those are written as strings.
    private static func number(_ v: Double) -> String {
        if v.isNaN { return "\"NaN\"" }
        if v.isInfinite { return v < 0 ? "\"-Infinity\"" : "\"Infinity\"" }
        return "\(v)"
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += "\\u" + String(format: "%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// The bytes as lowercase hex digits, as the store tools print bytes.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var chars: [UInt8] = []
        for b in bytes {
            chars.append(digits[Int(b >> 4)])
            chars.append(digits[Int(b & 0xF)])
        }
        return String(decoding: chars, as: UTF8.self)
    }

    private static func iso8601(_ seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSinceReferenceDate: seconds))
    }
}
