import StrataKeyCodec

/// One field of a predicate query's sort: `.ascending(\.age)`, `.descending(\.lastName)`.
///
/// Records sort by the key encoding of the field's value (KeyEncoding.md), the order every index
/// keeps: numbers by value (NaN after +infinity), strings by Unicode scalars, `nil` first. Records
/// with equal sort fields come in primary-key order, so a sort is total and pages never repeat or
/// skip a record.
///
/// `@unchecked Sendable`: the closure captures only a key path, which is immutable.
public struct SortField<R: Record>: @unchecked Sendable {
    let keyPath: AnyKeyPath
    /// Whether the field sorts highest first.
    public let descending: Bool
    /// Appends the key encoding of the field's value in a record.
    let encode: (R, inout KeyWriter) -> Void

    /// The lowest values first.
    public static func ascending<V: KeyComponent>(_ keyPath: KeyPath<R, V> & Sendable) -> SortField {
        SortField(keyPath: keyPath, descending: false) { $1.append($0[keyPath: keyPath]) }
    }

    /// The highest values first.
    public static func descending<V: KeyComponent>(_ keyPath: KeyPath<R, V> & Sendable) -> SortField {
        SortField(keyPath: keyPath, descending: true) { $1.append($0[keyPath: keyPath]) }
    }

    /// The field's name (``Record/storedKeyPaths``), or its key path as Swift prints it.
    var name: String {
        R.storedKeyPaths.first(where: { $0.value == keyPath })?.key ?? "\(keyPath)"
    }
}

/// The key a record sorts by in memory: each sort field's encoding and a 01 byte (all inverted
/// for a descending field), then the
/// record's primary key (inverted when the first field is descending). Compared bytewise, it
/// orders records as the sort asks, ties in primary-key order in the first field's direction, as
/// an index read in that direction gives them.
func sortKey<R: Record>(_ record: R, _ fields: [SortField<R>]) -> [UInt8] {
    var writer = KeyWriter(capacity: 48)
    for field in fields {
        let start = writer.bytes.count
        field.encode(record, &writer)
        // A string's encoding can be a prefix of a longer one's ("a" 02 61 00 of "a\0" 02 61 00
        // FF 00), which goes on with FF: 01 sorts the shorter first, and inverted, last. Without
        // it the next field's bytes would decide.
        writer.bytes.append(0x01)
        if field.descending {
            for i in start..<writer.bytes.count { writer.bytes[i] = ~writer.bytes[i] }
        }
    }
    let start = writer.bytes.count
    record.writeKey(to: &writer)
    if fields.first?.descending == true {
        for i in start..<writer.bytes.count { writer.bytes[i] = ~writer.bytes[i] }
    }
    return writer.bytes
}
