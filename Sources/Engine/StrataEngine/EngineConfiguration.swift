/// An engine to open, with its settings: what `Store(.lmdb(path: …))` takes.
///
/// The record layer knows no engine: each adapter module contributes its choices as static
/// members (`.lmdb(path:options:)` in StrataLMDB, `.sqlite(path:)` in StrataSQLite, …), so
/// importing an adapter is what makes its engine available. Your own engine plugs in the same way:
///
/// ```swift
/// extension EngineConfiguration {
///     static func mine(path: String) -> EngineConfiguration {
///         EngineConfiguration(name: "mine", path: path) { options in try MyEngine(path: path, options: options) }
///     }
/// }
/// ```
public struct EngineConfiguration: Sendable {
    /// The engine's name, as its ``KeyValueEngine/engineName``.
    public let name: String
    /// Where the store lives, or `nil` for engines without a path.
    public let path: String?
    private let opener: @Sendable (EngineOptions) throws -> any KeyValueEngine

    /// The engine `name` (its ``KeyValueEngine/engineName``) with its store at `path` (`nil` when
    /// it has none); `open` opens it with the options ``open(_:)`` is given, once per call.
    public init(name: String, path: String?, open: @escaping @Sendable (EngineOptions) throws -> any KeyValueEngine) {
        self.name = name
        self.path = path
        opener = open
    }

    /// Opens the engine with `options`.
    public func open(_ options: EngineOptions = EngineOptions()) throws -> any KeyValueEngine {
        try opener(options)
    }
}

/// A kind of engine, for code that opens stores of any kind in directories of its choosing
/// (tests, tools, benchmarks): its name, its declaration and how to configure it for a path.
public struct EngineKind: Sendable, CustomStringConvertible {
    /// The kind's name, its declaration's ``EngineDeclaration/name`` (such as `"lmdb"`).
    public let name: String
    /// What the engine declares (capabilities and limits).
    public let declaration: EngineDeclaration
    private let configure: @Sendable (String) -> EngineConfiguration

    /// The kind that `declaration` declares (and names); `configure` makes the configuration of a
    /// store at a path (engines without a path ignore it). Nothing is opened until ``open(_:_:)``.
    public init(declaration: EngineDeclaration, configure: @escaping @Sendable (_ path: String) -> EngineConfiguration) {
        self.name = declaration.name
        self.declaration = declaration
        self.configure = configure
    }

    /// The engine of this kind for a store at `path` (ignored by engines without a path).
    public func configuration(path: String) -> EngineConfiguration { configure(path) }

    /// Opens the store at `path` with `options`.
    public func open(_ path: String, _ options: EngineOptions = EngineOptions()) throws -> any KeyValueEngine {
        try configure(path).open(options)
    }

    public var description: String { name }
}
