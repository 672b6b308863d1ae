import ArgumentParser
import Foundation
import StrataEngine
import StrataRecords

/// The store a command reads: its argument, `--engine`, and the tool's own options.
struct StoreArgument<Locator: StoreLocator>: ParsableArguments {
    @OptionGroup var locator: Locator
    @Argument(help: ArgumentHelp("The store: \(Locator.storeForms).")) var path: String
    @Option(help: "The store's engine (detected from its files when left out).") var engine: ToolEngine?

    /// The store, opened read-only.
    func open() throws -> (StoreLocation, Store) {
        let location = try locator.store(path, engine: engine)
        return (location, try location.openReadOnly(locator))
    }
}

/// `stats STORE`: what a store holds.
public struct StatsCommand<Locator: StoreLocator>: ParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "stats", abstract: "Show a store's manifest, catalog, indexes, record counts and file sizes.", discussion: ToolExit.help)
    }

    @OptionGroup var named: StoreArgument<Locator>
    @Flag(help: "Print JSON.") var json = false

    public init() {}

    public func run() throws {
        try runTool {
            let (location, store) = try named.open()
            defer { try? store.close() }
            // Its output is data to pipe: progress only for someone watching a terminal.
            let progress = ProgressLine.onTerminal("stats \(location.name)")
            let stats = try toolStep(location.name) { try store.statistics(progress: progress?.update) }
            progress?.finish()
            let files = location.fileSizes()
            if json {
                print(try jsonText(StatsOutput(path: location.name, engine: location.kind.name, files: files, store: stats)))
                return ToolExit.ok
            }
            print("store \(location.name) (\(location.kind.name))")
            if let m = stats.manifest {
                print("manifest: engine \(m.engine), keys \(m.keyCodec) v\(m.keyCodecVersion), format \(m.format)")
                if !m.transforms.isEmpty { print("values pass through: \(m.transforms.joined(separator: ", "))") }
                if !m.retiring.isEmpty { print("key rotation under way, retiring: \(m.retiring.joined(separator: ", "))") }
            } else {
                print("manifest: none (an empty store)")
            }
            if !stats.features.isEmpty { print("features: \(stats.features.joined(separator: ", "))") }
            for (name, size) in files.sorted(by: { $0.key < $1.key }) { print("file \(name): \(size) bytes") }
            for k in stats.keyspaces {
                print("keyspace \(k.name): \(k.records) records, \(k.keyBytes) key bytes, \(k.valueBytes) value bytes")
                print("  key (\(k.key))" + (k.features.isEmpty ? "" : ", features: \(k.features.joined(separator: ", "))"))
                if let t = k.transformed {
                    let ratio = t.plainBytes > 0 ? String(format: "%.2f", Double(t.storedBytes) / Double(t.plainBytes)) : "-"
                    print("  values through the transforms: \(t.storedBytes) bytes stored for \(t.plainBytes) without them (\(ratio))"
                          + (t.unopened == 0 ? "" : ", \(t.unopened) values not opened"))
                }
                for s in k.schemas {
                    print("  version \(s.version): " + (s.fields.map { $0.isEmpty ? "no fields" : $0.joined(separator: ", ") } ?? "fields not described"))
                }
                for i in k.indexes {
                    let kind = [i.unique ? "unique" : nil, i.covering ? "covering" : nil].compactMap { $0 }.joined(separator: ", ")
                    print("  index \(i.name) (\(i.layout))\(kind.isEmpty ? "" : " \(kind)"): \(i.state), generation \(i.generation)"
                          + (i.retired.isEmpty ? "" : ", retired \(i.retired.map(String.init).joined(separator: ", "))")
                          + (i.previous.map { ", previous generation \($0) queried until built (\(i.previousEntries) entries)" } ?? "")
                          + ", \(i.entries) entries, \(i.bytes) bytes")
                }
            }
            if !stats.jobs.isEmpty { print("unfinished jobs: \(stats.jobs.joined(separator: ", "))") }
            print("system keys: \(stats.systemKeys), keys of other programs: \(stats.foreignKeys)")
            return ToolExit.ok
        }
    }
}

/// `stats --json`: the store's name, engine and files beside its statistics.
private struct StatsOutput: Encodable {
    let path: String
    let engine: String
    let files: [String: Int]
    let store: StoreStatistics
}

/// `dump STORE`: records as JSON Lines.
public struct DumpCommand<Locator: StoreLocator>: ParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
        commandName: "dump", abstract: "Print records as JSON Lines, decoded through the store's catalog (no Swift types needed).",
        discussion: """
            Each line: {"keyspace":…,"key":[…],"version":…,"fields":{…}}. Fields of formats the catalog cannot \
            describe (a codec's or a type's own) come as {"format":…,"hex":…}. A record that cannot be decoded \
            is printed as {"problem":…} and counted; the exit status is then 1. \(ToolExit.help)
            """)
    }

    @OptionGroup var named: StoreArgument<Locator>
    @Option(help: "Only this keyspace.") var keyspace: String?
    @Option(help: "Leading key components to start at (inclusive), as a JSON array: '[\"Dallas\"]'. Needs --keyspace.") var from: String?
    @Option(help: "Leading key components to stop before (exclusive), as a JSON array. Needs --keyspace.") var to: String?
    @Flag(help: "Print every stored pair as hex, undecoded: {\"key\":…,\"value\":…}.") var raw = false
    @Option(help: "At most this many lines.") var limit: Int?

    public init() {}

    public func run() throws {
        try runTool {
            let (location, store) = try named.open()
            defer { try? store.close() }
            var printed = 0
            var problems = 0
            let output = FileHandle.standardOutput
            if raw {
                try toolStep(location.name) {
                    try store.dumpRaw { key, value in
                        output.write(Data("{\"key\":\"\(StoredValue.hex(key))\",\"value\":\"\(StoredValue.hex(value))\"}\n".utf8))
                        printed += 1
                        return limit.map { printed < $0 } ?? true
                    }
                }
                return ToolExit.ok
            }
            let layout = try toolStep(location.name) { try store.keyspaces().first { $0.name == keyspace }?.key ?? [] }
            let start = try keyComponents(from, layout: layout, option: "--from")
            let end = try keyComponents(to, layout: layout, option: "--to")
            try toolStep(location.name) {
                // Progress only when someone watches a terminal the records are not printed on.
                let progress = isatty(STDOUT_FILENO) == 1 ? nil : ProgressLine.onTerminal("dump \(location.name)")
                defer { progress?.finish() }
                try store.dump(keyspace: keyspace, from: start, to: end, progress: progress?.update) { item in
                    switch item {
                    case .success(let record): output.write(Data((record.jsonLine + "\n").utf8))
                    case .failure(let problem):
                        problems += 1
                        output.write(Data("{\"problem\":\(jsonString(problem.description)),\"keyHex\":\"\(StoredValue.hex(problem.key))\"}\n".utf8))
                    }
                    printed += 1
                    return limit.map { printed < $0 } ?? true
                }
            }
            if problems > 0 {
                FileHandle.standardError.write(Data("\(CommandLine.toolName): \(location.name): \(problems) records could not be decoded\n".utf8))
                return ToolExit.problems
            }
            return ToolExit.ok
        }
    }

    /// A JSON array of leading key components, read with the keyspace's key layout (a string
    /// is a UUID or an ISO 8601 date where the layout says so).
    private func keyComponents(_ text: String?, layout: [KeyComponentDescription], option: String) throws -> [StoredValue] {
        guard let text else { return [] }
        guard keyspace != nil else { throw ToolFailure("\(option) needs --keyspace", status: ToolExit.usage) }
        guard let array = try? JSONDecoder().decode([JSONScalar].self, from: Data(text.utf8)) else {
            throw ToolFailure("\(option) \(text): not a JSON array of strings, numbers, booleans or nulls", status: ToolExit.usage)
        }
        guard array.count <= layout.count else {
            throw ToolFailure("\(option): \(array.count) components, the key of \(keyspace!) has \(layout.count)", status: ToolExit.usage)
        }
        return try zip(array, layout).map { value, component in
            let type = component.type.replacingOccurrences(of: "Optional<", with: "").replacingOccurrences(of: ">", with: "")
            switch (value, type) {
            case (.null, _): return .null
            case (.bool(let b), _): return .bool(b)
            case (.number(let n), "Double"): return .double(n)
            case (.number(let n), "Float"): return .float(Float(n))
            case (.integer(let n), "Double"): return .double(Double(n))
            case (.integer(let n), "Float"): return .float(Float(n))
            case (.integer(let n), _): return .int(n)
            case (.number(let n), _): throw ToolFailure("\(option): \(n) is not an integer, and \(component.name) is \(component.type)", status: ToolExit.usage)
            case (.string(let s), "UUID"):
                guard let uuid = UUID(uuidString: s) else { throw ToolFailure("\(option): \(s) is not a UUID", status: ToolExit.usage) }
                return .uuid(uuid)
            case (.string(let s), "Date"):
                let formatter = ISO8601DateFormatter()
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                guard let date = formatter.date(from: s) ?? ISO8601DateFormatter().date(from: s) else {
                    throw ToolFailure("\(option): \(s) is not an ISO 8601 date", status: ToolExit.usage)
                }
                return .date(date.timeIntervalSinceReferenceDate)
            case (.string(let s), _): return .string(s)
            }
        }
    }
}

/// One element of a `--from` or `--to` array.
private enum JSONScalar: Decodable {
    case null, bool(Bool), integer(Int64), number(Double), string(String)

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .integer(i) }
        else if let d = try? c.decode(Double.self) { self = .number(d) }
        else { self = .string(try c.decode(String.self)) }
    }
}

/// `verify STORE`: every checksum, key, field and index entry.
public struct VerifyCommand<Locator: StoreLocator>: ParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "verify",
            abstract: "Check a store: manifest, catalog, every record's key, checksum and fields, every index against its records.",
            discussion: ToolExit.help)
    }

    @OptionGroup var named: StoreArgument<Locator>
    @Flag(help: "Print JSON.") var json = false
    @Option(help: "List at most this many problems (all are counted).") var list = 10

    public init() {}

    public func run() throws {
        try runTool {
            let (location, store) = try named.open()
            defer { try? store.close() }
            let progress = ProgressLine("verify \(location.name)")
            let report = try toolStep(location.name) { try store.verify(listing: list, progress: progress.update) }
            progress.finish()
            if json {
                print(try jsonText(report))
            } else {
                print("\(location.name): \(report.pairs) pairs, \(report.records) records, \(report.indexEntries) index entries"
                      + (report.foreignKeys > 0 ? ", \(report.foreignKeys) keys of other programs (left alone)" : "")
                      + (report.undescribedRecords > 0 ? ", \(report.undescribedRecords) records whose fields the catalog does not describe" : ""))
                for index in report.indexes {
                    print("index \(index.keyspace).\(index.name): " + (index.checked
                        ? "\(index.entries) entries, \(index.missing) missing, \(index.stale) stale"
                        : "not checked (\(index.reason ?? "?"))"))
                }
                for problem in report.problems { print("problem: \(problem)") }
                if report.problemCount > report.problems.count { print("… and \(report.problemCount - report.problems.count) more problems") }
                print(report.isClean ? "ok: nothing wrong" : "\(report.problemCount) problems")
            }
            return report.isClean ? ToolExit.ok : ToolExit.problems
        }
    }
}
