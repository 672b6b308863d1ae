import FuzzSupport
import Foundation
@testable import StrataRecords

/// The format-1 to format-2 upgrade of a stored record: the input is a key (framed) and a
/// format-1 value; with the flag's low bit the value gets a valid format-1 checksum. A value
/// whose format-1 checksum matches must become a format-2 value that opens with a valid
/// checksum and the same body; one whose checksum fails must be left alone (`nil`).
enum UpgradeTarget {
    static let target = FuzzTarget(name: "upgrade", run: run, seeds: seeds)

    static func run(_ input: UnsafeRawBufferPointer) {
        var r = InputReader(input)
        let flags = r.byte()
        let key = r.chunk()
        let value = flags & 1 != 0 ? withChecksum(Array(r.rest()), key: key, formatOne: true) : Array(r.rest())
        guard let upgraded = FormatUpgrade.rewrite(key: key, formatOneValue: value) else {
            if flags & 1 != 0 { violated("a value with a valid format-1 checksum was not upgraded") }
            return
        }
        guard upgraded.dropLast(4).elementsEqual(value.dropLast(4)) else { violated("the upgrade changed the body") }
        key.withUnsafeBytes { k in
            upgraded.withUnsafeBytes { v in
                do {
                    _ = try RecordEnvelope.open(key: k, value: v)
                } catch let error as RecordEnvelope.Damage {
                    if error.kind == .checksum { violated("an upgraded value fails its checksum: \(error.detail)") }
                } catch {
                    violated("opening an upgraded value failed with \(error)")
                }
            }
        }
    }

    static func seeds() -> [[UInt8]] {
        guard let (engine, _) = try? seededStore(items: 4), let all = try? pairs(of: engine) else { return [] }
        // Record pairs (not system keys), stored without a checksum: the flag adds a format-1 one.
        return all.filter { $0.key.first != SystemKey.prefix.first }.prefix(12).map { [1] + framed($0.key) + $0.value.dropLast(4) }
    }
}
