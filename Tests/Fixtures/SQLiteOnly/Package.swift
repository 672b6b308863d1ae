// swift-tools-version: 6.1
// A user's package that depends on the record layer, the macro and the SQLite engine only (the
// README's modular path, without the umbrella module `Strata`). Built by
// Tests/Fixtures/check-sqlite-only.sh, which places the Strata checkout beside it as `strata`:
// the build must not involve LMDB or LevelDB, and the binary must not link them.
import PackageDescription

let package = Package(
    name: "SQLiteOnly",
    platforms: [.macOS(.v14)],
    dependencies: [.package(path: "../strata")],
    targets: [
        .executableTarget(
            name: "SQLiteOnly",
            dependencies: [
                .product(name: "StrataRecords", package: "strata"),
                .product(name: "StrataMacros", package: "strata"),
                .product(name: "StrataSQLite", package: "strata"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
