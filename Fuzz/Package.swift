// swift-tools-version: 6.1
// The fuzz targets: one libFuzzer executable whose target is picked by STRATA_FUZZ_TARGET.
// A package of its own, so the product never builds it: Fuzz/run.sh builds it against this
// checkout with `--sanitize=fuzzer --sanitize=address` (`make fuzz`, and briefly in `make test`).
// It reads the record layer's internal decoders through `@testable import` (a debug build).
import PackageDescription

let package = Package(
    name: "strata-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "strata", path: "..")],
    targets: [
        .executableTarget(
            name: "strata-fuzz",
            dependencies: [
                .product(name: "StrataRecords", package: "strata"), .product(name: "StrataKeyCodec", package: "strata"),
                .product(name: "StrataEngine", package: "strata"), .product(name: "StrataMemory", package: "strata"),
                .product(name: "StrataLMDB", package: "strata"), .product(name: "StrataLevelDB", package: "strata"),
                .product(name: "StrataSQLite", package: "strata"),
            ],
            path: "Targets"
        )
    ],
    swiftLanguageModes: [.v6]
)
