import Foundation
internal import GRPCCore
internal import GRPCNIOTransportHTTP2Posix
internal import GRPCProtobuf
internal import NIOCore
internal import NIOSSL
@_spi(StrataInternals) import StrataEngine
internal import SwiftProtobuf

/// Carries etcd's API over gRPC (grpc-swift's HTTP/2 transport on NIO) to the members' client
/// ports: one client per member, connected on first use and dropped when a call to it fails in
/// transit, so the next request to it connects anew rather than waiting out a backoff.
///
/// The engine is synchronous and gRPC is async: each request runs as a task on an event loop
/// (``EventLoopTaskExecutor``) while the calling thread waits for it.
///
/// **Whether a request was sent.** A request is written to its stream only once the stream is
/// open on a ready connection; the serializer marks the moment. A failure before it (no
/// connection, refused, timed out while connecting) is ``EtcdCallError/notSent(_:)``: safe to
/// send elsewhere. After it, a status whose message is etcd's (`etcdserver: …`, or its gRPC
/// server's `grpc: …`) is etcd's answer; any other failure (the connection broke, the deadline
/// passed, the answer could not be read) is ``EtcdCallError/mayHaveApplied(_:)``.
///
/// **TLS** (``EtcdTLS``): every connection is TLS or every one is cleartext, as the transport was
/// made. A handshake that fails is ``EtcdCallError/tls(_:_:)`` with the reason (``TLSDiagnosis``).
final class GRPCTransport: EtcdTransport, Sendable {
    private let executor = EventLoopTaskExecutor()
    private let members = Locked<[EtcdEndpoint: Member]>([:])
    /// Calls that failed in transit (counted for the tests: a healthy cluster fails none).
    let failedInTransit = Guarded(wrappedValue: 0)
    /// Member clients made, and TCP connections made (the tests compare them: a client whose
    /// connection was closed under it makes another).
    let connectionsMade = Guarded(wrappedValue: 0)
    let tcpConnections: Guarded<Int>
    private let security: HTTP2ClientTransport.Posix.TransportSecurity
    private let config: HTTP2ClientTransport.Posix.Config
    private let tls: EtcdTLS?
    private let closed = Locked(false)
    /// The open watch streams, cancelled at close (a graceful shutdown would wait for them).
    /// A stream's task can end before `watch` registers it (a refused connect fails at once):
    /// it then leaves `.ended`, and the registration takes that mark away instead of adding it.
    private let streams = Locked<[UUID: StreamEntry]>([:])

    /// A transport over TLS as `tls` says, or over cleartext when it is `nil`. Reads the
    /// certificate and key files now: a file that is missing, unreadable or does not hold what
    /// it should is `EngineError.invalidArgument`, naming it.
    init(tls: EtcdTLS?) throws(EngineError) {
        self.tls = tls
        let tcpConnections = Guarded(wrappedValue: 0)
        self.tcpConnections = tcpConnections
        guard let tls else {
            security = .plaintext
            config = Self.config(serverName: nil, counting: tcpConnections)
            return
        }
        guard (tls.certificateFile == nil) == (tls.keyFile == nil) else {
            throw .invalidArgument("etcd TLS: a client certificate needs its key file (keyFile), and a key its certificate (certificateFile)")
        }
        func check(_ path: String?, _ what: String, _ load: (String) throws -> Void) throws(EngineError) {
            guard let path else { return }
            do { try load(path) } catch { throw .invalidArgument("etcd TLS: the \(what) \(path) cannot be read as PEM: \(error)") }
        }
        try check(tls.caFile, "CA file") { _ = try NIOSSLCertificate.fromPEMFile($0) }
        try check(tls.certificateFile, "certificate file") { _ = try NIOSSLCertificate.fromPEMFile($0) }
        try check(tls.keyFile, "key file") { _ = try NIOSSLPrivateKey(file: $0, format: .pem) }
        security = .tls(.defaults { config in
            if let ca = tls.caFile { config.trustRoots = .certificates([.file(path: ca, format: .pem)]) }
            if let certificate = tls.certificateFile, let key = tls.keyFile {
                config.certificateChain = [.file(path: certificate, format: .pem)]
                config.privateKey = .file(path: key, format: .pem)
            }
        })
        config = Self.config(serverName: tls.serverName, counting: tcpConnections)
        // The TLS context is made as each connection's will be: a key that does not match its
        // certificate fails here, not at the first request.
        do {
            _ = try HTTP2ClientTransport.Posix(target: .ipv4(address: "127.0.0.1", port: 1), transportSecurity: security, config: config)
        } catch {
            throw .invalidArgument("etcd TLS: \(TLSDiagnosis.describe(error))")
        }
    }

    deinit { close() }

    func send<R: EtcdRequest>(_ request: R, to endpoint: EtcdEndpoint, token: String?,
                              deadline: ContinuousClock.Instant) throws(EtcdCallError) -> R.Response {
        let member = try self.member(endpoint)
        defer { release(member) }
        let client = member.client
        let message = request.wire
        let written = Written()
        var options = CallOptions.defaults
        // No gRPC timeout: runBlocking cancels the call at the deadline (gRPC's own timer is a
        // task group and a sleeping task per call, and wakes on the cooperative pool).
        // Fail at once when the member cannot be reached (the client moves on to the next one)
        // rather than waiting for a connection until the deadline.
        options.waitForReady = false
        // etcd's answers are bounded by the engine's pages, not by gRPC's 4 MiB default.
        options.maxRequestMessageBytes = Self.largestMessage
        options.maxResponseMessageBytes = Self.largestMessage
        var metadata = Metadata()
        if let token { metadata.addString(token, forKey: "token") }
        let serializer = MarkingSerializer<R.WireRequest>(written: written)
        let deserializer = ProtobufDeserializer<R.WireResponse>()
        let outcome: Result<R.WireResponse, any Error> = executor.runBlocking(until: deadline) { [metadata, options] in
            do {
                if R.isStream {
                    let request = StreamingClientRequest(of: R.WireRequest.self, metadata: metadata) { try await $0.write(message) }
                    return .success(try await client.bidirectionalStreaming(
                        request: request, descriptor: R.method, serializer: serializer, deserializer: deserializer, options: options
                    ) { response in
                        for try await answer in response.messages { return answer }
                        throw RPCError(code: .unavailable, message: "the stream ended without an answer")
                    })
                }
                return .success(try await client.unary(
                    request: ClientRequest(message: message, metadata: metadata), descriptor: R.method, serializer: serializer,
                    deserializer: deserializer, options: options
                ) { try $0.message })
            } catch {
                return .failure(error)
            }
        }
        let error: any Error
        switch outcome {
        case .success(let answer): return R.answer(answer)
        case .failure(let failure): error = failure
        }
        if let answer = error as? RPCError, written.value, answer.message.hasPrefix("etcdserver:") || answer.message.hasPrefix("grpc:") {
            throw .server(EtcdServerError(code: answer.code.rawValue, message: answer.message))
        }
        // Failed in transit: the next request to this member connects anew.
        failedInTransit.update { $0 += 1 }
        drop(member, of: endpoint)
        if written.value { throw .mayHaveApplied("\(endpoint): \(TLSDiagnosis.describe(error))") }
        if let tls, let (problem, detail) = TLSDiagnosis.problem(in: error, endpoint: endpoint, tls: tls) {
            throw .tls(problem, detail)
        }
        throw .notSent("\(endpoint): \(TLSDiagnosis.describe(error))")
    }

    func watch(_ request: WatchRequest, on endpoint: EtcdEndpoint, token: String?,
               receive: @escaping @Sendable (Result<WatchResponse, EtcdCallError>) -> Void) throws(EtcdCallError) -> any EtcdStream {
        let member = try self.member(endpoint)
        let client = member.client
        let message = request.wire
        var metadata = Metadata()
        if let token { metadata.addString(token, forKey: "token") }
        // A member without a leader would keep the watch open and silent: etcd ends it instead
        // (its own client asks the same, `WithRequireLeader`).
        metadata.addString("true", forKey: "hasleader")
        var options = CallOptions.defaults
        options.waitForReady = false
        options.maxResponseMessageBytes = Self.largestMessage
        // The request side stays open while the watch lives, asking for progress.
        let id = UUID()
        let task = Task(executorPreference: executor) {
            defer {
                self.streams.withLock { streams in
                    if streams.removeValue(forKey: id) == nil { streams[id] = .ended }
                }
                self.release(member)
            }
            var failure: EtcdCallError
            do {
                try await client.bidirectionalStreaming(
                    request: StreamingClientRequest(of: Etcdserverpb_WatchRequest.self, metadata: metadata) { writer in
                        try await writer.write(message)
                        var progress = Etcdserverpb_WatchRequest()
                        progress.progressRequest = Etcdserverpb_WatchProgressRequest()
                        while true {
                            try await Self.sleep(Self.watchProgressInterval)
                            try await writer.write(progress)
                        }
                    },
                    descriptor: WatchRequest.method, serializer: ProtobufSerializer<Etcdserverpb_WatchRequest>(),
                    deserializer: ProtobufDeserializer<Etcdserverpb_WatchResponse>(), options: options
                ) { response in
                    for try await answer in response.messages { receive(.success(WatchRequest.answer(answer))) }
                }
                failure = .notSent("\(endpoint): the watch stream ended")
            } catch let error as RPCError where error.message.hasPrefix("etcdserver:") || error.message.hasPrefix("grpc:") {
                failure = .server(EtcdServerError(code: error.code.rawValue, message: error.message))
            } catch {
                failure = .notSent("\(endpoint): \(TLSDiagnosis.describe(error))")
            }
            guard !Task.isCancelled else { return }
            if case .notSent = failure { self.drop(member, of: endpoint) }
            receive(.failure(failure))
        }
        let stream = Stream(task: task)
        let refused = closed.withLock { closed in
            // Registered under the closed flag's lock: a close after this cancels it.
            if !closed {
                streams.withLock { streams in
                    if streams.removeValue(forKey: id) == nil { streams[id] = .open(stream) }
                }
            }
            return closed
        }
        if refused {
            stream.cancel()
            throw .notSent("\(endpoint): the engine's connections are closed")
        }
        return stream
    }

    /// A watch stream as ``streams`` knows it: open, or ended before it was registered.
    private enum StreamEntry {
        case open(Stream)
        case ended
    }

    /// A watch's task: cancelling it ends the call, both its sides.
    private struct Stream: EtcdStream {
        let task: Task<Void, Never>

        func cancel() { task.cancel() }
    }

    func close() {
        let open = members.withLock { members in
            closed.withLock { $0 = true }
            defer { members = [:] }
            return Array(members.values)
        }
        let watches = streams.withLock { streams in defer { streams = [:] }; return Array(streams.values) }
        for case .open(let stream) in watches { stream.cancel() }
        for member in open { member.close() }
    }

    /// Drops `member`'s client, unless another has replaced it since (made by a request that
    /// came after the failure).
    private func drop(_ member: Member, of endpoint: EtcdEndpoint) {
        let dropped = members.withLock { members in
            guard members[endpoint] === member else { return false }
            members[endpoint] = nil
            return true
        }
        if dropped { member.close() }
    }

    /// The connections' settings: `serverName` as the authority (and TLS server name), and
    /// every request flushed at once (grpc-swift coalesces flushes by default, which delays a
    /// lone request: each of the engine's callers waits for its answer).
    ///
    /// No HTTP/2 keepalive: grpc-swift-nio-transport 2.9 sent no ping on a connection whose only
    /// stream was a watch (measured: a watch on a frozen member stayed open 60 s), and pings on
    /// idle connections count against etcd's enforcement policy (a GOAWAY). A watch asks for
    /// progress instead (``watchProgressInterval``).
    private static func config(serverName: String?, counting tcpConnections: Guarded<Int>) -> HTTP2ClientTransport.Posix.Config {
        .defaults { config in
            config.http2.authority = serverName
            config.connection.flushCoalescing = nil
            config.channelDebuggingCallbacks.onCreateTCPConnection = { channel in
                tcpConnections.update { $0 += 1 }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
        }
    }

    /// How often a watch asks its member for progress (`WatchProgressRequest`): each answer shows
    /// the member alive, so a silent one is found (``EtcdWatch``) though no change arrives.
    static let watchProgressInterval: Duration = .seconds(5)

    /// Waits `delay` on an event loop of the engine's group (`Task.sleep` would wake on the
    /// cooperative pool); ends early, throwing, when the task is cancelled.
    private static func sleep(_ delay: Duration) async throws {
        let scheduled = EventLoopTaskExecutor.group.next().scheduleTask(in: .nanoseconds(delay.wholeNanoseconds)) {}
        try await withTaskCancellationHandler {
            try await scheduled.futureResult.get()
        } onCancel: {
            scheduled.cancel()
        }
    }

    /// The largest message sent or taken: 1 GiB (a page of the engine's reads, at most 1,000
    /// values of the engine's largest size).
    private static let largestMessage = 1 << 30

    /// The client of `endpoint` for one more call, made (and set connecting) on first use and
    /// replaced by a new one once it carried ``callsPerConnection`` calls within 30 s; none once
    /// closed. Give the call back with ``release(_:)`` when it ends: a replaced client closes when
    /// its last call ends (closing it at once would refuse the calls just handed it).
    private func member(_ endpoint: EtcdEndpoint) throws(EtcdCallError) -> Member {
        do {
            let now = ContinuousClock.now
            let (member, retired) = try members.withLock { members -> (Member, Member?) in
                var retired: Member?
                if let member = members[endpoint] {
                    if member.take(at: now) { return (member, nil) }
                    member.retired = true
                    members[endpoint] = nil
                    if member.inFlight == 0 { retired = member }
                }
                guard !closed.withLock({ $0 }) else { throw EtcdCallError.notSent("\(endpoint): the engine's connections are closed") }
                let member = try Member(endpoint, security: security, config: config, executor: executor)
                _ = member.take(at: now)
                members[endpoint] = member
                connectionsMade.update { $0 += 1 }
                return (member, retired)
            }
            retired?.close()
            return member
        } catch let error as EtcdCallError {
            throw error
        } catch {
            throw .notSent("\(endpoint): \(error)")
        }
    }

    /// A call on `member` ended; the last one of a replaced client closes it.
    private func release(_ member: Member) {
        let last = members.withLock { _ in
            member.inFlight -= 1
            return member.retired && member.inFlight == 0
        }
        if last { member.close() }
    }

    /// The calls one connection carries within 30 s before a new one takes over: under the 200
    /// control frames per 30 s that swift-nio-http2 lets a peer send before it closes the
    /// connection as abusive (`ENHANCE_YOUR_CALM`, a DoS heuristic the gRPC transport does not let
    /// us configure). etcd's gRPC server (Go, serving cleartext) pings with about every request it
    /// receives (to estimate the bandwidth), so a connection busier than 200 calls in 30 s was
    /// closed under the calls in flight: measured, one in 200 calls failed in transit (reads were
    /// sent again, commits resolved by their token) and waited about 50 ms for a new connection.
    /// 150 leaves room for the connection's SETTINGS and the pings of watches' progress requests
    /// (one per 5 s each). A connection with fewer calls in any 30 s is never replaced.
    static let callsPerConnection = 150

    /// One member's client and the task that runs its connections until it is shut down.
    // Unchecked: the `var`s are read and written under the transport's `members` lock only.
    private final class Member: @unchecked Sendable {
        let client: GRPCClient<HTTP2ClientTransport.Posix>
        /// When the last ``GRPCTransport/callsPerConnection`` calls began, as a ring: the slot
        /// the next call overwrites holds the oldest.
        private var began: [ContinuousClock.Instant] = []
        private var calls = 0
        /// Calls given and not yet released.
        var inFlight = 0
        /// Replaced by a newer client: closes when its last call is released.
        var retired = false

        /// Counts a call beginning `now`; false (and nothing counted) when it would be the
        /// connection's ``GRPCTransport/callsPerConnection``-th call within 30 s.
        func take(at now: ContinuousClock.Instant) -> Bool {
            let slot = calls % GRPCTransport.callsPerConnection
            if began.count == GRPCTransport.callsPerConnection {
                guard now - began[slot] >= .seconds(30) else { return false }
                began[slot] = now
            } else {
                began.append(now)
            }
            calls += 1
            inFlight += 1
            return true
        }

        init(_ endpoint: EtcdEndpoint, security: HTTP2ClientTransport.Posix.TransportSecurity, config: HTTP2ClientTransport.Posix.Config,
             executor: EventLoopTaskExecutor) throws {
            let target: any ResolvableTarget
            if endpoint.host.contains(":") {
                target = .ipv6(address: endpoint.host, port: endpoint.port)
            } else if endpoint.isIPAddress {
                target = .ipv4(address: endpoint.host, port: endpoint.port)
            } else {
                target = .dns(host: endpoint.host, port: endpoint.port)
            }
            // The connection on the executor's own loop: an answer resumes its waiting task on the
            // thread that read it (measured with `make bench-etcd`, cleartext, one run each: point
            // reads 774 → 914 per second on one member and 512 → 752 on three, with the
            // connection on another loop of the group).
            let client = GRPCClient(transport: try HTTP2ClientTransport.Posix(
                target: target, transportSecurity: security, config: config, eventLoopGroup: executor.loop))
            self.client = client
            Task(executorPreference: executor) { try? await client.runConnections() }
        }

        /// Lets calls in flight finish, refuses new ones, then closes the connection.
        func close() { client.beginGracefulShutdown() }
    }

    /// Whether a request's message was handed to its stream (see the type's comment).
    private final class Written: Sendable {
        private let flag = Locked(false)
        var value: Bool { flag.withLock { $0 } }
        func mark() { flag.withLock { $0 = true } }
    }

    /// The protobuf serializer, marking the request as written when it is.
    private struct MarkingSerializer<Message: SwiftProtobuf.Message>: MessageSerializer {
        let written: Written

        func serialize<Bytes: GRPCContiguousBytes>(_ message: Message) throws -> Bytes {
            written.mark()
            return try ProtobufSerializer<Message>().serialize(message)
        }
    }
}
