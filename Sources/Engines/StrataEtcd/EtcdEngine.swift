import Foundation
import StrataEngine

/// How to reach an etcd cluster, and the limits it was started with.
public struct EtcdOptions: Sendable, Hashable {
    /// The members' client URLs: `https://host:port` (TLS, verified as ``tls`` says) or
    /// `http://host:port` (cleartext: for loopback and private networks; a line on standard
    /// error says so once per process); all of one kind. Requests fail over from one to the next.
    /// One attempt lasts at most the request timeout's share per endpoint, between 1 and 5
    /// seconds, so a member that is frozen or cut off (its kernel still taking connections)
    /// delays a request by at most that before the next endpoint is tried.
    public var endpoints: [String]
    /// How `https://` members are verified and this client's certificate (mutual TLS); `nil` with
    /// `https://` endpoints: the system's trust store, no client certificate. Giving it with
    /// `http://` endpoints is refused (`EngineError.invalidArgument`): never a silent cleartext.
    public var tls: EtcdTLS?
    /// A user and password, when the cluster has authentication enabled. Sent only over TLS or to
    /// a loopback member: with `http://` endpoints on other hosts they are refused
    /// (`EngineError.invalidArgument`), since the password and the token would travel in clear.
    public var user: String?
    /// `user`'s password (`nil` is sent as empty; ignored without a user). A refused pair makes
    /// requests throw ``EtcdError/authenticationFailed(user:detail:)``.
    public var password: String?
    /// Seconds the writer lock outlives a process that died holding it (its lease's TTL): the
    /// longest a crashed writer holds up the others. Default: 10.
    public var leaseTTL: Int
    /// The cluster's `--max-txn-ops` (default 128). Two operations of each commit are the
    /// engine's own, so a transaction holds at most this minus 2 writes.
    public var maxTransactionOperations: Int
    /// The cluster's `--max-request-bytes` (default 1.5 MiB); the bytes a transaction may write
    /// are derived from it (as when keys and values travelled in base64 JSON: conservative for
    /// protobuf, and unchanged so that a transaction that fit before fits now and no more).
    public var maxRequestBytes: Int
    /// How much of the cluster's history the engine keeps (etcd keeps every revision until it is
    /// compacted, and refuses all writes once its space quota is full). Default: the last 100,000
    /// revisions.
    public var compaction: EtcdCompaction

    /// Options for the cluster at `endpoints` (client URLs, at least one), verified as `tls` says
    /// when they are `https://`, without authentication unless `user` is given. The other defaults are etcd's own server defaults
    /// (128 operations, 1.5 MiB requests), a 10-second lease and keeping the last 100,000
    /// revisions; give the cluster's actual `--max-txn-ops` and `--max-request-bytes` when it was
    /// started with others. The endpoints are parsed, and the cluster reached, only when an
    /// engine or an ``EtcdKeySpace`` uses the options.
    public init(
        endpoints: [String], tls: EtcdTLS? = nil, user: String? = nil, password: String? = nil, leaseTTL: Int = 10,
        maxTransactionOperations: Int = 128, maxRequestBytes: Int = 1_572_864, compaction: EtcdCompaction = .keepRevisions(100_000)
    ) {
        self.endpoints = endpoints
        self.tls = tls
        self.user = user
        self.password = password
        self.leaseTTL = leaseTTL
        self.maxTransactionOperations = maxTransactionOperations
        self.maxRequestBytes = maxRequestBytes
        self.compaction = compaction
    }

    /// The declared limits: what one etcd transaction of the configured cluster can carry.
    public var limits: EngineLimits {
        let operations = max(maxTransactionOperations - 2, 1)
        // Sized for the JSON gateway the engine spoke before gRPC: a fixed part (the lock compare,
        // the commit token, the lock release) and per write about 56 bytes of syntax plus the
        // base64 of the prefixed key and value. Protobuf takes less; the limits stay as they were.
        let perWrite = 56 + (EtcdEngine.maxPrefixLength + 2) * 4 / 3
        let bytes = max((maxRequestBytes - 2048 - operations * perWrite) * 3 / 4, 1)
        return EngineLimits(maxValueLength: bytes, maxOperationsPerTransaction: operations, maxBytesPerTransaction: bytes)
    }
}

/// Who compacts the history of an etcd cluster a Strata engine writes to.
///
/// etcd keeps every revision of every key until the cluster's history is compacted; its backend
/// grows with each write, and past its space quota (`--quota-backend-bytes`, 2 GiB by default)
/// the cluster refuses every write (`EngineError.diskFull(path:)`) until it is
/// compacted, defragmented and its alarm disarmed (``EtcdKeySpace/recoverSpace()``). Compaction
/// is cluster-wide: it also ends the history of other stores and programs on the cluster.
public enum EtcdCompaction: Sendable, Hashable {
    /// The engine never compacts: the cluster's own `--auto-compaction-mode` and
    /// `--auto-compaction-retention`, or an operator (`etcdctl compact`), must.
    case none
    /// After a commit, when the history has grown by a quarter of `revisions` since the engine
    /// last compacted, the engine compacts it to the last `revisions` revisions. A read
    /// transaction whose snapshot is older then throws ``EtcdError/snapshotCompacted(revision:)``.
    case keepRevisions(Int64)
}

/// A Strata engine on an etcd 3.4+ cluster: the same records, queries and tests as the
/// embedded engines, replicated by Raft and shared by processes on any number of hosts.
///
/// ## How the contract is kept
/// - **Where the store is.** A store is a key prefix: it owns the etcd keys that begin with the
///   prefix and a zero byte (so `app` and `app2` never overlap), and writes a marker key there
///   that every open checks. Keys in the namespace that no Strata store wrote make opening
///   throw `EngineError.notAStore(path:reason:)`, untouched.
/// - **Reads** run at one etcd revision, taken when the transaction begins: a true snapshot,
///   also across hosts. A snapshot that the cluster compacts while it is read throws
///   ``EtcdError/snapshotCompacted(revision:)``.
/// - **Writes** take the store's writer lock (a key on this engine's lease, kept alive by a
///   thread while the engine is open), read at the revision they took it at, buffer their writes
///   (the core overlays them on reads) and commit in one etcd transaction that applies only if
///   the lock is still theirs, writes a commit token and frees the lock. Writers of other
///   processes and hosts wait for the lock; the transaction's closure runs once. A writer that
///   dies holding the lock holds up the others for at most ``EtcdOptions/leaseTTL`` seconds.
/// - **Unknown outcomes.** When a commit's answer is lost (timeout, leader change, broken
///   connection), the engine reads its commit token and the lock: the token means it applied;
///   the lock still ours means it has not, and the same request is sent again (only one copy
///   can apply); neither means it never will (`mustRetry`). Unresolved before the timeout, the
///   commit throws ``EtcdError/commitOutcomeUnknown(detail:)``, never a silent success.
/// - **Limits** (``EtcdOptions/limits``): at most `maxTransactionOperations - 2` writes and
///   the bytes a request of `maxRequestBytes` can carry per transaction; crossing one throws
///   `transactionTooLarge` at the write that crosses it, before anything is sent. A record's
///   index entries are writes of its transaction too: load and delete many records in batches.
///   A range clear deletes key by key (each deleted key is a write).
/// - **History** is compacted by the engine as ``EtcdOptions/compaction`` says (by default to
///   the last 100,000 revisions); compaction frees space for reuse, and defragmentation
///   (``EtcdKeySpace/recoverSpace()``) gives it back to the file system.
/// - **Durability** is etcd's (every commit is in a majority of members' logs);
///   `Durability` does not change it. `EngineOptions.timeout`
///   bounds every request and the wait for the writer lock (then `locked`).
/// - **Transport:** etcd's gRPC API over HTTP/2 (grpc-swift), TLS for `https://` endpoints with
///   the members' certificates verified and, for clusters that require it, a client certificate
///   (``EtcdTLS``).
public final class EtcdEngine: CoreBackedEngine, Sendable {
    /// The longest prefix, in UTF-8 bytes (it is part of every key, against etcd's request size).
    public static let maxPrefixLength = 256

    /// The core engine, over etcd storage that buffers its writes (`readsOwnWrites: false`) and
    /// claims the store by its endpoints and prefix, so opening it twice in one process throws.
    public let core: CoreEngine
    /// The store's key prefix.
    public let prefix: String
    /// The cluster options the engine was opened with; its declared limits derive from them.
    public let etcdOptions: EtcdOptions
    private let storage: EtcdStorage

    /// The declaration of an engine with `options`.
    public static func declaration(_ options: EtcdOptions) -> EngineDeclaration {
        EngineDeclaration(name: "etcd", capabilities: [.persistent, .multiProcess], limits: options.limits, readsOwnWrites: false)
    }

    /// A watch of the store's commit tokens, which every commit of another engine instance (in
    /// this process, another, on another host) writes: it wakes observers as that commit applies.
    public func makeCommitSignal() -> (any CommitSignal)? {
        EtcdCommitSignal(client: storage.client, layout: storage.layout, instance: storage.instance)
    }

    /// Opens (or creates, with `.create`) the store at `prefix` on the cluster.
    public convenience init(prefix: String, options: EngineOptions = EngineOptions(), etcd: EtcdOptions) throws {
        try self.init(prefix: prefix, options: options, etcd: etcd, wrappingTransport: { $0 })
    }

    /// Opens the store with its transport wrapped by `wrap`: the seam where the tests put a
    /// transport with faults (lost requests and answers, failed lock releases, answers that hide
    /// a commit's token, attempts that ignore their deadline; the product never links one).
    init(prefix: String, options: EngineOptions, etcd: EtcdOptions,
         wrappingTransport wrap: (any EtcdTransport) -> any EtcdTransport) throws {
        guard !prefix.isEmpty, prefix.utf8.count <= Self.maxPrefixLength else {
            throw EngineError.invalidArgument("an etcd store's prefix is 1...\(Self.maxPrefixLength) bytes, not \(prefix.utf8.count)")
        }
        self.prefix = prefix
        self.etcdOptions = etcd
        // Opens no connection yet: nothing to release if the claim below fails.
        let client = try EtcdClient(etcd, timeout: options.timeout, wrapping: wrap)
        var opened: EtcdStorage?
        let identity = "etcd://" + client.endpoints.map(\.description).sorted().joined(separator: ",") + "/" + prefix
        core = try CoreEngine(declaration: Self.declaration(etcd), path: prefix, options: options, claiming: identity) { context in
            do {
                let storage = try EtcdStorage(client: client, cluster: (etcd, context.options.timeout), prefix: prefix, mode: context.options.mode,
                                              leaseTTL: etcd.leaseTTL, compaction: etcd.compaction)
                opened = storage
                return storage
            } catch {
                client.close()
                throw error
            }
        }
        storage = opened!
    }
}

extension EngineConfiguration {
    /// The store at `prefix` on the etcd cluster `options` reaches; see ``EtcdEngine``.
    public static func etcd(prefix: String, options: EtcdOptions) -> EngineConfiguration {
        EngineConfiguration(name: "etcd", path: prefix) { try EtcdEngine(prefix: prefix, options: $0, etcd: options) }
    }
}

extension EngineKind {
    /// etcd stores on the cluster `options` reaches, a store's path being its key prefix (tests
    /// and tools that name stores by directory get one namespace per directory).
    public static func etcd(_ options: EtcdOptions) -> EngineKind {
        EngineKind(declaration: EtcdEngine.declaration(options)) { .etcd(prefix: $0, options: options) }
    }
}
