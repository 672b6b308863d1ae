// swift-tools-version: 6.1
// The value transforms' cost and gain: fills and random reads on every bundled engine, plain and
// with every value sealed by StrataEncryption (AES-256-GCM), and a text-heavy record set plain and
// compressed by StrataCompression (zstd) with its size on disk; medians of 5, with the targets. A
// package of its own, so that `make run` never builds swift-crypto. Run: make bench-transforms.
import Foundation
import PackageDescription

// A local package's identity is its directory's name, which depends on where the repository was
// cloned: read it here instead of spelling it.
let strataRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
let strata = strataRoot.lastPathComponent.lowercased()

let package = Package(
    name: "StrataTransformsBench",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(
            name: "strata-transforms-bench",
            dependencies: [
                .product(name: "StrataRecords", package: strata), .product(name: "StrataEncryption", package: strata),
                .product(name: "StrataCompression", package: strata),
                .product(name: "StrataBundledEngines", package: strata), .product(name: "StrataEngine", package: strata),
                .product(name: "StrataKeyCodec", package: strata),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
