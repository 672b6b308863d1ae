/// The limits an engine enforces. The core checks them before a primitive runs, so crossing one
/// throws a typed error at the operation that crossed it and writes nothing.
public struct EngineLimits: Sendable, Hashable {
    /// The longest key in bytes. Every bundled engine declares ``KeyLimits/maxKeyLength`` (511),
    /// so that data always moves between them.
    public var maxKeyLength: Int
    /// The longest value in bytes, or `nil` for no limit of the engine's own.
    public var maxValueLength: Int?
    /// The most writes (`put`, `delete`, `clear`) in one transaction, or `nil`.
    public var maxOperationsPerTransaction: Int?
    /// The most key and value bytes written in one transaction, or `nil`.
    public var maxBytesPerTransaction: Int?

    /// Keys of at most `maxKeyLength` bytes (default ``KeyLimits/maxKeyLength``, 511, which every
    /// bundled engine keeps); each other limit is `nil`, no limit, unless given.
    public init(
        maxKeyLength: Int = KeyLimits.maxKeyLength, maxValueLength: Int? = nil,
        maxOperationsPerTransaction: Int? = nil, maxBytesPerTransaction: Int? = nil
    ) {
        self.maxKeyLength = maxKeyLength
        self.maxValueLength = maxValueLength
        self.maxOperationsPerTransaction = maxOperationsPerTransaction
        self.maxBytesPerTransaction = maxBytesPerTransaction
    }
}

/// What an engine built on ``CoreEngine`` is: its name, what it can do, its limits, and how its
/// storage behaves. Declared once per adapter; the conformance suite checks it against behaviour.
public struct EngineDeclaration: Sendable, Hashable {
    /// A short lowercase name of the storage library, such as `"lmdb"`.
    public var name: String
    /// What the engine can legitimately lack; conformance cases that need a capability it does
    /// not declare are skipped.
    public var capabilities: EngineCapabilities
    /// The sizes the engine accepts; the core enforces them before a primitive runs.
    public var limits: EngineLimits
    /// Whether the storage's write transactions see their own writes. When `false`, the core
    /// keeps an overlay of the pending writes (see ``BufferedStorageWriteTransaction``).
    public var readsOwnWrites: Bool
    /// A file the store's directory always holds (e.g. `data.mdb`): the core prepares and checks
    /// the directory and claims the path. `nil` for storage without a directory (memory, network).
    public var marker: String?

    /// A declaration with, unless given, the default ``EngineLimits`` (511-byte keys, nothing
    /// else), storage that reads its own writes, and no marker file (no store directory).
    public init(name: String, capabilities: EngineCapabilities, limits: EngineLimits = EngineLimits(),
                readsOwnWrites: Bool = true, marker: String? = nil) {
        self.name = name
        self.capabilities = capabilities
        self.limits = limits
        self.readsOwnWrites = readsOwnWrites
        self.marker = marker
    }
}
