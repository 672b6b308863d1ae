import ArgumentParser
import Foundation
import StrataConformance
@_spi(StrataInternals) import StrataEngine
import StrataCompression
import StrataEncryption
import StrataRecords
import StrataEtcd
import StrataEtcdCluster
import StrataRecordConformance
import StrataStoreTools

/// `strata-etcd`: Strata on etcd from the command line (a separate tool, so that `strata` and
/// `make run` never build the etcd engine).
@main
struct StrataEtcdTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-etcd",
        abstract: "Strata on an etcd cluster: the store tools, the conformance suite on a local or given cluster, and the benchmark.",
        subcommands: StoreTools<EtcdStores>.commands + [EtcdConformance.self, EtcdBench.self, EtcdConformancePeer.self, EtcdLoad.self]
    )
}

/// Where the cluster is and the limits it was started with.
struct ClusterOptions: ParsableArguments {
    @Option(help: "The cluster's client URLs, comma-separated (default: start a local cluster).")
    var endpoints: String?

    @Option(help: "Members of the local cluster started when no endpoints are given.")
    var members = 3

    @Option(help: "The cluster's --max-txn-ops.")
    var maxTxnOps = ConformanceLimits.operations

    @Option(help: "The cluster's --max-request-bytes.")
    var maxRequestBytes = ConformanceLimits.requestBytes

    @Option(help: "Seconds a dead writer's lock outlives it.")
    var leaseTTL = 5

    @OptionGroup var tls: TLSOptions

    /// The given endpoints (empty when none were given).
    var endpointList: [String] { (endpoints ?? "").split(separator: ",").map(String.init) }

    /// Options for `endpoints`, with the TLS files given, or else `local`'s.
    func options(endpoints: [String], local: LocalCluster? = nil) -> EtcdOptions {
        EtcdOptions(endpoints: endpoints, tls: tls.settings ?? local?.clientTLS, leaseTTL: leaseTTL,
                    maxTransactionOperations: maxTxnOps, maxRequestBytes: maxRequestBytes)
    }
}

/// The TLS files of `https://` endpoints, named as etcdctl names them.
struct TLSOptions: ParsableArguments {
    @Option(help: "A PEM file of the authorities that sign the members' certificates (default: the system's).")
    var cacert: String?

    @Option(help: "A PEM file of this client's certificate, for clusters that require one (with --key).")
    var cert: String?

    @Option(help: "The PEM file of --cert's private key.")
    var key: String?

    /// The settings the flags give, or `nil` when none is given.
    var settings: EtcdTLS? {
        cacert == nil && cert == nil && key == nil ? nil : EtcdTLS(caFile: cacert, certificateFile: cert, keyFile: key)
    }
}

/// The limits the conformance suite needs (its largest transactions); a local cluster is started with them.
enum ConformanceLimits {
    // The declaration case fills the writes limit with 1 KB values: 20,000 of them fit in a request.
    static let operations = 20_000
    static let requestBytes = 64 << 20
    static var flags: [String] { ["--max-txn-ops=\(operations)", "--max-request-bytes=\(requestBytes)"] }
}

struct EtcdConformance: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conformance", abstract: "Run the engine conformance suite and the record layer's cases on etcd.")

    @OptionGroup var cluster: ClusterOptions

    @Option(help: "Run only the cases whose group/name contains this text.")
    var filter: String?

    @Flag(help: "Print each case as it starts.")
    var verbose = false

    @Option(help: "Operations of the differential test (a random log checked against a model); 0 skips it.")
    var differential = 2_000

    @Option(help: "Run only the record cases, their values through these transforms, in order: compression (StrataCompression), encryption (StrataEncryption), comma-separated.")
    var transforms: String?

    @Flag(inversion: .prefixedNo, help: "Whether the local cluster speaks mutual TLS (--no-tls: cleartext, for runs about something else).")
    var tls = true

    @Option(help: "The observation cases' scale, OBSERVERS,COMMITS (every commit is a round trip: make test runs a small scale, make test-long the full one).")
    var observation = "1000,10000"

    func run() throws {
        let scale = observation.split(separator: ",").compactMap { Int($0) }
        guard scale.count == 2, scale[0] >= 3, scale[1] >= 2 else {
            throw ValidationError("--observation takes OBSERVERS,COMMITS (at least 3 observers and 2 commits), got \(observation)")
        }
        var local: LocalCluster?
        let endpoints: [String]
        if cluster.endpoints != nil {
            endpoints = cluster.endpointList
        } else {
            local = try LocalCluster(members: cluster.members, flags: ConformanceLimits.flags, tls: tls ? LocalCluster.TLS() : nil)
            endpoints = local!.endpoints
            print("started a local cluster of \(cluster.members): \(endpoints.joined(separator: ","))")
        }
        defer { local?.stop() }
        let options = cluster.options(endpoints: endpoints, local: local)
        let tool = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
        var subject = EngineUnderTest(
            .etcd(options),
            peer: ConformancePeer(executable: tool, arguments: EtcdConformancePeer.arguments(options)))
        subject.locations = EtcdLocations(keys: try EtcdKeySpace(options))
        let all = try transforms.map { RecordConformance.cases(transforms: try Self.transforms($0)) }
            ?? ConformanceSuite.cases + RecordConformance.cases
        let cases = RecordConformance.cases(all.filter { testCase in filter.map { testCase.id.contains($0) } ?? true },
                                            observation: ObservationScale(observers: scale[0], commits: scale[1]))
        let report = ConformanceSuite.run(subject, cases: cases) { testCase in
            if verbose { print("[etcd] \(testCase.id)"); fflush(nil) }
        }
        print(report.description)
        var failed = !report.failures.isEmpty || !report.skipped.isEmpty
        if differential > 0 {
            let outcome = DifferentialTest.run(subject, seed: 20_261_123, operations: differential)
            print(outcome)
            failed = failed || outcome.failure != nil
        }
        if failed { throw ExitCode.failure }
    }
}

extension EtcdConformance {
    /// The value transforms `list` names (`compression,encryption`), a random key for encryption.
    static func transforms(_ list: String) throws -> [any ValueTransform] {
        try list.split(separator: ",").map { name -> any ValueTransform in
            switch name {
            case "compression": return RecordCompression(minimumLength: 1)  // the cases' values are short: compress them all
            case "encryption": return RecordEncryption(key: .random())
            default: throw ValidationError("unknown transform \(name): compression or encryption")
            }
        }
    }
}

/// The conformance suite's second process on etcd.
struct EtcdConformancePeer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conformance-peer", abstract: "The conformance suite's second process (a test helper).", shouldDisplay: false)

    @OptionGroup var cluster: ClusterOptions
    @Argument var directory: String

    func run() throws {
        try ConformancePeer.serve(EngineUnderTest(.etcd(cluster.options(endpoints: cluster.endpointList))), commands: RecordConformance.peerCommands)
    }

    /// The arguments that start this command on the cluster `options` reaches.
    static func arguments(_ options: EtcdOptions) -> [String] {
        [
            "conformance-peer", "--endpoints", options.endpoints.joined(separator: ","),
            "--max-txn-ops", String(options.maxTransactionOperations), "--max-request-bytes", String(options.maxRequestBytes),
        ] + (options.tls?.toolArguments ?? [])
    }
}

/// The lifecycle cases' locations on etcd: a path is the key prefix of a store, an entry is a
/// key in its namespace (the prefix, a zero byte, the name), and the object at a path is the key
/// at the namespace's root (the prefix and a zero byte).
struct EtcdLocations: StoreLocations {
    let keys: EtcdKeySpace

    func entries(at path: String) throws -> [String]? {
        let namespace = EtcdKeySpace.namespace(ofPrefix: path)
        let found = try keys.keys(withPrefix: namespace)
        return found.isEmpty ? nil : found.map { String(decoding: $0.dropFirst(namespace.count), as: UTF8.self) }.sorted()
    }

    func writeEntry(_ bytes: [UInt8], named name: String, at path: String) throws {
        try keys.put(bytes, forKey: EtcdKeySpace.namespace(ofPrefix: path) + Array(name.utf8))
    }

    func readEntry(named name: String, at path: String) throws -> [UInt8]? {
        try keys.get(EtcdKeySpace.namespace(ofPrefix: path) + Array(name.utf8))
    }

    func writeObject(_ bytes: [UInt8], at path: String) throws {
        try keys.put(bytes, forKey: EtcdKeySpace.namespace(ofPrefix: path))
    }

    func readObject(at path: String) throws -> [UInt8]? {
        try keys.get(EtcdKeySpace.namespace(ofPrefix: path))
    }
}

/// `strata-etcd load`: a write load for the fault tests. Each transaction reads the counter
/// `c`, stores it plus one, and writes its own key `t/NAME/TASK/I`; an acknowledged transaction
/// prints `ack NAME/TASK/I`. Afterwards a checker holds the store to: the counter equals the
/// number of `t/` keys (no transaction partly applied or applied twice) and every acknowledged key
/// is there.
struct EtcdLoad: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "load", abstract: "A counter-and-log write load (a test helper).", shouldDisplay: false)

    @OptionGroup var cluster: ClusterOptions
    @Option(help: "The store's prefix.") var prefix: String
    @Option(help: "This process's name in the keys it writes.") var name: String
    @Option(help: "Concurrent tasks.") var tasks = 8
    @Option(help: "Transactions per task.") var transactions = 10
    @Option(help: "Seconds every request may take.") var timeout = 30

    func run() throws {
        let engine = try EtcdEngine(prefix: prefix, options: EngineOptions(mode: .openExisting, timeout: .seconds(timeout)),
                                    etcd: cluster.options(endpoints: cluster.endpointList))
        let output = Locked(())
        @Sendable func say(_ line: String) { output.withLock { _ in print(line); fflush(nil) } }
        DispatchQueue.concurrentPerform(iterations: tasks) { task in
            for i in 0..<transactions {
                let id = "\(name)/\(task)/\(i)"
                // After an unknown outcome the transaction may have happened: the retry looks for
                // its key first. After `mustRetry` (the engine says it did not) it runs blindly, so
                // an engine that said so wrongly leaves the counter ahead of the keys.
                var mayHaveHappened = false
                while true {
                    do {
                        try engine.write { tx in
                            if mayHaveHappened, try tx.exists(Array("t/\(id)".utf8)) { return }
                            let current = try tx.get(Array("c".utf8)).map { UInt64(String(decoding: $0, as: UTF8.self))! } ?? 0
                            try tx.put(Array(String(current + 1).utf8), forKey: Array("c".utf8))
                            try tx.put([1], forKey: Array("t/\(id)".utf8))
                        }
                        say("ack \(id)")
                        break
                    } catch {
                        // Not acknowledged: the transaction did not happen (mustRetry) or its outcome is
                        // unknown; either way the counter and the keys stay in step. Run it again.
                        say("retry \(id): \(error)")
                        if case EngineError.mustRetry = error {} else { mayHaveHappened = true }
                        Thread.sleep(forTimeInterval: 0.05)
                    }
                }
            }
        }
        try engine.close()
        say("done")
    }
}
