import Foundation

/// Where an engine keeps a store, as the lifecycle cases see it: they put foreign things where a
/// store would be and check that opening leaves them untouched and writes nothing else.
///
/// For engines with files (the default, ``FileLocations``) a location is a directory, an entry
/// is a file in it, and a foreign object is a regular file where the directory would be. An
/// engine that keeps stores elsewhere maps the same notions onto its own namespace; etcd, for
/// one, maps a path to a key prefix, an entry to a key under it and the object to the key at the
/// prefix itself.
public protocol StoreLocations: Sendable {
    /// The names of the entries at `path`, or `nil` when nothing at all is there.
    func entries(at path: String) throws -> [String]?
    /// Puts a foreign entry `name` holding `bytes` at the location `path`.
    func writeEntry(_ bytes: [UInt8], named name: String, at path: String) throws
    /// The bytes of the entry `name` at `path`, or `nil`.
    func readEntry(named name: String, at path: String) throws -> [UInt8]?
    /// Makes `path` itself hold foreign bytes that are not a location (a regular file).
    func writeObject(_ bytes: [UInt8], at path: String) throws
    /// The bytes written by ``writeObject(_:at:)``, or `nil`.
    func readObject(at path: String) throws -> [UInt8]?
}

/// Stores in directories: entries are files, the object at a path is a regular file.
public struct FileLocations: StoreLocations {
    /// Locations in the local file system, through `FileManager`; no state of its own.
    public init() {}

    public func entries(at path: String) throws -> [String]? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    public func writeEntry(_ bytes: [UInt8], named name: String, at path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path).appendingPathComponent(name))
    }

    public func readEntry(named name: String, at path: String) throws -> [UInt8]? {
        FileManager.default.contents(atPath: URL(fileURLWithPath: path).appendingPathComponent(name).path).map { Array($0) }
    }

    public func writeObject(_ bytes: [UInt8], at path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    public func readObject(at path: String) throws -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }
}
