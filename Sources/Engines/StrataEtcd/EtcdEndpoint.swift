import StrataEngine

/// One etcd member's client URL: `https://host:port` (TLS), `http://host:port` or `host:port`
/// (cleartext).
public struct EtcdEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The host name or address (an IPv6 address without its brackets).
    public let host: String
    /// The TCP port, 1...65535.
    public let port: Int
    /// Whether the URL is `https://`: the connection is TLS, verified as ``EtcdTLS`` says.
    public let secure: Bool

    /// Parses `https://host:port`, `http://host:port` or `host:port` (an IPv6 address in brackets).
    public init(_ url: String) throws(EngineError) {
        var rest = Substring(url)
        secure = rest.hasPrefix("https://")
        if secure { rest = rest.dropFirst(8) } else if rest.hasPrefix("http://") { rest = rest.dropFirst(7) }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]), (1...65_535).contains(port),
              colon > rest.startIndex
        else { throw .invalidArgument("etcd endpoint \(url): expected https://host:port or http://host:port") }
        var host = String(rest[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.host = host
        self.port = port
    }

    /// Whether the host is this machine's loopback (`127.x.x.x`, `::1`, `localhost`): cleartext
    /// to it never crosses a network.
    public var isLoopback: Bool { host == "localhost" || host == "::1" || host.hasPrefix("127.") }

    /// Whether the host is an IP address rather than a name (no DNS lookup, no TLS server name).
    var isIPAddress: Bool { host.contains(":") || (host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }) }

    public var description: String { (secure ? "https://" : "http://") + (host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)") }
}
