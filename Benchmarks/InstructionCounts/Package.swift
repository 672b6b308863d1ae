// swift-tools-version: 6.1
// Instructions per record operation, counted by callgrind (repeatable where timings are not).
// A package of its own, so the product never builds it: `make instructions` (run.sh) builds it
// against this checkout and, given a base commit, against that commit too.
import PackageDescription

let package = Package(
    name: "instruction-counts",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "strata", path: "../..")],
    targets: [.executableTarget(name: "instruction-counts", dependencies: [
        .product(name: "StrataRecords", package: "strata"), .product(name: "StrataLMDB", package: "strata"),
        .product(name: "StrataLevelDB", package: "strata"), .product(name: "StrataMemory", package: "strata"), .product(name: "StrataKeyCodec", package: "strata")])],
    swiftLanguageModes: [.v6]
)
