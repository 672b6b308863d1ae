/// An array that keeps its elements when emptied, for the lists a write fills and empties each
/// time (its index entries, its writes): emptying is setting a count, where `removeAll(keepingCapacity:)`
/// costs an unspecialized call of about 65 instructions per write. For elements without
/// references (stale ones past ``count`` keep nothing alive).
@usableFromInline
struct ReusedArray<Element> {
    @usableFromInline var storage: [Element] = []
    /// How many elements are in use: `storage[..<count]`.
    @usableFromInline private(set) var count = 0

    @inlinable init() {}

    @inlinable var indices: Range<Int> { 0..<count }

    @inlinable
    subscript(position: Int) -> Element {
        get { storage[position] }
        set { storage[position] = newValue }
    }

    @inlinable
    mutating func append(_ element: Element) {
        if count < storage.count { storage[count] = element } else { storage.append(element) }
        count += 1
    }

    @inlinable
    mutating func removeAll() { count = 0 }
}
