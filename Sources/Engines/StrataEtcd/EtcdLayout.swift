import StrataEngine

/// Where a store's keys live in the cluster's one key space.
///
/// A store at prefix `P` owns every etcd key that begins with `P` followed by a zero byte (its
/// namespace `N`), so stores at `app` and `app2`, or `a` and `a/b`, never share a key:
///
/// | etcd key              | holds                                                                |
/// |-----------------------|----------------------------------------------------------------------|
/// | `N 00 "store"`        | the marker: ``EtcdLayout/format``, checked at every open             |
/// | `N 00 "lock"`         | the writer lock: the running write transaction's token, on its lease |
/// | `N 00 "commit/" ID`   | the last commit token of the engine instance `ID`, on its lease      |
/// | `N 01 key`            | the store's key `key` with its value                                 |
///
/// Anything else in the namespace is foreign: opening refuses it with ``EngineError/notAStore(path:reason:)``.
struct EtcdLayout: Sendable {
    /// The marker's value: the layout's name and version. Another value is another format.
    static let format: [UInt8] = Array("strata-etcd 1".utf8)

    let namespace: [UInt8]

    init(prefix: String) {
        namespace = Array(prefix.utf8) + [0]
    }

    var marker: [UInt8] { namespace + [0] + Array("store".utf8) }
    var lock: [UInt8] { namespace + [0] + Array("lock".utf8) }
    func commit(instance: String) -> [UInt8] { namespace + [0] + Array("commit/\(instance)".utf8) }

    /// The etcd key of the store's key `key`.
    func data(_ key: UnsafeRawBufferPointer) -> [UInt8] {
        var result = namespace
        result.reserveCapacity(namespace.count + 1 + key.count)
        result.append(1)
        result.append(contentsOf: key)
        return result
    }

    /// The store's key of the etcd key `key` (which is in the data part).
    func storeKey(_ key: [UInt8]) -> ArraySlice<UInt8> { key[(namespace.count + 1)...] }

    /// The end of the namespace (exclusive).
    var namespaceEnd: [UInt8] { successorOfPrefix(namespace) }

    /// The etcd `[key, range_end)` of a resolved range of store keys.
    func bounds(_ range: ResolvedRange) -> (start: [UInt8], end: [UInt8]) {
        var start = namespace + [1]
        if let lower = range.lower {
            start += lower.key
            if !lower.inclusive { start.append(0) }
        }
        var end: [UInt8]
        if let upper = range.upper {
            end = namespace + [1] + upper.key
            if upper.inclusive { end.append(0) }
        } else {
            end = namespace + [2]
        }
        return (start, end)
    }
}

/// The first key after every key that begins with `prefix` (etcd's `range_end` for a prefix).
func successorOfPrefix(_ prefix: [UInt8]) -> [UInt8] {
    var end = prefix
    while let last = end.last {
        if last < 0xFF {
            end[end.count - 1] = last + 1
            return end
        }
        end.removeLast()
    }
    return [0]  // etcd: "\0" as range_end means "to the end of the key space"
}
