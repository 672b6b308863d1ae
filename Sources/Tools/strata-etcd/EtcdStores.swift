import ArgumentParser
import Foundation
import StrataEngine
import StrataEtcd
import StrataStoreTools

/// The stores `strata-etcd stats | dump | verify | copy | backup` name: `etcd:PREFIX`, the store
/// at that key prefix on the cluster `--endpoints` reaches, or a directory as `strata` takes it
/// (so a copy can go from any engine to etcd and back).
struct EtcdStores: StoreLocator {
    static let scheme = "etcd:"
    static let passwordVariable = "STRATA_ETCD_PASSWORD"
    static let storeForms = "etcd:PREFIX (on the cluster --endpoints reaches) or a directory"

    @Option(help: "The etcd cluster's client URLs, comma-separated (for stores named etcd:PREFIX).")
    var endpoints: String?

    @Option(help: "A user of a cluster with authentication; the password is read from \(passwordVariable).")
    var user: String?

    @OptionGroup var tls: TLSOptions

    @Option(help: "The cluster's --max-txn-ops (a copy into etcd writes at most this minus 2 pairs per transaction).")
    var maxTxnOps = 128

    @Option(help: "The cluster's --max-request-bytes.")
    var maxRequestBytes = 1_572_864

    @Option(help: "Seconds a request to the cluster may take (failing over across the endpoints) before the tool gives up.")
    var timeout = 10

    func store(_ argument: String, engine: ToolEngine?) throws -> StoreLocation {
        guard let location = try etcdStore(argument, engine: engine) else { return try StoreLocation(directory: argument, engine: engine) }
        return location
    }

    func destination(_ argument: String, engine: ToolEngine?, source: StoreLocation) throws -> StoreLocation {
        guard let location = try etcdStore(argument, engine: engine) else {
            guard engine != nil || source.directory != nil else {
                throw ToolFailure("\(argument): an etcd store copied into a directory needs --to naming the directory's engine", status: ToolExit.usage)
            }
            return StoreLocation(name: argument, kind: engine?.kind ?? source.kind, path: argument, directory: argument)
        }
        return location
    }

    /// The etcd store `argument` names, or `nil` when it names a directory.
    private func etcdStore(_ argument: String, engine: ToolEngine?) throws -> StoreLocation? {
        guard argument.hasPrefix(Self.scheme) else { return nil }
        let prefix = String(argument.dropFirst(Self.scheme.count))
        guard engine == nil else {
            throw ToolFailure("\(argument) is an etcd store: --engine and --to name the engine of a directory", status: ToolExit.usage)
        }
        let urls = (endpoints ?? "").split(separator: ",").map(String.init)
        guard !urls.isEmpty else { throw ToolFailure("\(argument): say where the cluster is with --endpoints", status: ToolExit.usage) }
        // The tools never compact the cluster's history: that is the applications' and the
        // operators' policy (a copy adds one revision per transaction).
        let options = EtcdOptions(
            endpoints: urls, tls: tls.settings, user: user, password: user == nil ? nil : ProcessInfo.processInfo.environment[Self.passwordVariable],
            maxTransactionOperations: maxTxnOps, maxRequestBytes: maxRequestBytes, compaction: .none)
        let timeout = Duration.seconds(timeout)
        let kind = EngineKind(declaration: EtcdEngine.declaration(options)) { prefix in
            EngineConfiguration(name: "etcd", path: prefix) { engineOptions in
                var engineOptions = engineOptions
                engineOptions.timeout = timeout
                return try EtcdEngine(prefix: prefix, options: engineOptions, etcd: options)
            }
        }
        return StoreLocation(name: "\(argument) at \(urls.joined(separator: ","))", kind: kind, path: prefix, directory: nil)
    }
}
