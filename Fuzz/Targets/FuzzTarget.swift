import FuzzSupport
@testable import StrataRecords

extension FuzzTarget {
    /// The targets of the record layer and the embedded engines (the etcd target is a binary of
    /// its own, `strata-fuzz-etcd`, so that these build without gRPC).
    static let all: [FuzzTarget] = [
        KeyTarget.target, FieldTarget.target, CodableTarget.target, RecordTarget.target, EntryTarget.target,
        TokenTarget.target, UpgradeTarget.target, StoreTarget.target, FileTarget.target,
    ]
}

/// `value` followed by the checksum a stored value ends with (format 2's, or format 1's), so
/// that the decoders behind the checksum see the fuzzed bytes.
func withChecksum(_ value: [UInt8], key: [UInt8], formatOne: Bool = false) -> [UInt8] {
    let checksum = key.withUnsafeBytes { k in
        value.withUnsafeBytes { formatOne ? FormatOneChecksum.of(key: k, value: $0) : RecordChecksum.of(key: k, value: $0) }
    }
    return value + withUnsafeBytes(of: checksum.littleEndian) { Array($0) }
}
