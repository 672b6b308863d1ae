import Foundation
import StrataConformance

/// Runs a program to its end; returns its exit status and what it printed (stdout and stderr).
/// `environment` adds to (or replaces entries of) this process's environment.
@discardableResult
func runProgram(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// The `strata` tool built beside the test bundle (`swift build --build-tests` builds both).
let strataTool = builtTool("strata")

/// The test harness (`strata-harness`: crash runs, probes, the allocation counter), built
/// beside the test bundle too.
let harnessTool = builtTool("strata-harness")

/// The path of an executable of this package built beside the test bundle.
func builtTool(_ name: String) -> String {
    let bundle = (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
    return bundle.deletingLastPathComponent().appendingPathComponent(name).path
}

/// A tool a test needs that is not part of Strata, or why it is missing.
struct MissingTool: Error, CustomStringConvertible {
    let name: String
    let package: String
    var description: String { "`\(name)` is not on PATH: install the Debian package \(package) (`make deps` does)" }
}

/// The full path of `name` found on PATH, or `nil`.
func which(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    for directory in path.split(separator: ":") where !directory.isEmpty {
        let candidate = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// The full path of `name` on PATH; throws naming the Debian package that provides it.
func tool(_ name: String, package: String) throws -> String {
    guard let found = which(name) else { throw MissingTool(name: name, package: package) }
    return found
}

/// Whether this process runs as root.
let runningAsRoot = getuid() == 0

/// A process started in the background, whose output lines can be awaited.
final class BackgroundProcess: @unchecked Sendable {
    let process = Process()
    private let pipe = Pipe()
    private let lock = NSLock()
    private var buffer = ""
    private var reader: PipeReader?

    init(_ executable: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        reader = PipeReader(pipe.fileHandleForReading) { [weak self] data in
            let text = String(decoding: data, as: UTF8.self)
            self?.lock.withLock { self?.buffer += text }
        }
    }

    /// Waits up to `seconds` until the output contains `text`.
    func waitFor(_ text: String, seconds: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if lock.withLock({ buffer.contains(text) }) { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }

    var output: String { lock.withLock { buffer } }

    /// Waits for the process to exit and for the last of its output to be read.
    func wait() -> Int32 {
        process.waitUntilExit()
        reader?.waitForEnd()
        return process.terminationStatus
    }
}

/// Set by `make sanitize` (the value names the sanitizer). A few tests measure what a sanitizer
/// changes by design (the heap, the address space) and are disabled under one, each saying why.
let sanitizer: String? = ProcessInfo.processInfo.environment["STRATA_SANITIZER"]
