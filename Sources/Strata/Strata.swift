// One import for the common case: the record layer, the @IndexKeyRecord macro and every bundled
// engine. Depend on StrataRecords and one adapter instead to build with one C library only.
@_exported import StrataEngine
@_exported import StrataKeyCodec
@_exported import StrataLevelDB
@_exported import StrataLMDB
@_exported import StrataMacros
@_exported import StrataMemory
@_exported import StrataRecords
@_exported import StrataSQLite

extension Store {
    /// Opens (creating when missing) an LMDB store in the directory at `path`, as Empire's
    /// `Store(path:)` does. Equivalent to `Store(.lmdb(path: path))`.
    public convenience init(path: String) throws {
        try self.init(.lmdb(path: path))
    }

    /// Opens (creating when missing) the LMDB store `name` in the default directory
    /// (`EngineConfiguration.defaultDirectory`: `$XDG_DATA_HOME/strata` on Linux,
    /// `Application Support/strata` on Apple platforms). `name` is one path component.
    public convenience init(named name: String) throws {
        try self.init(.lmdb(path: try EngineConfiguration.defaultPath(named: name)))
    }
}
