/// A reversible transform of a record's stored fields: the slot compression and encryption fill
/// (as the FoundationDB Record Layer's transformed serializer wraps its serializer).
///
/// A store's transforms form a chain applied in order on writes and reversed on reads
/// (``RecordEnvelope``); the chain's names are stored in the store's manifest at creation and
/// compared at every open, so a store is never read or written without the transforms it was
/// written with (as LevelDB stores and checks its comparator's name). None ships yet: stores
/// have an empty chain, and their values are the fields as the record wrote them.
///
/// Both directions receive the record's key, so a transform can bind a value to it (an
/// authenticated cipher refuses a value moved to another key). A covering index entry holds
/// its record's sealed value and is read with the record's key.
@usableFromInline
protocol ValueTransform: Sendable {
    /// The name stored in the manifest; two transforms of one name must read each other's bytes.
    var name: String { get }
    /// Appends `fields`, transformed, to `output`.
    func apply(_ fields: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, to output: inout [UInt8]) throws
    /// Appends the fields `stored` was made from to `output`; throws for bytes ``apply(_:key:to:)``
    /// did not make for `key`.
    func reverse(_ stored: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, to output: inout [UInt8]) throws
}
