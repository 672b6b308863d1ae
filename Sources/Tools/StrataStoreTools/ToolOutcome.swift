import ArgumentParser
import Foundation

/// An error the tool reports as one line naming the store, with an exit status.
public struct ToolFailure: Error, CustomStringConvertible {
    /// The line printed on standard error, after the tool's name.
    public let message: String
    /// The exit status (one of ``ToolExit``'s).
    public let status: Int32

    /// A failure printed as `message`, ending the tool with `status` (default ``ToolExit/failed``, 2).
    public init(_ message: String, status: Int32 = ToolExit.failed) {
        self.message = message
        self.status = status
    }

    public var description: String { message }
}

/// The store tools' exit statuses (documented in each command's help and the README).
public enum ToolExit {
    /// Done; for `verify`, nothing wrong.
    public static let ok: Int32 = 0
    /// `verify` found problems (listed).
    public static let problems: Int32 = 1
    /// The store could not be opened or read, or the copy could not be made (the message says why).
    public static let failed: Int32 = 2
    /// Arguments the tool cannot use.
    public static let usage: Int32 = 64

    /// The statuses, for a command's help.
    public static let help = "Exit status: 0 done (verify: nothing wrong), 1 verify found problems, 2 the store could not be opened, read or copied, 64 bad arguments."
}

/// Runs a store tool's body, turning failures into one line on standard error and the exit status.
func runTool(_ body: () throws -> Int32) throws {
    let status: Int32
    do {
        status = try body()
    } catch let failure as ToolFailure {
        FileHandle.standardError.write(Data("\(CommandLine.toolName): \(failure.message)\n".utf8))
        throw ExitCode(failure.status)
    }
    if status != 0 { throw ExitCode(status) }
}

/// Runs one step on an open store, turning its errors into a line naming the store.
func toolStep<R>(_ name: String, _ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let failure as ToolFailure {
        throw failure
    } catch {
        throw ToolFailure("\(name): \(error)")
    }
}

func jsonText<T: Encodable>(_ value: T) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

func jsonString(_ s: String) -> String {
    String(decoding: (try? JSONEncoder().encode(s)) ?? Data("\"\"".utf8), as: UTF8.self)
}

extension CommandLine {
    /// The running tool's name (`strata`, `strata-etcd`), for its messages.
    static var toolName: String { (arguments.first.map { ($0 as NSString).lastPathComponent }) ?? "strata" }
}
