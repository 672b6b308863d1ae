/// The simplest store that can be right: a dictionary, sorted on every scan. It is the oracle
/// the differential test compares engines with, and shares no code with any engine.
struct ReferenceModel {
    private(set) var data: [[UInt8]: [UInt8]] = [:]

    /// What one operation returns, in a form both sides can produce and compare.
    enum Result: Equatable, CustomStringConvertible {
        case none
        case value([UInt8]?)
        case pairs([Pair])
        case count(Int)
        case replaced(Bool)
        case error(String)

        var description: String {
            switch self {
            case .none: return "ok"
            case let .value(v): return v.map(hex) ?? "nil"
            case let .pairs(p): return show(p)
            case let .count(n): return "removed \(n)"
            case let .replaced(r): return r ? "replaced" : "new"
            case let .error(e): return "error \(e)"
            }
        }
    }

    /// Applies `operation` to the model (writes change it) and returns its result.
    mutating func apply(_ operation: Operation) -> Result {
        switch operation {
        case let .put(k, v):
            data[k] = v
            return .none
        case let .putReportingReplaced(k, v):
            defer { data[k] = v }
            return .replaced(data[k] != nil)
        case let .delete(k):
            data[k] = nil
            return .none
        case let .clear(range):
            let doomed = data.keys.filter { referenceContains(range, $0) }
            for k in doomed { data[k] = nil }
            return .count(doomed.count)
        case let .get(k):
            return .value(data[k])
        case let .scan(range, reverse, limit):
            return .pairs(referenceScan(Array(data.keys), range, reverse: reverse, limit: limit).map { Pair($0, data[$0]!) })
        }
    }
}
