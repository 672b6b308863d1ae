import Foundation

/// A certificate authority for test clusters, made with the `openssl` command (Debian's
/// `openssl`): a self-signed CA and the certificates it issues, P-256 keys, PEM files in one
/// directory. Certificates name `127.0.0.1`, `::1` and `localhost` unless told other names, and
/// serve as both server and client certificates. Not for production: the keys are unencrypted files in a temporary directory.
public struct CertificateAuthority: Sendable {
    /// The directory of the files.
    public let directory: String
    /// The authority's own certificate: what a client or member that trusts it is given.
    public let certificateFile: String
    private let keyFile: String

    /// Makes an authority named `name` in `directory` (created if missing).
    public init(directory: String, name: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        certificateFile = "\(directory)/\(name).pem"
        keyFile = "\(directory)/\(name)-key.pem"
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", keyFile,
                     "-out", certificateFile, "-subj", "/CN=\(name)", "-days", "3650"])
    }

    /// Issues a certificate named `name` (its files `name.pem` and `name-key.pem`) for
    /// `commonName`, valid from now for `validDays` days; -1 makes one that expired a day ago
    /// (openssl takes no lower count). `names` are its subject alternative names (`IP:…`, `DNS:…`).
    public func issue(_ name: String, commonName: String, validDays: Int = 30,
                      names: [String] = ["IP:127.0.0.1", "IP:::1", "DNS:localhost"]) throws -> (certificate: String, key: String) {
        let certificate = "\(directory)/\(name).pem", key = "\(directory)/\(name)-key.pem"
        let request = "\(directory)/\(name).csr", extensions = "\(directory)/\(name).ext"
        try """
            basicConstraints = CA:FALSE
            keyUsage = digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth, clientAuth
            subjectAltName = \(names.joined(separator: ", "))

            """.write(toFile: extensions, atomically: true, encoding: .utf8)
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", request,
                     "-subj", "/CN=\(commonName)"])
        try openssl(["x509", "-req", "-in", request, "-CA", certificateFile, "-CAkey", keyFile, "-CAcreateserial",
                     "-CAserial", "\(directory)/serial", "-out", certificate, "-days", String(validDays), "-extfile", extensions])
        return (certificate, key)
    }
}

/// Runs `openssl` with `arguments`; its output is thrown when it fails.
private func openssl(_ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else {
        throw ClusterError("no openssl at /usr/bin/openssl: install the Debian package openssl")
    }
    process.arguments = arguments
    // Its output goes to a file, not a pipe: a process another thread starts meanwhile (an etcd
    // member) can inherit the pipe's write end, and reading to the end would wait for that
    // process to exit (a test run hung so, starting a cluster while another made certificates).
    let log = NSTemporaryDirectory() + "strata-openssl-\(UUID().uuidString).log"
    guard FileManager.default.createFile(atPath: log, contents: nil), let output = FileHandle(forWritingAtPath: log) else {
        throw ClusterError("cannot write \(log) for openssl's output")
    }
    defer { try? FileManager.default.removeItem(atPath: log) }
    process.standardOutput = output
    process.standardError = output
    try process.run()
    process.waitUntilExit()
    try? output.close()
    let text = FileManager.default.contents(atPath: log) ?? Data()
    guard process.terminationStatus == 0 else {
        throw ClusterError("openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(String(decoding: text, as: UTF8.self).suffix(600))")
    }
}
