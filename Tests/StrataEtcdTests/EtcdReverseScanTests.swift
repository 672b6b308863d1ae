import Foundation
@_spi(Testing) @testable import StrataEtcd
import StrataEngine
import Testing

/// Reverse scans on etcd 3.4 cost what etcd reads, and etcd reads a descending request's whole
/// range whatever its limit: the engine scans in windows. These tests count the keys etcd read.
@Suite("etcd reverse scans", .serialized)
struct EtcdReverseScanTests {
    /// 20,000 keys: "u/" and a big-endian index (even spread), then "w/" and a decimal index
    /// (ASCII digits: a skewed spread on the line), each with a 20-byte value.
    static let keys: [[UInt8]] = (0..<10_000).map { i in Array("u/".utf8) + withUnsafeBytes(of: UInt32(i * 7).bigEndian, Array.init) }
        + (0..<10_000).map { i in Array("w/\(String(format: "%08d", i * 13))".utf8) }

    /// A store holding ``keys`` on the 3-member cluster, loaded in batches, over a transport
    /// that counts the keys etcd reads for descending requests.
    static let store: (engine: EtcdEngine, network: FaultyTransport) = {
        let (engine, network) = try! FaultyTransport.engine(prefix: Clusters.prefix("reverse"), options: EngineOptions(mode: .create),
                                                            etcd: Clusters.options(Clusters.three))
        for batch in stride(from: 0, to: keys.count, by: 2_000) {
            try! engine.write { tx in
                for key in keys[batch..<min(batch + 2_000, keys.count)] { try tx.put(Array(repeating: 7, count: 20), forKey: key) }
            }
        }
        return (engine, network)
    }()

    /// The keys of a reverse scan of `range` with `limit`, and how many keys etcd read for it.
    private func reverse(_ range: KeyRange, limit: Int?, unwindowed: Bool = false) throws -> (keys: [[UInt8]], read: Int64) {
        let (engine, network) = Self.store
        network.widenDescending = unwindowed
        defer { network.widenDescending = false }
        network.descendingKeysRead = 0
        var found: [[UInt8]] = []
        try engine.read { tx in
            try tx.scan(range, reverse: true, limit: limit) { key, _ in
                found.append(Array(key))
                return true
            }
        }
        return (found, network.descendingKeysRead)
    }

    @Test("the last 10 of 20,000 keys: the right keys, and etcd reads at most a few hundred")
    func shortReverseScan() throws {
        let (keys, read) = try reverse(.all, limit: 10)
        #expect(keys == Array(Self.keys.suffix(10).reversed()))
        #expect(read <= 500, "etcd read \(read) keys for 10")
    }

    @Test("broken variant: descending requests over the whole rest of the range read all 20,000 keys for 10 (the check above can fail)")
    func unwindowedReverseScanIsCaught() throws {
        let (keys, read) = try reverse(.all, limit: 10, unwindowed: true)
        #expect(keys == Array(Self.keys.suffix(10).reversed()))
        #expect(read > 500)
    }

    @Test("full reverse scans, and reverse scans of sub-ranges on both spreads: exact, each key read about once")
    func reverseScansAreExact() throws {
        let all = try reverse(.all, limit: nil)
        #expect(all.keys == Array(Self.keys.reversed()))
        #expect(all.read <= 3 * Int64(Self.keys.count), "etcd read \(all.read) keys for \(Self.keys.count)")
        let ranges: [(KeyRange, ClosedRange<Int>)] = [
            (.halfOpen(Self.keys[1_234], Self.keys[8_765]), 1_234...8_764),
            (.closed(Self.keys[12_345], Self.keys[17_000]), 12_345...17_000),
            (.halfOpen(Self.keys[9_990], Self.keys[10_010]), 9_990...10_009),
            (.prefix(Array("w/".utf8)), 10_000...19_999),
        ]
        for (range, indices) in ranges {
            for limit in [1, 100, 5_000, nil] {
                let (keys, read) = try reverse(range, limit: limit)
                let expected = Array(indices.reversed().prefix(limit ?? .max).map { Self.keys[$0] })
                #expect(keys == expected, "range \(indices), limit \(String(describing: limit))")
                // A range small enough is read whole (by design: pages of 4,096); a larger one window by window.
                let bound = Int64(indices.count) <= DescendingWindows.wholePartKeys ? 2 * Int64(indices.count) : 3 * Int64(expected.count) + 600
                #expect(read <= bound, "range \(indices), limit \(String(describing: limit)): etcd read \(read) keys")
            }
        }
    }

    @Test("positions on the key line keep the order of keys, and a window's bound lies between its range's bounds")
    func keyLine() {
        let low: [UInt8] = Array("w/0000".utf8), high: [UInt8] = Array("w/0100".utf8)
        let line = KeyLine(low, high)
        #expect(line.prefix == Array("w/0".utf8))
        #expect(line.position(low) < line.position(high))
        #expect(line.position(low + [0]) == line.position(low))
        let middle = line.key(at: (line.position(low) + line.position(high)) / 2)
        #expect(middle.lexicographicallyPrecedes(high) && low.lexicographicallyPrecedes(middle))
        #expect(line.key(at: line.position(high)) == high)
        #expect(line.key(at: 0x0100_0000_0000_0000) == Array("w/0".utf8) + [1])
    }
}
