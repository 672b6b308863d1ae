// swift-tools-version: 6.1
// Strata: a Swift record store with pluggable storage engines.
//
// Layers, bottom to top (each folder is one layer):
//   Sources/C*            system-library shims for liblmdb, libleveldb, libsqlite3
//   Sources/StrataEngine  the engine core: the KeyValueEngine contract, kept once by CoreEngine
//                         over the storage primitives adapters supply (KeyValueStorage)
//   Sources/Strata<X>     one adapter per engine (LMDB, LevelDB, SQLite, Memory): primitives only,
//                         depending on the core and their C library
//   Sources/StrataEtcd    the etcd engine (a cluster over its gRPC API); StrataEtcdCluster starts
//                         local clusters; Sources/strata-etcd is its tool (not built by `make run`)
//   Sources/StrataKeyCodec the order-preserving codec for typed index keys (a leaf)
//   Sources/CCRC32C       CRC-32C (hardware where the CPU has it), the record checksum
//   Sources/CThreadSanitizerHooks tells ThreadSanitizer of the locks it cannot see (StrataEngine's Locked)
//   Sources/StrataSchemaHash the hash of derived schema versions (the record layer and the macro plugin)
//   Sources/StrataRecords the record layer: records, Store, typed queries (no adapter);
//                         RecordFormat.md is the on-disk format
//   Sources/StrataEncryption value encryption (AES-256-GCM from the system's libcrypto), a value transform
//                         of the record layer: a product of its own, not built by `make run`
//   Sources/StrataCompression value compression (zstd, the system's libzstd through CZstd), a
//                         value transform too: a product of its own
//   Sources/StrataMacros  @IndexKeyRecord (plugin: Sources/StrataMacrosPlugin over the expansions
//                         in Sources/StrataMacrosExpansion, swift-syntax)
//   Sources/Strata        the one import: records, the macro and every bundled engine
//   Sources/StrataBundledEngines the one list of bundled engines (CLI, benchmark, tests)
//   Conformance/          the test kit every engine must pass (a library product; Records/ holds
//                         the record-layer cases, a product of its own)
//   Sources/StrataStoreTools the store tools' commands (stats, dump, verify, copy, backup), shared
//                         by `strata` (stores in directories) and `strata-etcd` (and stores on etcd)
//   Sources/strata        the command-line tool (demo, benchmark, conformance runner; no macro)
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
        // generated from Sources/StrataEtcd/Protocol/Wire/etcd.proto is committed).
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.0"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.0"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
    ],
    targets: [
        // C libraries, through the system's packages.
        .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CLevelDB", providers: [.apt(["libleveldb-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // Engine core: protocol, ranges, errors, options. No engine; its one C target tells
        // ThreadSanitizer of the package's locks (see Locked.swift).
        .target(name: "StrataEngine", dependencies: ["CThreadSanitizerHooks"]),
        .target(name: "CThreadSanitizerHooks"),

        // Engine adapters.
        .target(name: "StrataLMDB", dependencies: ["StrataEngine", "CLMDB"]),
        .target(name: "StrataLevelDB", dependencies: ["StrataEngine", "CLevelDB", "CCRC32C"]),
        .target(name: "StrataSQLite", dependencies: ["StrataEngine", "CSQLite"]),
        .target(name: "StrataMemory", dependencies: ["StrataEngine"]),
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
            exclude: ["Protocol/Wire/etcd.proto", "Protocol/Wire/generate.sh"]
        ),
        .target(name: "StrataEtcdCluster", dependencies: ["StrataEtcd"]),

        // The order-preserving key codec: a leaf (its key ranges live in the record layer).
        .target(name: "StrataKeyCodec"),

        // CRC-32C, the record checksum: the CPU's instruction where it has one, chosen at run time.
        .target(name: "CCRC32C"),

        // The record layer: records, Store (engine picked at init), typed queries. No adapter:
        // each engine's `Store(.x(…))` choice comes with its adapter module.
        .target(name: "StrataRecords", dependencies: ["StrataEngine", "StrataKeyCodec", "CCRC32C", "StrataSchemaHash"]),
        // Value encryption: a value transform of the record layer over OpenSSL's libcrypto
        // (AES-256-GCM with contexts keyed once per key: swift-crypto keys one per value, which
        // cost four times the cipher; Benchmark.md, "Encryption").
        .target(name: "StrataEncryption", dependencies: ["StrataRecords", "CLibCrypto"]),
        // Value compression: a value transform of the record layer over libzstd.
        .target(name: "StrataCompression", dependencies: ["StrataRecords", "CZstd"]),
        // The hash of derived schema versions, shared by the record layer and the macro plugin.
        .target(name: "StrataSchemaHash"),

        // The @IndexKeyRecord macro: its expansions (a library, which the tests call), the compiler
        // plugin that serves them, and the library that declares it. No test target depends on the
        // plugin: SwiftPM would then build all tests for the host, every dependency a second time.
        .target(
            name: "StrataMacrosExpansion",
            dependencies: [
                "StrataSchemaHash",
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            ]
        ),
        .macro(
            name: "StrataMacrosPlugin",
            dependencies: [
                "StrataMacrosExpansion",
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(name: "StrataMacros", dependencies: ["StrataRecords", "StrataMacrosPlugin"]),

        // The list of bundled engines, and the one import that brings everything.
        .target(name: "StrataBundledEngines", dependencies: ["StrataEngine", "StrataLMDB", "StrataLevelDB", "StrataSQLite", "StrataMemory"]),
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

        // The benchmark's yardstick (the workloads straight on the C APIs) and its allocation counter.
        .target(
            name: "CRawBench",
            linkerSettings: [.linkedLibrary("lmdb"), .linkedLibrary("leveldb"), .linkedLibrary("sqlite3")]
        ),
        .target(name: "CAllocationCounter"),

        // The store tools' commands, over a locator each tool supplies.
        .target(
            name: "StrataStoreTools",
            dependencies: [
                "StrataRecords", "StrataEngine", "StrataBundledEngines", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // Command-line tool.
        .executableTarget(
            name: "strata",
            dependencies: [
                "StrataRecords", "StrataEngine", "StrataKeyCodec", "StrataLMDB", "StrataLevelDB", "StrataSQLite", "StrataMemory",
                "StrataBundledEngines", "StrataConformance", "StrataRecordConformance", "StrataStoreTools", "CRawBench", "CAllocationCounter",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // The etcd tool: conformance on a local or given cluster, the suite's second process, the
        // benchmark beside the embedded engines, and the store tools on etcd stores.
        .executableTarget(
            name: "strata-etcd",
            dependencies: [
                "StrataEtcd", "StrataEtcdCluster", "StrataEngine", "StrataConformance", "StrataRecordConformance",
                "StrataRecords", "StrataKeyCodec", "StrataBundledEngines", "StrataStoreTools", "StrataEncryption", "StrataCompression",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // The store tools for encrypted and compressed stores, key rotation and its crash test:
        // apart from `strata`, which links neither libcrypto nor libzstd; and the transforms' benchmark.
        .executableTarget(
            name: "strata-transforms",
            dependencies: [
                "StrataRecords", "StrataEngine", "StrataKeyCodec", "StrataBundledEngines", "StrataConformance", "StrataStoreTools",
                "StrataEncryption", "StrataCompression", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        .testTarget(name: "StrataEngineTests", dependencies: ["StrataEngine"]),
        .testTarget(name: "StrataKeyCodecTests", dependencies: ["StrataKeyCodec", "StrataEngine", "StrataConformance"]),
        .testTarget(name: "StrataTests", dependencies: ["StrataRecords", "StrataEncryption", "StrataCompression", "CCRC32C", "StrataEngine", "StrataKeyCodec", "StrataBundledEngines", "StrataLMDB", "StrataLevelDB", "StrataSQLite", "StrataMemory", "StrataConformance", "StrataEtcd", "StrataEtcdCluster"]),
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
