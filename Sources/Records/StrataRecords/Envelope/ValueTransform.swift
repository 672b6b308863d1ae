/// A reversible transform of a record's stored fields: the slot compression and encryption fill
/// (as the FoundationDB Record Layer's transformed serializer wraps its serializer).
/// `StrataEncryption`'s `RecordEncryption` is one; give them to
/// ``Store/init(_:mode:durability:transforms:)``.
///
/// A store's transforms form a chain applied in order on writes and reversed on reads; the
/// chain's names are stored in the store's manifest at creation and compared at every open, so a
/// store is never read or written without the transforms it was written with (as LevelDB stores
/// and checks its comparator's name). A store without transforms keeps its values as the
/// records wrote them.
///
/// Both directions receive the value's header: the record's key (its keyspace prefix included)
/// followed by the value's schema version as stored (its varint), so a transform can bind a value
/// to them: an authenticated cipher refuses a value moved to another key or given another
/// version. A covering index entry holds its record's sealed value and is read with the record's key. At open, each
/// transform is bound to the store (``bound(toStore:)``): a random salt drawn when the store was
/// made, which copies of the store keep, so a transform can refuse values of another store.
///
/// The checksum covers the transformed bytes: damaged bytes are refused before a transform sees
/// them. Bytes a transform refuses on a read are a ``RecordError/valueRefused(type:key:transform:reason:)``
/// naming the record.
public protocol ValueTransform: Sendable {
    /// The name stored in the manifest: two transforms of one name must read each other's bytes.
    /// A transform whose bytes depend on a setting (a cipher's key) names it, so a store opened
    /// with another setting is refused at open.
    var name: String { get }

    /// The transform to use for the store whose salt is `storeSalt` (16 random bytes drawn when
    /// the store was made). The default is `self`; a cipher derives the store's own key here.
    func bound(toStore storeSalt: [UInt8]) throws -> any ValueTransform

    /// Appends `fields`, transformed, to `output`; `header` is the record's key and the value's
    /// version, as stored.
    func apply(_ fields: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) throws

    /// Appends the fields `stored` was made from to `output`. Throws ``ValueTransformError`` for
    /// bytes ``apply(_:header:to:)`` did not make with `header` (any other error is reported as
    /// ``ValueTransformError/Kind/malformed``).
    func reverse(_ stored: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer, to output: inout [UInt8]) throws

    /// Whether this transform reads the bytes a transform named `storedName` wrote, though their
    /// names differ: a cipher given a new key and still holding the key `storedName` names. A
    /// store whose manifest names `storedName` then opens with this transform and begins a key
    /// rotation (``Store/rotateKeys(batchSize:onBatch:)``). The default: only its own name.
    /// Throws when it cannot tell now (a key provider that failed).
    func reads(valuesNamed storedName: String) throws -> Bool
}

extension ValueTransform {
    /// `self`: a transform that does not depend on the store.
    public func bound(toStore storeSalt: [UInt8]) throws -> any ValueTransform { self }

    /// Whether `storedName` is this transform's own name.
    public func reads(valuesNamed storedName: String) throws -> Bool { storedName == name }
}

/// Why a ``ValueTransform`` refused stored bytes.
public struct ValueTransformError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of refusal.
    public enum Kind: String, Sendable, Hashable {
        /// The bytes fail their authentication: altered, moved from another key or another store,
        /// or sealed under another key with the same identifier.
        case authenticationFailed = "authentication failed"
        /// The bytes were sealed under a key the transform does not hold.
        case missingKey = "missing key"
        /// The key the bytes need could not be had now (a key provider failed): the bytes may
        /// be sound.
        case keyUnavailable = "key unavailable"
        /// The bytes are not in the transform's format (too short, an unknown header).
        case malformed
    }

    /// What is wrong.
    public let kind: Kind
    /// The refusal in a sentence, for people.
    public let detail: String

    /// A refusal of `kind`, explained by `detail`.
    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { "\(kind.rawValue): \(detail)" }
}
