// swift-tools-version: 6.1
// Encryption's cost: fills and random reads of one record set on every bundled engine, plain and
// with every value sealed by StrataEncryption (AES-256-GCM), medians of 5, with its targets. A
// package of its own, so that `make run` never builds swift-crypto. Run: make bench-encryption.
import Foundation
import PackageDescription

// A local package's identity is its directory's name, which depends on where the repository was
// cloned: read it here instead of spelling it.
let strataRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
let strata = strataRoot.lastPathComponent.lowercased()

let package = Package(
    name: "StrataEncryptionBench",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(
            name: "strata-encryption-bench",
            dependencies: [
                .product(name: "StrataRecords", package: strata), .product(name: "StrataEncryption", package: strata),
                .product(name: "StrataBundledEngines", package: strata), .product(name: "StrataEngine", package: strata),
                .product(name: "StrataKeyCodec", package: strata),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
