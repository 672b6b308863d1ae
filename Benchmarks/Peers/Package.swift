// swift-tools-version: 6.1
// The peer benchmark: Strata's record layer on every embedded engine beside GRDB's record API on
// SQLite, on the workloads of ../../../shared/reference/peers.md. A package of its own, so that
// `make run` and `make test` never build GRDB (or swift-syntax for the macro). Run: make bench-peers.
import Foundation
import PackageDescription

// A local package's identity is its directory's name, which depends on where the repository was
// cloned: read it here instead of spelling it.
let strataRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
let strata = strataRoot.lastPathComponent.lowercased()

let package = Package(
    name: "StrataPeers",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .executableTarget(
            name: "strata-peers",
            dependencies: [
                .product(name: "Strata", package: strata),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
