@_spi(StrataInternals) import StrataEngine

/// A write transaction's changes whose kinds, insert or update, are told as its body returns, by
/// one ordered walk of the state it began from (``StartStateReading``), instead of by a read of
/// each key as it is put. Used on storage that buffers its writes (LevelDB, etcd) when the change
/// feed or a ``TransactionObserver`` needs kinds: there, a read per put cost more than the put.
///
/// Every change the transaction records is listed here from its first, since a put's kind depends
/// on the changes of its key before it in the transaction: after a put it replaces (an update),
/// after a delete it does not (an insert). Only a key whose first change is an undecided put is
/// looked up in the starting state. Every record write that makes or removes a key records its
/// change (``TransactionContext/recordChange(_:key:_:record:kindLater:)``); writes that record
/// none (a migration's rewrite, a format upgrade) leave the key as it was.
@usableFromInline
struct DeferredKinds {
    /// One recorded change: its kind (`nil`: undecided), and where it went: the offset of its
    /// kind byte in the feed's chunks and its place in the observers' list (-1: not there).
    /// 24 bytes, beside its key's bytes and their end (8).
    struct Change {
        var logged: Int
        var listed: Int
        var kind: RecordChange.Kind?
    }

    /// The storage's reader of the starting state.
    let start: any StartStateReading
    /// Every change's full key (keyspace prefix included), in the order made.
    private var keys = PackedKeys()
    private var changes: [Change] = []
    /// How many changes are undecided.
    private var undecided = 0

    init(start: any StartStateReading) { self.start = start }

    /// Lists a change of the record stored as `key` (prefix included), with its kind or `nil`
    /// when it is a put whose kind is to be told.
    @usableFromInline
    mutating func record(key: UnsafeRawBufferPointer, _ kind: RecordChange.Kind?, logged: Int, listed: Int) {
        keys.append(key)
        changes.append(Change(logged: logged, listed: listed, kind: kind))
        if kind == nil { undecided += 1 }
    }

    /// Tells the undecided changes' kinds: hands each that is an update to `decide`, with where
    /// it went (an undecided change was recorded as an insert).
    func resolve(_ decide: (Change, RecordChange.Kind) -> Void) throws {
        guard undecided > 0 else { return }
        let keys = self.keys
        let (order, firsts, asked) = keys.withBytes { packed in
            let compare = { (a: Int, b: Int) in
                Bytewise.compare(UnsafeRawBufferPointer(rebasing: packed[keys.range(of: a)]), UnsafeRawBufferPointer(rebasing: packed[keys.range(of: b)]))
            }
            // The changes by key, and in order within a key. A transaction that writes keys in
            // ascending order, each once (a fill), is in that order already; if its changes are
            // all undecided puts, the keys are asked as they are (`order` and `firsts` empty).
            let sorted = changes.indices.dropFirst().allSatisfy { compare($0 - 1, $0) < 0 }
            if sorted && undecided == changes.count { return ([Int](), [Int](), keys) }
            var order = Array(changes.indices)
            if !sorted {
                order.sort { a, b in
                    let c = compare(a, b)
                    return c != 0 ? c < 0 : a < b
                }
            }
            // Where each key's run of changes starts in `order`, and the keys whose first change
            // is undecided: what the starting state must tell.
            var firsts: [Int] = []
            var asked = PackedKeys()
            for (position, change) in order.enumerated() where position == 0 || compare(order[position - 1], change) != 0 {
                firsts.append(position)
                if changes[change].kind == nil { asked.append(UnsafeRawBufferPointer(rebasing: packed[keys.range(of: change)])) }
            }
            return (order, firsts, asked)
        }
        if order.isEmpty {  // a fill: every change undecided, one per key, in key order
            for (change, held) in zip(changes, try start.keysHeld(atStart: asked)) where held { decide(change, .update) }
            return
        }
        let held = try start.keysHeld(atStart: asked)
        var next = 0
        for (run, first) in firsts.enumerated() {
            let end = run + 1 < firsts.count ? firsts[run + 1] : order.count
            var present = false
            if changes[order[first]].kind == nil {
                present = held[next]
                next += 1
            }
            for i in order[first..<end] {
                if let kind = changes[i].kind {
                    present = kind != .delete
                } else {
                    if present { decide(changes[i], .update) }
                    present = true
                }
            }
        }
    }
}
