import Foundation
import StrataEngine

/// The second process that multi-process cases need: an executable the engine's own package
/// provides, which opens the case's store and follows commands on standard input.
///
/// Give the suite the command that starts it (``EngineUnderTest/peer``); the executable calls
/// ``ConformancePeer/serve(_:commands:)`` with the same engine:
///
/// ```swift
/// // main.swift of a helper executable in the engine's package
/// import StrataConformance
/// try ConformancePeer.serve(EngineUnderTest(name: "mine", capabilities: [.persistent, .multiProcess]) { dir, options in
///     try MyEngine(path: dir, options: options)
/// })
/// ```
///
/// The suite appends the store's directory to the command's arguments. The protocol is one line
/// per command and one reply line each (keys and values in hex): `put K V`, `get K` (`value V` or
/// `nil`), `begin` (a write transaction that stays open: replies `began` from inside it), `tx-put K V`
/// (inside it), `commit` (replies `committed` once the commit returned), `quit`. Errors reply
/// `error TEXT`.
///
/// Kits of cases above the engine add commands of their own (``Command``): the record layer's
/// observation cases have the peer write records (`RecordConformance.peerCommands`). Serve them
/// too, so those cases run against two processes:
///
/// ```swift
/// try ConformancePeer.serve(subject, commands: RecordConformance.peerCommands)
/// ```
public struct ConformancePeer: Sendable {
    /// The program to run.
    public let executable: String
    /// Its arguments before the store's directory.
    public let arguments: [String]

    /// The command that runs `executable` with `arguments`; the suite appends the store's
    /// directory as the last argument when it starts the process.
    public init(executable: String, arguments: [String]) {
        self.executable = executable
        self.arguments = arguments
    }

    /// A command a kit adds to the protocol: given the open store and the words after the
    /// command's name, it returns the reply line (without `error`; a thrown error replies
    /// `error TEXT`).
    public typealias Command = @Sendable (_ store: any KeyValueEngine, _ arguments: [String]) throws -> String

    /// Serves the protocol on standard input and output until `quit` or the end of input,
    /// with `commands` besides the built-in ones. The store's directory is the last
    /// command-line argument.
    public static func serve(_ engine: EngineUnderTest, commands: [String: Command] = [:]) throws {
        let directory = CommandLine.arguments.last!
        func reply(_ line: String) {
            print(line)
            fflush(nil)
        }
        let store: any KeyValueEngine
        do {
            store = try engine.open(directory, EngineOptions(mode: .openExisting))
        } catch {
            reply("error opening the store: \(error)")
            throw error
        }
        let held = HeldWrite()
        reply("ready")
        while let line = readLine() {
            let words = line.split(separator: " ").map(String.init)
            do {
                switch words.first {
                case "put":
                    try store.write { tx in try tx.put(unhex(words[2]), forKey: unhex(words[1])) }
                    reply("ok")
                case "get":
                    let value = try store.read { tx in try tx.get(unhex(words[1])) }
                    reply(value.map { "value " + hexString($0) } ?? "nil")
                case "begin":
                    try held.begin(store)
                    reply("began")
                case "tx-put":
                    try held.run { tx in try tx.put(unhex(words[2]), forKey: unhex(words[1])) }
                    reply("ok")
                case "commit":
                    try held.commit()
                    reply("committed")
                case "quit":
                    try store.close()
                    return
                case let name? where commands[name] != nil:
                    reply(try commands[name]!(store, Array(words.dropFirst())))
                default:
                    reply("error unknown command \(line)")
                }
            } catch {
                reply("error \(error)")
            }
        }
        try store.close()
    }
}

/// A write transaction held open on a thread of its own (transaction bodies are synchronous),
/// running the operations handed to it until told to commit.
private final class HeldWrite: @unchecked Sendable {
    private let lock = NSCondition()
    private var work: [(any KeyValueWriter) throws -> Void] = []
    private var finishing = false
    private var results: [Error?] = []
    private var began = false
    private var ended: Result<Void, Error>?

    func begin(_ store: any KeyValueEngine) throws {
        lock.withLock { (work, finishing, results, began, ended) = ([], false, [], false, nil) }
        Thread { [self] in
            let outcome = Result {
                try store.write { tx in
                    lock.withLock {
                        began = true
                        lock.broadcast()
                    }
                    while true {
                        let next: ((any KeyValueWriter) throws -> Void)? = lock.withLock {
                            while work.isEmpty && !finishing { lock.wait() }
                            return work.isEmpty ? nil : work.removeFirst()
                        }
                        guard let next else { return }
                        let error: Error? = { do { try next(tx); return nil } catch { return error } }()
                        lock.withLock {
                            results.append(error)
                            lock.broadcast()
                        }
                    }
                }
            }
            lock.withLock {
                ended = outcome
                lock.broadcast()
            }
        }.start()
        try lock.withLock {
            while !began && ended == nil { lock.wait() }
            if case .failure(let error)? = ended { throw error }
        }
    }

    func run(_ operation: @escaping (any KeyValueWriter) throws -> Void) throws {
        try lock.withLock {
            let before = results.count
            work.append(operation)
            lock.broadcast()
            while results.count == before { lock.wait() }
            if let error = results.last! { throw error }
        }
    }

    func commit() throws {
        try lock.withLock {
            finishing = true
            lock.broadcast()
            while ended == nil { lock.wait() }
            try ended!.get()
        }
    }
}

/// A running peer process (``CaseContext/peer()``), driven by a case: one command line in, one
/// reply line out.
public final class PeerProcess: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSCondition()
    private var buffer = ""
    private var reader: PipeReader?

    init(_ peer: ConformancePeer, directory: String) throws {
        process.executableURL = URL(fileURLWithPath: peer.executable)
        process.arguments = peer.arguments + [directory]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        reader = PipeReader(output.fileHandleForReading) { [weak self] data in
            guard let self else { return }
            let text = String(decoding: data, as: UTF8.self)
            lock.withLock {
                buffer += text
                lock.broadcast()
            }
        }
        let first = try nextLine()
        if first != "ready" { throw ConformanceFailure("the peer process: \(first)") }
    }

    /// Sends a command without waiting for its reply (read it with ``nextLine(within:)``).
    public func send(_ command: String) {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
    }

    /// The next reply line (`within` seconds at most; at once when the process has ended).
    public func nextLine(within: TimeInterval = 60) throws -> String {
        let deadline = Date().addingTimeInterval(within)
        return try lock.withLock {
            while !buffer.contains("\n") {
                if Date() > deadline {
                    throw ConformanceFailure("the peer process did not answer within \(Int(within)) s (output so far: \(buffer))")
                }
                if !process.isRunning && !lock.wait(until: Date().addingTimeInterval(0.2)) {
                    throw ConformanceFailure("the peer process ended (status \(process.terminationStatus)) without answering: \(buffer)")
                }
                _ = lock.wait(until: Date().addingTimeInterval(0.1))
            }
            let line = String(buffer[..<buffer.firstIndex(of: "\n")!])
            buffer.removeSubrange(...buffer.firstIndex(of: "\n")!)
            return line
        }
    }

    /// Sends a command and returns its reply; a reply `error …` fails the case.
    @discardableResult
    public func ask(_ command: String) throws -> String {
        send(command)
        let reply = try nextLine()
        if reply.hasPrefix("error") { throw ConformanceFailure("peer process, \(command): \(reply)") }
        return reply
    }

    func stop() {
        send("quit")
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        reader?.waitForEnd()
    }
}

func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func unhex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
