import Foundation
@_spi(StrataInternals) import StrataEngine

#if canImport(Glibc)
import Glibc
#endif

/// An etcd cluster of `members` processes on loopback, for tests, benchmarks and trying Strata
/// on etcd: free ports, a temporary data directory per member, every member stopped by its PID.
///
/// By default the cluster speaks TLS on both its client and its peer ports and requires client
/// certificates (mutual TLS), with certificates made for it by `openssl` (``certificates``); its
/// endpoints are `https://`. `tls: nil` starts a cleartext cluster.
///
/// Members are also stopped when this process exits normally (an `atexit` hook) and, should it
/// be killed, by a watchdog beside each member that stops it within a second of this process's
/// death: a failed or crashed test run leaves no etcd behind.
///
/// `@unchecked Sendable`: `pids` changes only in `stop`/`start` calls, which take the process-wide registry lock.
public final class LocalCluster: @unchecked Sendable {
    /// One member: its name, ports, data directory and process.
    public struct Member: Sendable {
        /// The member's etcd `--name`: `m0`, `m1`, … by position.
        public let name: String
        /// The loopback port clients (the engine) connect to.
        public let clientPort: Int
        /// The loopback port the members replicate over.
        public let peerPort: Int
        /// The loopback port of the member's `/health` and `/metrics`, in cleartext.
        public let metricsPort: Int
        /// Whether its client and peer ports speak TLS.
        public let secure: Bool
        /// The member's `--data-dir`, under the cluster's temporary directory; removed by
        /// ``LocalCluster/stop()``.
        public let dataDirectory: String
        /// The member's client URL, `https://127.0.0.1:` (or `http://`) and ``clientPort``: an
        /// endpoint for `EtcdOptions`.
        public var clientURL: String { "\(scheme)://127.0.0.1:\(clientPort)" }
        var peerURL: String { "\(scheme)://127.0.0.1:\(peerPort)" }
        private var scheme: String { secure ? "https" : "http" }
    }

    /// The members, member `i` at index `i` (as ``pid(_:)``, ``kill(_:)`` and ``restart(_:)``
    /// number them); their ports are fixed once the initializer returns.
    public private(set) var members: [Member]
    private var pids: [Int32?]
    private let flags: [String]
    private let root: String
    private let executable: String

    /// The client URLs of every member.
    public var endpoints: [String] { members.map(\.clientURL) }

    /// The certificates of a TLS cluster (`nil` for a cleartext one): the authority clients
    /// trust, and a client certificate the members accept.
    public let certificates: Certificates?

    /// How a cluster speaks TLS.
    public struct TLS: Sendable {
        /// Whether the members require a client certificate (etcd's `--client-cert-auth`).
        public var clientCertificates: Bool
        /// Whether the members' certificate expired yesterday (for tests of the clients' checks;
        /// a single member only, since members verify each other's certificates).
        public var expiredServerCertificate: Bool
        /// The names the members' certificate carries (`IP:…`, `DNS:…`); `nil`: loopback's.
        public var serverNames: [String]?

        /// Mutual TLS with valid certificates for loopback, unless told otherwise.
        public init(clientCertificates: Bool = true, expiredServerCertificate: Bool = false, serverNames: [String]? = nil) {
            self.clientCertificates = clientCertificates
            self.expiredServerCertificate = expiredServerCertificate
            self.serverNames = serverNames
        }
    }

    /// The files of a TLS cluster's certificates (PEM), in its temporary directory.
    public struct Certificates: Sendable {
        /// The authority that signed every certificate of the cluster: what clients trust.
        public let caFile: String
        /// A client certificate the members accept.
        public let clientCertificateFile: String
        /// The private key of ``clientCertificateFile``.
        public let clientKeyFile: String
        /// The authority itself, to issue more certificates (``CertificateAuthority/issue(_:commonName:validDays:names:)``).
        public let authority: CertificateAuthority
    }

    /// Starts `count` members with etcd's extra command-line `flags` (such as
    /// `--max-txn-ops=10000`), over TLS as `tls` says (`nil`: cleartext), and waits until every
    /// one answers.
    public init(members count: Int, flags: [String] = [], tls: TLS? = TLS(), etcd executable: String = "/usr/bin/etcd") throws {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ClusterError("no etcd at \(executable): install the Debian package etcd-server")
        }
        self.executable = executable
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("strata-etcd-\(UUID().uuidString)").path
        self.root = root
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var flags = flags
        if let tls {
            let authority = try CertificateAuthority(directory: "\(root)/tls", name: "strata-test-ca")
            let server = try tls.serverNames.map { try authority.issue("member", commonName: "member", validDays: 30, names: $0) }
                ?? authority.issue("member", commonName: "member", validDays: tls.expiredServerCertificate ? -1 : 30)
            let client = try authority.issue("client", commonName: "client")
            certificates = Certificates(caFile: authority.certificateFile, clientCertificateFile: client.certificate,
                                        clientKeyFile: client.key, authority: authority)
            flags = [
                "--cert-file", server.certificate, "--key-file", server.key, "--trusted-ca-file", authority.certificateFile,
                "--peer-cert-file", server.certificate, "--peer-key-file", server.key, "--peer-trusted-ca-file", authority.certificateFile,
                "--peer-client-cert-auth",
            ] + (tls.clientCertificates ? ["--client-cert-auth"] : []) + flags
        } else {
            certificates = nil
        }
        self.flags = flags
        let secure = tls != nil
        func pickMembers() throws -> [Member] {
            let ports = try freePorts(3 * count)
            return (0..<count).map { i in
                Member(name: "m\(i)", clientPort: ports[3 * i], peerPort: ports[3 * i + 1], metricsPort: ports[3 * i + 2], secure: secure,
                       dataDirectory: "\(root)/m\(i)")
            }
        }
        members = try pickMembers()
        pids = Array(repeating: nil, count: count)
        LocalCluster.register(self)
        // A free port is only free until something binds it: another program (or another
        // cluster of this process) may take one between the pick and etcd's bind. Then the
        // members start again on new ports.
        var attempt = 1
        while true {
            do {
                for i in members.indices { try start(i, state: "new") }
                for i in members.indices { try waitUntilServing(i) }
                return
            } catch let error as ClusterError where error.description.contains("address already in use") && attempt < 5 {
                stopMembers()
                for member in members { try? FileManager.default.removeItem(atPath: member.dataDirectory) }
                members = try pickMembers()
                attempt += 1
            } catch {
                stop()
                throw error
            }
        }
    }

    deinit { stop() }

    /// The process ID of member `i` while it runs.
    public func pid(_ i: Int) -> Int32? { pids[i] }

    /// Starts member `i` again after ``kill(_:)`` (it rejoins with its data directory).
    public func restart(_ i: Int) throws {
        try start(i, state: "existing")
        try waitUntilServing(i)
    }

    /// Kills member `i` with SIGKILL and waits for it to die.
    public func kill(_ i: Int) {
        guard let pid = pids[i] else { return }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pids[i] = nil
    }

    /// Stops every member (SIGTERM, then SIGKILL after two seconds) and removes the data.
    public func stop() {
        stopMembers()
        LocalCluster.unregister(self)
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Stops every running member: SIGTERM, then SIGKILL after two seconds.
    private func stopMembers() {
        for i in pids.indices {
            guard let pid = pids[i] else { continue }
            Glibc.kill(pid, SIGTERM)
            var status: Int32 = 0
            var waited = 0
            while waitpid(pid, &status, WNOHANG) == 0 {
                if waited >= 200 {
                    Glibc.kill(pid, SIGKILL)
                    waitpid(pid, &status, 0)
                    break
                }
                usleep(10_000)
                waited += 1
            }
            pids[i] = nil
        }
    }

    // MARK: Members

    private func start(_ i: Int, state: String) throws {
        let member = members[i]
        let cluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
        let arguments = [
            "--name", member.name, "--data-dir", member.dataDirectory,
            "--listen-client-urls", member.clientURL, "--advertise-client-urls", member.clientURL,
            "--listen-peer-urls", member.peerURL, "--initial-advertise-peer-urls", member.peerURL,
            "--listen-metrics-urls", "http://127.0.0.1:\(member.metricsPort)",
            "--initial-cluster", cluster, "--initial-cluster-state", state,
            "--initial-cluster-token", URL(fileURLWithPath: root).lastPathComponent,
            "--log-level", "warn",
        ] + flags
        let log = "\(root)/\(member.name).log"
        let pid = try spawn(executable, arguments, log: log)
        pids[i] = pid
        // The watchdog: stops the member within a second of this process's death.
        _ = try? spawn("/bin/sh", ["-c", "while kill -0 \(getpid()) 2>/dev/null && kill -0 \(pid) 2>/dev/null; do sleep 1; done; kill -9 \(pid) 2>/dev/null"], log: "/dev/null")
    }

    private func waitUntilServing(_ i: Int) throws {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if answers(port: members[i].metricsPort) { return }
            if let pid = pids[i] {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid {
                    pids[i] = nil
                    let log = (try? String(contentsOfFile: "\(root)/\(members[i].name).log", encoding: .utf8)) ?? ""
                    throw ClusterError("etcd member \(members[i].name) exited at start: \(log.suffix(800))")
                }
            }
            usleep(50_000)
        }
        throw ClusterError("etcd member \(members[i].name) did not answer within 30 s")
    }

    /// Whether the member's `/health` says so (a leader is known), on its cleartext metrics port.
    private func answers(port: Int) -> Bool {
        guard let fd = connectLoopback(port) else { return false }
        defer { close(fd) }
        let request = Array("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return false }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            response += chunk[0..<n]
        }
        return String(decoding: response, as: UTF8.self).contains("\"health\":\"true\"")
    }

    // MARK: Stopping members when this process exits

    /// The clusters this process started and has not stopped, and whether the exit hook is set.
    private static let registry = Locked<(running: [ObjectIdentifier: LocalCluster], hooked: Bool)>(([:], false))

    private static func register(_ cluster: LocalCluster) {
        registry.withLock { registry in
            registry.running[ObjectIdentifier(cluster)] = cluster
            if !registry.hooked {
                registry.hooked = true
                atexit { LocalCluster.stopAll() }
            }
        }
    }

    private static func unregister(_ cluster: LocalCluster) {
        registry.withLock { _ = $0.running.removeValue(forKey: ObjectIdentifier(cluster)) }
    }

    private static func stopAll() {
        let clusters = registry.withLock { Array($0.running.values) }
        for cluster in clusters { cluster.stop() }
    }
}

/// A cluster that could not be started.
public struct ClusterError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Starts `executable` with `arguments`, its output appended to `log`, in a process group of its
/// own (a terminal's Ctrl-C reaches the test runner, which stops the members itself).
/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later; not in Swift's Glibc
/// module): the child closes every descriptor from the one given on.
private let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()

private func spawn(_ executable: String, _ arguments: [String], log: String) throws -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_APPEND | O_CREAT, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    // Nothing else of this process's: a member holding the write end of another thread's pipe
    // would keep that pipe's reader from its end of file for as long as the member runs.
    _ = closeFrom?(&actions, 3)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
    posix_spawnattr_setpgroup(&attributes, 0)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for arg in argv { free(arg) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
    guard rc == 0 else { throw ClusterError("cannot start \(executable): \(String(cString: strerror(rc)))") }
    return pid
}

/// `count` distinct TCP ports that were free a moment ago.
private func freePorts(_ count: Int) throws -> [Int] {
    var sockets: [Int32] = []
    defer { for fd in sockets { close(fd) } }
    var ports: [Int] = []
    for _ in 0..<count {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClusterError("socket: \(String(cString: strerror(errno)))") }
        sockets.append(fd)
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw ClusterError("bind: \(String(cString: strerror(errno)))") }
        ports.append(Int(UInt16(bigEndian: address.sin_port)))
    }
    return ports
}

private func connectLoopback(_ port: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    var timeout = timeval(tv_sec: 1, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = loopback(port: port)
    let ok = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    if !ok { close(fd); return nil }
    return fd
}

/// The address of `port` on 127.0.0.1 (0: any free port).
private func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return address
}
