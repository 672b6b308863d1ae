import StrataEtcd

// How a client reaches a local cluster: written once for the tools and the tests.

extension LocalCluster {
    /// Settings that trust the cluster's authority and offer its client certificate; `nil` for a
    /// cleartext cluster.
    public var clientTLS: EtcdTLS? {
        certificates.map { EtcdTLS(caFile: $0.caFile, certificateFile: $0.clientCertificateFile, keyFile: $0.clientKeyFile) }
    }
}

extension EtcdTLS {
    /// The flags of `strata-etcd` (etcdctl's names) that give these settings to another run of the tool.
    public var toolArguments: [String] {
        (caFile.map { ["--cacert", $0] } ?? []) + (certificateFile.map { ["--cert", $0] } ?? []) + (keyFile.map { ["--key", $0] } ?? [])
    }
}
