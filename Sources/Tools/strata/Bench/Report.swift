import Foundation

/// Turns results into the table, the JSON file and the SVG chart.
enum Report {
    /// Fills in each figure's ratio to raw C's figure for the same engine and workload.
    static func rate(_ results: [BenchResult]) -> [BenchResult] {
        results.map { result in
            var rated = result
            if result.layer != .raw, let raw = results.first(where: { $0.engine == result.engine && $0.workload == result.workload && $0.layer == .raw }) {
                rated.ratioToRaw = result.opsPerSecond / raw.opsPerSecond
            }
            return rated
        }
    }

    /// Each (engine, layer, workload)'s median over interleaved rounds: the round whose throughput
    /// is the median supplies the figures, and the ratio to raw C is the median of each round's
    /// ratio (raw C ran next to it in the same round).
    static func medians(_ rounds: [[BenchResult]]) -> [BenchResult] {
        guard let first = rounds.first else { return [] }
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
        return first.map { shape in
            let same = rounds.compactMap { $0.first { $0.engine == shape.engine && $0.layer == shape.layer && $0.workload == shape.workload } }
            var chosen = same.sorted { $0.opsPerSecond < $1.opsPerSecond }[same.count / 2]
            let ratios = same.compactMap(\.ratioToRaw)
            chosen.ratioToRaw = ratios.isEmpty ? nil : median(ratios)
            let heaps = same.compactMap(\.heapHighWater)
            chosen.heapHighWater = heaps.isEmpty ? nil : heaps.max()
            chosen.rounds = same.count
            return chosen
        }
    }

    /// The speed issue's targets, each met or missed on the medians.
    static func targets(_ results: [BenchResult], sizes: [String: [Layer: UInt64]], valueBytes: UInt64, rounds: Int) -> String {
        var lines = ["Targets (medians of \(rounds) round\(rounds == 1 ? "" : "s"); ratio to raw C):"]
        func ratio(_ engine: String, _ layer: Layer, _ workload: Workload) -> Double? {
            results.first { $0.engine == engine && $0.layer == layer && $0.workload == workload }?.ratioToRaw
        }
        func line(_ what: String, _ value: Double?, _ target: Double, must: Bool, format: String = "%.2f", atMost: Bool = false) {
            guard let value else { return }
            let met = atMost ? value <= target : value >= target
            lines.append("  \(met ? "met   " : must ? "MISSED" : "missed") \(what): \(String(format: format, value)) (\(atMost ? "≤" : "≥") \(String(format: format, target))\(must ? "" : ", aim"))")
        }
        let fillseqTarget = ["lmdb": 0.75, "leveldb": 0.85, "sqlite": 0.8]
        let scanAim = ["lmdb": 0.4, "leveldb": 0.6, "sqlite": 0.5]
        for engine in Set(results.map(\.engine)).sorted() {
            for workload in Workload.allCases { line("\(engine) engine \(workload.rawValue)", ratio(engine, .engine, workload), 0.9, must: true) }
            line("\(engine) record readrandom", ratio(engine, .record, .readrandom), 0.9, must: true)
            line("\(engine) record fillseq", ratio(engine, .record, .fillseq), fillseqTarget[engine] ?? 0.8, must: true)
            if let size = sizes[engine], let raw = size[.raw], raw > 0 {
                for layer in [Layer.engine, .record] {
                    line("\(engine) \(layer.rawValue) size on disk / raw C", size[layer].map { Double($0) / Double(raw) }, 1.1, must: true, atMost: true)
                }
            }
            let heapLimit = engine == "leveldb" || engine == "lmdb" ? 1.5 : 0.1  // amendment 9: LMDB mallocs its dirty pages
            for layer in [Layer.engine, .record] {
                let heap = results.first { $0.engine == engine && $0.layer == layer && $0.workload == .fillseq }?.heapHighWater
                line("\(engine) \(layer.rawValue) fillseq heap high-water / bytes written", heap.map { Double($0) / Double(valueBytes) }, heapLimit,
                     must: true, atMost: true)
            }
            for workload in [Workload.scanforward, .scanreverse, .scan100] {
                line("\(engine) record \(workload.rawValue)", ratio(engine, .record, workload), scanAim[engine] ?? 0.5, must: false)
                line("\(engine) view \(workload.rawValue)", ratio(engine, .view, workload), 0.6, must: false)
            }
        }
        return lines.joined(separator: "\n")
    }

    /// 1234567 → "1.23M"
    static func rate(_ value: Double) -> String {
        switch value {
        case 1e6...: return String(format: "%.2fM", value / 1e6)
        case 1e3...: return String(format: "%.1fK", value / 1e3)
        default: return String(format: "%.0f", value)
        }
    }

    static func bytes(_ value: UInt64) -> String {
        value >= 1 << 20 ? String(format: "%.1f MiB", Double(value) / 1_048_576) : String(format: "%.1f KiB", Double(value) / 1024)
    }

    static func table(_ results: [BenchResult], sizes: [String: [Layer: UInt64]], heapGrowth: [String: UInt64], records: Int) -> String {
        var lines: [String] = []
        func pad(_ s: String, _ n: Int, right: Bool = false) -> String {
            s.count >= n ? s : (right ? String(repeating: " ", count: n - s.count) + s : s + String(repeating: " ", count: n - s.count))
        }
        for engine in Set(results.map(\.engine)).sorted() {
            lines.append("\(engine) — \(records) records")
            lines.append(pad("workload", 13) + pad("layer", 8) + pad("ops/s", 10, right: true) + pad("p50 µs", 10, right: true)
                         + pad("p99 µs", 10, right: true) + pad("× raw C", 9, right: true))
            for workload in Workload.allCases {
                for layer in Layer.allCases {
                    guard let r = results.first(where: { $0.engine == engine && $0.workload == workload && $0.layer == layer }) else { continue }
                    lines.append(pad(layer == .raw ? workload.rawValue : "", 13) + pad(layer.rawValue, 8)
                                 + pad(rate(r.opsPerSecond), 10, right: true) + pad(String(format: "%.2f", r.p50Micros), 10, right: true)
                                 + pad(String(format: "%.2f", r.p99Micros), 10, right: true)
                                 + pad(r.ratioToRaw.map { String(format: "%.2f", $0) } ?? "—", 9, right: true))
                }
            }
            let size = sizes[engine] ?? [:]
            lines.append("size on disk after fillrandom: " + Layer.allCases.compactMap { l in size[l].map { "\(l.rawValue) \(bytes($0))" } }.joined(separator: ", "))
            if let growth = heapGrowth[engine] { lines.append("heap growth during the record layer's full scans: \(bytes(growth))") }
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ results: [BenchResult], records: Int) throws -> Data {
        struct File: Encodable {
            let records: Int
            let date: String
            let cores: Int
            let results: [BenchResult]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(File(records: records, date: ISO8601DateFormatter().string(from: Date()),
                                       cores: ProcessInfo.processInfo.activeProcessorCount, results: results))
    }

    /// Grouped bars per workload, one colour per engine: the record layer in full colour, raw C
    /// lighter beside it; a log scale, since workloads differ by orders of magnitude.
    static func svg(_ results: [BenchResult], records: Int) -> String {
        let engines = Set(results.map(\.engine)).sorted()
        let workloads = Workload.allCases.filter { w in results.contains { $0.workload == w } }
        let colours = ["lmdb": "#1f77b4", "leveldb": "#2ca02c", "sqlite": "#d62728"]
        let light = ["lmdb": "#aec7e8", "leveldb": "#98df8a", "sqlite": "#ff9896"]
        let width = 120 + workloads.count * (engines.count * 2 * 14 + 30), height = 420
        let top = 40.0, bottom = 340.0
        let values = results.map(\.opsPerSecond).filter { $0 > 0 }
        let lo = floor(log10(values.min() ?? 1)), hi = ceil(log10(values.max() ?? 10))
        func y(_ v: Double) -> Double { bottom - (log10(max(v, 1)) - lo) / max(hi - lo, 1) * (bottom - top) }
        var out = ["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" font-family=\"sans-serif\" font-size=\"11\">",
                   "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>",
                   "<text x=\"10\" y=\"20\" font-size=\"14\">Strata record layer (dark) and raw C (light), ops/s, log scale — \(records) records</text>"]
        for e in stride(from: lo, through: hi, by: 1) {
            let yy = y(pow(10, e))
            out.append("<line x1=\"70\" x2=\"\(width - 10)\" y1=\"\(yy)\" y2=\"\(yy)\" stroke=\"#ddd\"/>")
            out.append("<text x=\"65\" y=\"\(yy + 4)\" text-anchor=\"end\">\(rate(pow(10, e)))</text>")
        }
        var x = 80.0
        for workload in workloads {
            let groupStart = x
            for engine in engines {
                for (layer, fill) in [(Layer.record, colours[engine] ?? "#888"), (Layer.raw, light[engine] ?? "#ccc")] {
                    if let r = results.first(where: { $0.engine == engine && $0.workload == workload && $0.layer == layer }) {
                        let top = y(r.opsPerSecond)
                        out.append("<rect x=\"\(x)\" y=\"\(top)\" width=\"12\" height=\"\(bottom - top)\" fill=\"\(fill)\"><title>\(engine) \(layer.rawValue) \(workload.rawValue): \(rate(r.opsPerSecond)) ops/s</title></rect>")
                    }
                    x += 14
                }
            }
            out.append("<text x=\"\((groupStart + x) / 2)\" y=\"\(bottom + 16)\" text-anchor=\"middle\">\(workload.rawValue)</text>")
            x += 30
        }
        for (i, engine) in engines.enumerated() {
            let lx = 80 + i * 110
            out.append("<rect x=\"\(lx)\" y=\"\(height - 40)\" width=\"12\" height=\"12\" fill=\"\(colours[engine] ?? "#888")\"/>")
            out.append("<text x=\"\(lx + 16)\" y=\"\(height - 30)\">\(engine)</text>")
        }
        out.append("</svg>")
        return out.joined(separator: "\n")
    }
}
