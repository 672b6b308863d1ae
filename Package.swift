// swift-tools-version: 6.1
// Strata: a Swift record store with pluggable storage engines.
//
// Floors, bottom to top: each is a folder of Sources/ and depends only on the floors below it.
//   Sources/C/        the system libraries' shims (liblmdb, libleveldb, libsqlite3, libzstd,
//                     libcrypto), CRC-32C (the record checksum), the ThreadSanitizer hooks of the
//                     package's locks, the benchmark's raw C yardstick and the harness's malloc counter
//   Sources/Engine/   StrataEngine: the KeyValueEngine contract, kept once by CoreEngine over the
//                     storage primitives adapters supply (KeyValueStorage)
//   Sources/Engines/  one adapter per engine (LMDB, LevelDB, SQLite, Memory, etcd; primitives only,
//                     on the core and their C library or gRPC client), StrataEtcdCluster (local
//                     clusters), StrataBundledEngines (the one list of bundled engines)
//   Sources/Records/  StrataKeyCodec (a leaf), StrataSchemaHash, StrataRecords (records, Store, typed
//                     queries; no adapter; RecordFormat.md is the on-disk format), and the value
//                     transforms StrataEncryption and StrataCompression (products of their own, not
//                     built by `make run` but for the transforms' benchmark)
//   Sources/Macros/   @IndexKeyRecord: StrataMacros, its plugin and the expansions (swift-syntax)
//   Sources/Strata    the one import: records, the macro and every bundled engine
//   Sources/Tools/    strata (demo, benchmarks, conformance runner, store tools; no macro),
//                     strata-etcd, strata-transforms, the store tools' commands (StrataStoreTools),
//                     what the tools share (StrataToolSupport), and the test harness strata-harness
//                     (crash and power-loss runs, the suite's helper processes; not a product)
//   Conformance/      the test kit every engine must pass (a library product; Records/ holds the
//                     record-layer cases, a product of its own)
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Strata",
    // macOS 15: the Synchronization module (Mutex, Atomic) the engines and the record layer use.
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "StrataEngine", targets: ["StrataEngine"]),
        .library(name: "StrataLMDB", targets: ["StrataLMDB"]),
        .library(name: "StrataLevelDB", targets: ["StrataLevelDB"]),
        .library(name: "StrataSQLite", targets: ["StrataSQLite"]),
        .library(name: "StrataMemory", targets: ["StrataMemory"]),
        .library(name: "StrataKeyCodec", targets: ["StrataKeyCodec"]),
        .library(name: "StrataRecords", targets: ["StrataRecords"]),
        // Encryption at rest: libcrypto is linked only by those who import it.
        .library(name: "StrataEncryption", targets: ["StrataEncryption"]),
        // Compression at rest: libzstd is linked only by those who import it.
        .library(name: "StrataCompression", targets: ["StrataCompression"]),
        .library(name: "StrataMacros", targets: ["StrataMacros"]),
        .library(name: "StrataBundledEngines", targets: ["StrataBundledEngines"]),
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "StrataConformance", targets: ["StrataConformance"]),
        .library(name: "StrataRecordConformance", targets: ["StrataRecordConformance"]),
        .executable(name: "strata", targets: ["strata"]),
        // The etcd engine, its local-cluster launcher and its tool: never built by `make run`.
        .library(name: "StrataEtcd", targets: ["StrataEtcd"]),
        .library(name: "StrataEtcdCluster", targets: ["StrataEtcdCluster"]),
        .executable(name: "strata-etcd", targets: ["strata-etcd"]),
        .executable(name: "strata-transforms", targets: ["strata-transforms"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // Only the macro targets use swift-syntax; the CLI and the benchmark never build it.
        // Any swift-syntax from 600 up to 603 (checked with 600.0.1, 602.0.0 and 603.0.1), so apps
        // with other macro packages can resolve one version.
        .package(url: "https://github.com/swiftlang/swift-syntax", "600.0.0"..<"604.0.0"),
        // `make docs` only: a command plugin, built when documentation is generated, never by
        // `swift build`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The etcd engine's client: gRPC over HTTP/2 on NIO, etcd's messages in protobuf (the code
        // generated from Sources/Engines/StrataEtcd/Protocol/Wire/etcd.proto is committed).
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.0"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.0"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
    ],
    targets: [
        // C libraries, through the system's packages.
        .systemLibrary(name: "CLMDB", path: "Sources/C/CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CLevelDB", path: "Sources/C/CLevelDB", providers: [.apt(["libleveldb-dev"])]),
        .systemLibrary(name: "CSQLite", path: "Sources/C/CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZstd", path: "Sources/C/CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CLibCrypto", path: "Sources/C/CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // Engine core: protocol, ranges, errors, options. No engine; its one C target tells
        // ThreadSanitizer of the package's locks (see Locked.swift).
        .target(name: "StrataEngine", dependencies: ["CThreadSanitizerHooks"], path: "Sources/Engine/StrataEngine"),
        .target(name: "CThreadSanitizerHooks", path: "Sources/C/CThreadSanitizerHooks"),

        // Engine adapters.
        .target(name: "StrataLMDB", dependencies: ["StrataEngine", "CLMDB"], path: "Sources/Engines/StrataLMDB"),
        .target(name: "StrataLevelDB", dependencies: ["StrataEngine", "CLevelDB", "CCRC32C"], path: "Sources/Engines/StrataLevelDB"),
        .target(name: "StrataSQLite", dependencies: ["StrataEngine", "CSQLite"], path: "Sources/Engines/StrataSQLite"),
        .target(name: "StrataMemory", dependencies: ["StrataEngine"], path: "Sources/Engines/StrataMemory"),
        // etcd through its gRPC API (grpc-swift), and a launcher of local clusters for tests and
        // benchmarks.
        .target(
            name: "StrataEtcd",
            dependencies: [
                "StrataEngine",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2Posix", package: "grpc-swift-nio-transport"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Sources/Engines/StrataEtcd",
            exclude: ["Protocol/Wire/etcd.proto", "Protocol/Wire/generate.sh"]
        ),
        .target(name: "StrataEtcdCluster", dependencies: ["StrataEtcd", "StrataEngine"], path: "Sources/Engines/StrataEtcdCluster"),

        // The order-preserving key codec: a leaf (its key ranges live in the record layer).
        .target(name: "StrataKeyCodec", path: "Sources/Records/StrataKeyCodec"),

        // CRC-32C, the record checksum: the CPU's instruction where it has one, chosen at run time.
        .target(name: "CCRC32C", path: "Sources/C/CCRC32C"),

        // The record layer: records, Store (engine picked at init), typed queries. No adapter:
        // each engine's `Store(.x(…))` choice comes with its adapter module.
        .target(name: "StrataRecords", dependencies: ["StrataEngine", "StrataKeyCodec", "CCRC32C", "StrataSchemaHash"], path: "Sources/Records/StrataRecords"),
        // Value encryption: a value transform of the record layer over OpenSSL's libcrypto
        // (AES-256-GCM with contexts keyed once per key: swift-crypto keys one per value, which
        // cost four times the cipher; Benchmark.md, "Encryption").
        .target(name: "StrataEncryption", dependencies: ["StrataRecords", "CLibCrypto"], path: "Sources/Records/StrataEncryption"),
        // Value compression: a value transform of the record layer over libzstd.
        .target(name: "StrataCompression", dependencies: ["StrataRecords", "CZstd"], path: "Sources/Records/StrataCompression"),
        // The hash of derived schema versions, shared by the record layer and the macro plugin.
        .target(name: "StrataSchemaHash", path: "Sources/Records/StrataSchemaHash"),

        // The @IndexKeyRecord macro: its expansions (a library, which the tests call), the compiler
        // plugin that serves them, and the library that declares it. No test target depends on the
        // plugin: SwiftPM would then build all tests for the host, every dependency a second time.
        .target(
            name: "StrataMacrosExpansion",
            dependencies: [
                "StrataSchemaHash",
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            ],
            path: "Sources/Macros/StrataMacrosExpansion"
        ),
        .macro(
            name: "StrataMacrosPlugin",
            dependencies: [
                "StrataMacrosExpansion",
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ],
            path: "Sources/Macros/StrataMacrosPlugin"
        ),
        .target(name: "StrataMacros", dependencies: ["StrataRecords", "StrataMacrosPlugin"], path: "Sources/Macros/StrataMacros"),

        // The list of bundled engines, and the one import that brings everything.
        .target(name: "StrataBundledEngines", dependencies: ["StrataEngine", "StrataLMDB", "StrataLevelDB", "StrataSQLite", "StrataMemory"], path: "Sources/Engines/StrataBundledEngines"),
        .target(
            name: "Strata",
            dependencies: ["StrataRecords", "StrataMacros", "StrataEngine", "StrataKeyCodec", "StrataLMDB", "StrataLevelDB", "StrataSQLite", "StrataMemory"]
        ),

        // The conformance test kit: depends on the core only.
        .target(name: "StrataConformance", dependencies: ["StrataEngine"], path: "Conformance", exclude: ["README.md", "Records"]),
        // Its record-layer cases (secondary indexes), run on the same engines through the same runner.
        .target(
            name: "StrataRecordConformance",
            dependencies: ["StrataConformance", "StrataRecords", "StrataEngine", "StrataKeyCodec"],
            path: "Conformance/Records"
        ),

        // The benchmark's yardstick (the workloads straight on the C APIs), and the harness's
        // allocation counter (a malloc interposer: linked by strata-harness only).
        .target(
            name: "CRawBench",
            path: "Sources/C/CRawBench",
            linkerSettings: [.linkedLibrary("lmdb"), .linkedLibrary("leveldb"), .linkedLibrary("sqlite3")]
        ),
        .target(name: "CAllocationCounter", path: "Sources/C/CAllocationCounter"),

        // The store tools' commands, over a locator each tool supplies.
        .target(
            name: "StrataStoreTools",
            dependencies: [
                "StrataRecords", "StrataEngine", "StrataBundledEngines", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/Tools/StrataStoreTools"
        ),

        // What the tools share (package access): the --engine argument, the benchmark's record, `say`.
        .target(
            name: "StrataToolSupport",
            dependencies: [
                "StrataRecords", "StrataEngine", "StrataKeyCodec", "StrataBundledEngines",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/Tools/StrataToolSupport"
        ),

        // The command-line tool: the demo, the benchmarks, the conformance runner, the store tools.
        .executableTarget(
            name: "strata",
            dependencies: [
                "StrataRecords", "StrataEngine", "StrataKeyCodec", "StrataLMDB", "StrataLevelDB", "StrataSQLite", "StrataMemory",
                "StrataBundledEngines", "StrataConformance", "StrataRecordConformance", "StrataStoreTools", "StrataToolSupport", "CRawBench",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/Tools/strata"
        ),

        // The test harness (not a product): crash, power-loss and race runs, the suite's helper
        // processes, and the malloc-counting interposer no product may carry.
        .executableTarget(
            name: "strata-harness",
            dependencies: [
                "StrataRecords", "StrataEngine", "StrataKeyCodec", "StrataBundledEngines", "StrataConformance", "StrataToolSupport",
                "CAllocationCounter", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/Tools/strata-harness"
        ),

        // The etcd tool: conformance on a local or given cluster, the suite's second process, the
        // benchmark beside the embedded engines, and the store tools on etcd stores.
        .executableTarget(
            name: "strata-etcd",
            dependencies: [
                "StrataEtcd", "StrataEtcdCluster", "StrataEngine", "StrataConformance", "StrataRecordConformance",
                "StrataRecords", "StrataKeyCodec", "StrataBundledEngines", "StrataStoreTools", "StrataEncryption", "StrataCompression",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/Tools/strata-etcd"
        ),

        // The store tools for encrypted and compressed stores, key rotation and its crash test:
        // apart from `strata`, which links neither libcrypto nor libzstd; and the transforms' benchmark.
        .executableTarget(
            name: "strata-transforms",
            dependencies: [
                "StrataRecords", "StrataEngine", "StrataKeyCodec", "StrataBundledEngines", "StrataConformance", "StrataStoreTools",
                "StrataEncryption", "StrataCompression", "StrataToolSupport", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/Tools/strata-transforms"
        ),

        .testTarget(name: "StrataEngineTests", dependencies: ["StrataEngine"]),
        .testTarget(name: "StrataKeyCodecTests", dependencies: ["StrataKeyCodec", "StrataEngine", "StrataConformance"]),
        .testTarget(name: "StrataTests", dependencies: ["StrataRecords", "StrataEncryption", "StrataCompression", "CCRC32C", "StrataEngine", "StrataKeyCodec", "StrataBundledEngines", "StrataLMDB", "StrataLevelDB", "StrataSQLite", "StrataMemory", "StrataConformance", "StrataRecordConformance", "StrataEtcd", "StrataEtcdCluster"]),
        .testTarget(
            name: "StrataMacrosPluginTests",
            dependencies: ["StrataMacrosExpansion", .product(name: "SwiftSyntaxMacrosTestSupport", package: "swift-syntax")]
        ),
        .testTarget(name: "StrataMacrosTests", dependencies: ["Strata"]),
        // Empire's README and documentation examples, verbatim but for the import and the path.
        .testTarget(name: "EmpireExamplesTests", dependencies: ["Strata"]),
        .testTarget(
            name: "StrataAdapterTests",
            dependencies: [
                "StrataEngine", "StrataLMDB", "StrataLevelDB", "StrataSQLite", "StrataMemory", "StrataBundledEngines", "StrataConformance",
                "StrataRecordConformance", "StrataRecords", "StrataKeyCodec", "StrataEncryption", "StrataCompression", "CLMDB", "CLevelDB",
            ]
        ),
        .testTarget(
            name: "StrataEtcdTests",
            dependencies: [
                "StrataEtcd", "StrataEtcdCluster", "StrataEngine", "StrataConformance", "StrataRecordConformance", "StrataRecords", "StrataKeyCodec",
                "StrataLMDB",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
