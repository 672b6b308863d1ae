import Foundation
@_spi(Testing) import StrataEtcd
import StrataEngine
import StrataEtcdCluster
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What crosses the wire: the bytes between the engine and a member, captured during a write,
/// searched for the value written and the store's prefix.
///
/// The capture is `tcpdump` on the loopback interface when this process may capture (root, as
/// CI runs), else a relay of this test's own between the engine and the member that records
/// every byte both ways (an ordinary user may not capture packets). Either way the same search.
@Suite("etcd on the wire", .serialized)
struct EtcdCaptureTests {
    /// Writes a known value under a known prefix through `cluster` and returns what crossed the
    /// wire and the two needles.
    private func captureWrite(_ cluster: LocalCluster) throws -> (bytes: [UInt8], value: [UInt8], prefix: [UInt8], how: String) {
        let marker = UUID().uuidString
        let prefix = "capture-prefix-\(marker)"
        let value = Array("capture-value-\(marker)".utf8)
        let member = cluster.members[0]
        let capture = try WireCapture(port: member.clientPort)
        let endpoint = "\(member.secure ? "https" : "http")://127.0.0.1:\(capture.port)"
        let options = EtcdOptions(endpoints: [endpoint], tls: Clusters.tls(cluster))
        let engine = try EtcdEngine(prefix: prefix, options: EngineOptions(mode: .create), etcd: options)
        try engine.write { try $0.put(value, forKey: Array("greeting".utf8)) }
        #expect(try engine.read { try $0.get(Array("greeting".utf8)) } == value, "the write went through the capture")
        try engine.close()
        return (try capture.stop(), value, Array(prefix.utf8), capture.how)
    }

    @Test("over TLS, a capture of a write holds neither the value nor the store's prefix; over cleartext it holds both")
    func noRecordBytesInTheClear() throws {
        let secure = try captureWrite(Clusters.defaults)
        #expect(secure.bytes.count > 1_000, "\(secure.how) captured the exchange: \(secure.bytes.count) bytes")
        #expect(!secure.bytes.contains(secure.value), "\(secure.how): the value is not in the clear")
        #expect(!secure.bytes.contains(secure.prefix), "\(secure.how): the prefix is not in the clear")
        // The broken variant: the same write to a cleartext member (the search above can fail).
        let plain = try LocalCluster(members: 1, tls: nil)
        defer { plain.stop() }
        let clear = try captureWrite(plain)
        #expect(clear.bytes.contains(clear.value), "\(clear.how): cleartext shows the value")
        #expect(clear.bytes.contains(clear.prefix), "\(clear.how): cleartext shows the prefix")
    }
}

extension [UInt8] {
    /// Whether `needle` occurs in these bytes.
    fileprivate func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { start in self[start..<start + needle.count].elementsEqual(needle) }
    }
}

/// A capture of the traffic to a member's `port`: `tcpdump` when it can capture here (the
/// engine then connects to the port itself), else a recording relay on a port of its own.
private final class WireCapture: @unchecked Sendable {
    /// The port the engine connects to.
    let port: Int
    let how: String
    private var tcpdump: Process?
    private let file = NSTemporaryDirectory() + "strata-capture-\(UUID().uuidString).pcap"
    private var relay: Relay?

    init(port: Int) throws {
        if geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/tcpdump") {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/tcpdump")
            // Each packet handed over (--immediate-mode) and written (-U) as it comes, whole (-s 0).
            process.arguments = ["-i", "lo", "--immediate-mode", "-U", "-s", "0", "-Z", "root", "-w", file, "tcp port \(port)"]
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // tcpdump says "listening on lo" once it captures.
            var said = Data()
            while !String(decoding: said, as: UTF8.self).contains("listening on") {
                let chunk = errors.fileHandleForReading.availableData
                if chunk.isEmpty { throw CaptureError("tcpdump stopped: \(String(decoding: said, as: UTF8.self))") }
                said += chunk
            }
            tcpdump = process
            self.port = port
            how = "tcpdump on lo"
        } else {
            let relay = try Relay(to: port)
            self.relay = relay
            self.port = relay.port
            how = "a recording relay (tcpdump needs root)"
        }
    }

    /// Ends the capture and returns what it holds.
    func stop() throws -> [UInt8] {
        if let tcpdump {
            // SIGKILL: the test runner's children inherit its threads' blocked signals, so tcpdump
            // never sees SIGINT or SIGTERM; with -U it has written every packet already.
            Thread.sleep(forTimeInterval: 0.5)  // the last packets' way through tcpdump
            kill(tcpdump.processIdentifier, SIGKILL)
            tcpdump.waitUntilExit()
            defer { try? FileManager.default.removeItem(atPath: file) }
            return Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        }
        return relay!.stop()
    }
}

private struct CaptureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A TCP relay on a loopback port to a member's port, recording every byte in both directions.
private final class Relay: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let target: Int
    private let lock = NSLock()
    private var recorded: [UInt8] = []
    private var sockets: [Int32] = []

    init(to target: Int) throws {
        self.target = target
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listener = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 16) == 0 else { throw CaptureError("relay: cannot listen") }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { self.acceptLoop() }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                close(listener)
                return
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(target).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            guard connected else { close(client); close(server); continue }
            lock.withLock { sockets += [client, server] }
            Thread.detachNewThread { self.pump(from: client, to: server) }
            Thread.detachNewThread { self.pump(from: server, to: client) }
        }
    }

    private func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            lock.withLock { recorded += buffer[0..<n] }
            let sent = buffer.withUnsafeBytes { send(destination, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
            if sent != n { break }
        }
        shutdown(destination, Int32(SHUT_WR))
    }

    /// Closes every connection and returns what went through.
    func stop() -> [UInt8] {
        shutdown(listener, Int32(SHUT_RDWR))  // the accept loop ends and closes it
        let open = lock.withLock { sockets }
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        // The pumps' reads end at the shutdown; give them a moment before the sockets close.
        Thread.sleep(forTimeInterval: 0.2)
        for fd in open { close(fd) }
        return lock.withLock { recorded }
    }
}
