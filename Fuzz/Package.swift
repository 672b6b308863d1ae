// swift-tools-version: 6.1
// The fuzz targets: libFuzzer executables whose target is picked by STRATA_FUZZ_TARGET.
// A package of its own, so the product never builds it: Fuzz/run.sh builds it against this
// checkout with `--sanitize=fuzzer --sanitize=address` (`make fuzz`, and briefly in CI).
// It reads internal decoders through `@testable import` (a debug build). The etcd target is a
// binary of its own (`strata-fuzz-etcd`): it builds gRPC, NIO and BoringSSL, which the others
// do not need, so only `make fuzz` builds it.
import PackageDescription

let package = Package(
    name: "strata-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "strata", path: ".."),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
    ],
    targets: [
        .target(name: "FuzzSupport", path: "Support"),
        .executableTarget(
            name: "strata-fuzz",
            dependencies: [
                "FuzzSupport",
                .product(name: "StrataRecords", package: "strata"), .product(name: "StrataKeyCodec", package: "strata"),
                .product(name: "StrataEngine", package: "strata"), .product(name: "StrataMemory", package: "strata"),
                .product(name: "StrataLMDB", package: "strata"), .product(name: "StrataLevelDB", package: "strata"),
                .product(name: "StrataSQLite", package: "strata"),
            ],
            path: "Targets"
        ),
        .executableTarget(
            name: "strata-fuzz-etcd",
            dependencies: [
                "FuzzSupport", .product(name: "StrataEtcd", package: "strata"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "EtcdTargets"
        ),
    ],
    swiftLanguageModes: [.v6]
)
