import Foundation
import StrataEngine

#if canImport(Glibc)
import Glibc
#endif

/// One keep-alive HTTP/1.1 connection to one etcd member's client port: enough HTTP for etcd's
/// JSON gateway (POST with a body; responses framed by `Content-Length` or chunked), with every
/// wait bounded by a deadline. Not thread-safe: ``GatewayTransport`` lends it to one request at a time.
///
/// Why not a client library: the gateway speaks plain HTTP/1.1, and an HTTP library would be the
/// heaviest dependency of the package for four request shapes. Owning the socket also tells us
/// exactly whether a request may have reached the server, which resolving an unknown commit needs.
final class HTTPConnection {
    let endpoint: EtcdEndpoint
    private var socket: Int32 = -1
    /// Bytes received past the end of the last response (none with etcd, which answers in order).
    private var buffered: [UInt8] = []

    init(endpoint: EtcdEndpoint) {
        self.endpoint = endpoint
    }

    deinit { disconnect() }

    /// Whether the connection may be reused for another request.
    var isOpen: Bool { socket >= 0 }

    func disconnect() {
        if socket >= 0 { close(socket) }
        socket = -1
        buffered = []
    }

    /// Sends a POST of `body` to `path` and returns the response's status and body.
    ///
    /// Throws ``TransportError``: `.notSent` when no byte of the request can have reached the
    /// server (it is safe to send it elsewhere), `.afterSending` when it may have.
    func post(_ path: String, body: [UInt8], headers: [(String, String)], deadline: ContinuousClock.Instant) throws(TransportError) -> (status: Int, body: [UInt8]) {
        if socket >= 0 && (peerClosed() || !buffered.isEmpty) { disconnect() }
        if socket < 0 { try connect(deadline: deadline) }
        var head = "POST \(path) HTTP/1.1\r\nHost: \(endpoint)\r\nContent-Type: application/json\r\n"
        // The gateway passes it on as the gRPC deadline: without it, a read waits forever for a
        // cluster that lost its quorum.
        let left = ContinuousClock.now.duration(to: deadline).components
        head += "Grpc-Timeout: \(max(left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000, 1))m\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.count)\r\n\r\n"
        var request = Array(head.utf8)
        request.append(contentsOf: body)
        do {
            try send(request, deadline: deadline)
        } catch {
            disconnect()
            throw error
        }
        do {
            return try receiveResponse(deadline: deadline)
        } catch {
            disconnect()
            throw error.sent
        }
    }

    // MARK: Socket

    /// Whether an idle keep-alive connection was closed by the server (it is readable with
    /// nothing to read): checked before reuse, so that a request is not sent into a dead socket.
    private func peerClosed() -> Bool {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) != 0
    }

    private func connect(deadline: ContinuousClock.Instant) throws(TransportError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(endpoint.host, String(endpoint.port), &hints, &found)
        guard rc == 0, let first = found else {
            throw .notSent("cannot resolve \(endpoint.host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(first) }
        var lastError = "no address"
        var address: UnsafeMutablePointer<addrinfo>? = first
        while let info = address {
            address = info.pointee.ai_next
            let fd = Glibc.socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            if fd < 0 { lastError = errnoText(); continue }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
                guard errno == EINPROGRESS else { lastError = errnoText(); close(fd); continue }
                do {
                    try wait(fd, for: Int16(POLLOUT), deadline: deadline)
                } catch {
                    close(fd)
                    throw .notSent("connecting to \(endpoint): timed out")
                }
                var problem: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &problem, &length)
                if problem != 0 { lastError = String(cString: strerror(problem)); close(fd); continue }
            }
            socket = fd
            return
        }
        throw .notSent("connecting to \(endpoint): \(lastError)")
    }

    private func send(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(TransportError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                offset += n
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                do { try wait(socket, for: Int16(POLLOUT), deadline: deadline) } catch {
                    throw offset == 0 ? .notSent("sending to \(endpoint): timed out") : .afterSending("sending to \(endpoint): timed out")
                }
            } else {
                // A reused keep-alive connection the server closed fails here before any byte left.
                let text = "sending to \(endpoint): \(errnoText())"
                throw offset == 0 ? .notSent(text) : .afterSending(text)
            }
        }
    }

    /// Reads at least one more byte into `buffered`; throws on end of stream or timeout.
    private func fill(deadline: ContinuousClock.Instant) throws(TransportError) {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress!, $0.count, 0) }
            if n > 0 {
                buffered.append(contentsOf: chunk[0..<n])
                return
            }
            if n == 0 { throw .afterSending("\(endpoint) closed the connection before answering") }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
                throw .afterSending("receiving from \(endpoint): \(errnoText())")
            }
            do { try wait(socket, for: Int16(POLLIN), deadline: deadline) } catch {
                throw .afterSending("no answer from \(endpoint) in time (request timeout)")
            }
        }
    }

    private func receiveResponse(deadline: ContinuousClock.Instant) throws(TransportError) -> (status: Int, body: [UInt8]) {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            headEnd = buffered.firstRange(of: separator)?.lowerBound
            if headEnd == nil { try fill(deadline: deadline) }
        }
        let head = String(decoding: buffered[0..<headEnd!], as: UTF8.self)
        buffered.removeFirst(headEnd! + 4)
        let lines = head.split(separator: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."),
              let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw .afterSending("\(endpoint) answered something that is not HTTP: \(head.prefix(80))") }
        var length: Int?
        var chunked = false
        var closeAfter = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces).lowercased()
            if name == "content-length" { length = Int(value).flatMap { $0 >= 0 ? $0 : nil } }
            if name == "transfer-encoding" { chunked = value.contains("chunked") }
            if name == "connection" { closeAfter = value == "close" }
        }
        var body: [UInt8] = []
        if chunked {
            while true {
                var lineEnd: Int?
                while lineEnd == nil {
                    lineEnd = buffered.firstRange(of: [13, 10])?.lowerBound
                    if lineEnd == nil { try fill(deadline: deadline) }
                }
                let sizeText = String(decoding: buffered[0..<lineEnd!], as: UTF8.self).split(separator: ";").first ?? ""
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                    throw .afterSending("\(endpoint) sent a malformed chunk size")
                }
                buffered.removeFirst(lineEnd! + 2)
                if size == 0 {
                    // Trailer lines (etcd's errors carry one), then the empty line that ends the response.
                    while true {
                        var end: Int?
                        while end == nil {
                            end = buffered.firstRange(of: [13, 10])?.lowerBound
                            if end == nil { try fill(deadline: deadline) }
                        }
                        buffered.removeFirst(end! + 2)
                        if end == 0 { break }
                    }
                    break
                }
                while buffered.count < size + 2 { try fill(deadline: deadline) }
                guard buffered[size] == 13, buffered[size + 1] == 10 else {
                    throw .afterSending("\(endpoint) sent a chunk longer than its size")
                }
                body.append(contentsOf: buffered[0..<size])
                buffered.removeFirst(size + 2)
            }
        } else if let length {
            while buffered.count < length { try fill(deadline: deadline) }
            body = Array(buffered[0..<length])
            buffered.removeFirst(length)
        } else {
            throw .afterSending("\(endpoint) answered without a length")
        }
        if closeAfter { disconnect() }
        return (status, body)
    }

    private func wait(_ fd: Int32, for events: Int16, deadline: ContinuousClock.Instant) throws(TransportError) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            if left <= .zero { throw .notSent("timed out") }
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let rc = poll(&descriptor, 1, milliseconds)
            if rc > 0 { return }
            if rc < 0 && errno != EINTR { throw .notSent(errnoText()) }
        }
    }
}

/// How a request failed on its way: whether it may have reached the server.
enum TransportError: Error, CustomStringConvertible {
    /// Nothing of the request can have reached the server.
    case notSent(String)
    /// The request may have reached the server (and its effect may be applied).
    case afterSending(String)

    /// The same failure, known to have happened after the request was sent.
    var sent: TransportError {
        switch self {
        case let .notSent(text), let .afterSending(text): return .afterSending(text)
        }
    }

    var description: String {
        switch self {
        case let .notSent(text), let .afterSending(text): return text
        }
    }
}

/// One etcd member's client URL, `http://host:port` (or `host:port`).
public struct EtcdEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The host name or address (an IPv6 address without its brackets).
    public let host: String
    /// The TCP port, 1...65535.
    public let port: Int

    /// Parses `http://host:port` or `host:port`. TLS (`https://`) is not supported: see ``EtcdEngine``.
    public init(_ url: String) throws(EngineError) {
        var rest = Substring(url)
        if rest.hasPrefix("https://") {
            throw .invalidArgument("etcd endpoint \(url): TLS endpoints are not supported (use a TLS-terminating proxy or a private network)")
        }
        if rest.hasPrefix("http://") { rest = rest.dropFirst(7) }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]), (1...65_535).contains(port),
              colon > rest.startIndex
        else { throw .invalidArgument("etcd endpoint \(url): expected http://host:port") }
        var host = String(rest[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

private func errnoText() -> String { String(cString: strerror(errno)) }
