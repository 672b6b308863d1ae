/// How a store is opened.
public enum OpenMode: Sendable, Hashable {
    /// Open the store at the path, creating the directory and an empty store when missing.
    case create
    /// Open an existing store; fail with ``EngineError/notFound(path:)`` otherwise, writing nothing.
    case openExisting
    /// Open an existing store for reading only; write transactions throw ``EngineError/readOnly(path:)``.
    case readOnly
}

/// When a commit reaches the disk.
///
/// A killed *process* loses no committed transaction under either setting: the operating
/// system's page cache survives it. The settings differ on a crash of the *machine*
/// (power loss, kernel panic), which a process kill does not model.
///
/// | setting  | LMDB                     | LevelDB               | SQLite (WAL)          |
/// |----------|--------------------------|-----------------------|-----------------------|
/// | `full`   | fsync data and meta page | `sync = true` writes  | `synchronous = FULL`  |
/// | `relaxed`| `MDB_NOMETASYNC`         | `sync = false` writes | `synchronous = NORMAL`|
public enum Durability: Sendable, Hashable {
    /// Every commit is on disk when `write` returns. The default.
    case full
    /// Commits are handed to the operating system without waiting for the disk: a machine
    /// crash may lose the latest commits (never a part of one). For bulk loads.
    case relaxed
}

/// Options shared by every engine. Engine-specific settings live in each adapter's own options.
public struct EngineOptions: Sendable, Hashable {
    /// Whether opening may create the store and whether it may be written.
    public var mode: OpenMode
    /// When a commit reaches the disk.
    public var durability: Durability
    /// How long a primitive may block on I/O that another party holds up (another process's
    /// write lock, a network round trip) before it gives up with an error. Default: 60 s.
    /// Waiting for another writer of the same process is not bounded by it.
    public var timeout: Duration

    /// Options that, unless given, create the store when missing (``OpenMode/create``), sync every
    /// commit (``Durability/full``) and give up on blocked I/O after 60 seconds.
    public init(mode: OpenMode = .create, durability: Durability = .full, timeout: Duration = .seconds(60)) {
        self.mode = mode
        self.durability = durability
        self.timeout = timeout
    }
}
