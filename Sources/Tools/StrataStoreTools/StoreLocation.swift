import ArgumentParser
import Foundation
import StrataBundledEngines
import StrataEngine
import StrataRecords

/// A store named on the command line: the engine that holds it and where.
public struct StoreLocation: Sendable {
    /// How messages name the store: its directory, or a tool's own form (`etcd:PREFIX`).
    public let name: String
    /// The engine that holds the store: the one given (`--engine`, `--to`), the one whose files
    /// are there, or the locator's own (etcd).
    public let kind: EngineKind
    /// What `kind` takes as the store's path (a directory, or an etcd key prefix).
    public let path: String
    /// The directory whose files `stats` lists (`nil` for engines without files).
    public let directory: String?

    /// The store of `kind` at `path`, named `name` in messages, its files in `directory` (`nil`
    /// for engines without files). Checks and opens nothing.
    public init(name: String, kind: EngineKind, path: String, directory: String?) {
        self.name = name
        self.kind = kind
        self.path = path
        self.directory = directory
    }

    /// The store in the directory `path`: of the engine given, or of the one whose marker file
    /// (`data.mdb`, `CURRENT`, `data.sqlite`: each engine's declared marker) is there.
    public init(directory path: String, engine: ToolEngine?) throws {
        if let engine {
            self.init(name: path, kind: engine.kind, path: path, directory: path)
            return
        }
        let found = BundledEngines.onDisk.filter { kind in
            kind.declaration.marker.map { FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent($0)) } ?? false
        }
        guard FileManager.default.fileExists(atPath: path) else { throw ToolFailure("\(path): no such store") }
        switch found.count {
        case 1: self.init(name: path, kind: found[0], path: path, directory: path)
        case 0:
            let markers = BundledEngines.onDisk.compactMap { k in k.declaration.marker.map { "\($0) (\(k.name))" } }
            throw ToolFailure("\(path): not a store of a bundled engine: none of \(markers.joined(separator: ", ")) is there")
        default:
            throw ToolFailure("\(path): files of several engines (\(found.map(\.name).joined(separator: ", "))): say which with --engine")
        }
    }

    /// The store's engine, configured for it.
    public var configuration: EngineConfiguration { kind.configuration(path: path) }

    /// Opens the store read-only with the transforms `locator` gives for those its manifest
    /// names: other processes may keep writing (LMDB, SQLite, etcd).
    func openReadOnly(_ locator: some StoreLocator) throws -> Store {
        do {
            let engine = try configuration.open(EngineOptions(mode: .readOnly))
            let transforms: [any ValueTransform]
            do {
                transforms = try locator.transforms(named: try Store.storedTransforms(in: engine), store: name)
            } catch {
                try? engine.close()
                throw error
            }
            return try Store(engine: engine, readOnly: true, transforms: transforms)
        } catch let failure as ToolFailure {
            throw failure
        } catch EngineError.locked {
            throw ToolFailure("\(name): \(kind.name) store locked by another process; \(kind.name) allows one process at a time: inspect or back it up from inside that process (Store.verify, Store.copy(to:))")
        } catch {
            throw ToolFailure("\(name): \(error)")
        }
    }

    /// The sizes of the regular files in the store's directory (none for engines without files).
    func fileSizes() -> [String: Int] {
        guard let directory else { return [:] }
        var sizes: [String: Int] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            let attributes = try? FileManager.default.attributesOfItem(atPath: (directory as NSString).appendingPathComponent(name))
            if attributes?[.type] as? FileAttributeType == .typeRegular { sizes[name] = (attributes?[.size] as? Int) ?? 0 }
        }
        return sizes
    }
}

/// How a tool reads the stores named on its command line (its own options come with it).
///
/// `strata` names a store by its directory (``BundledStores``); `strata-etcd` also names stores
/// on an etcd cluster, so its locator adds the cluster's options and an `etcd:PREFIX` form.
public protocol StoreLocator: ParsableArguments {
    /// How a store argument may name a store, for the commands' help ("its directory").
    static var storeForms: String { get }
    /// The existing store `argument` names; `engine` is the one given with `--engine`, if any.
    func store(_ argument: String, engine: ToolEngine?) throws -> StoreLocation
    /// The destination of a copy: `engine` is the one given with `--to`, `source` the source's.
    func destination(_ argument: String, engine: ToolEngine?, source: StoreLocation) throws -> StoreLocation
    /// The transforms that read a store whose manifest names `stored` (`Store.storedTransforms(in:)`);
    /// `store` names it in messages. The default reads stores without transforms and refuses the
    /// others, naming the tool that has their keys (`strata-transforms`).
    func transforms(named stored: (transforms: [String], retiring: [String]), store: String) throws -> [any ValueTransform]
    /// The transforms a copy's values are re-sealed with, given the source's chain (its names);
    /// `nil` (the default) copies every pair byte for byte.
    func copyTransforms(source: [String]) throws -> [any ValueTransform]?
    /// The locator that reads a copy this one made (its transforms' keys): by default, itself.
    func readingCopies() -> Self
}

extension StoreLocator {
    public static var storeForms: String { "a directory" }

    public func store(_ argument: String, engine: ToolEngine?) throws -> StoreLocation {
        try StoreLocation(directory: argument, engine: engine)
    }

    public func copyTransforms(source: [String]) throws -> [any ValueTransform]? { nil }

    public func readingCopies() -> Self { self }

    public func transforms(named stored: (transforms: [String], retiring: [String]), store: String) throws -> [any ValueTransform] {
        guard stored.transforms.isEmpty else {
            throw ToolFailure("\(store): its values pass through \(stored.transforms.joined(separator: ", ")): "
                + "read it with strata-transforms, which takes its key (--key-file)")
        }
        return []
    }

    public func destination(_ argument: String, engine: ToolEngine?, source: StoreLocation) throws -> StoreLocation {
        let kind = engine?.kind ?? (source.kind.declaration.marker == nil ? nil : source.kind)
        guard let kind else {
            throw ToolFailure("\(argument): a \(source.kind.name) store copied into a directory needs --to naming its engine", status: ToolExit.usage)
        }
        return StoreLocation(name: argument, kind: kind, path: argument, directory: argument)
    }
}

/// The stores of the bundled on-disk engines, named by their directories (the `strata` tool's).
public struct BundledStores: StoreLocator {
    public init() {}
}

/// An `--engine` or `--to` argument: one bundled on-disk engine, by name.
public struct ToolEngine: ExpressibleByArgument, Sendable {
    /// The bundled on-disk engine the argument names.
    public let kind: EngineKind

    public init?(argument: String) {
        guard let kind = BundledEngines.onDisk.first(where: { $0.name == argument }) else { return nil }
        self.kind = kind
    }

    public static var allValueStrings: [String] { BundledEngines.onDisk.map(\.name) }
}
