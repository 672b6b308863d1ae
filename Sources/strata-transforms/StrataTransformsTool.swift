import ArgumentParser
import Foundation
import StrataStoreTools

/// Strata's tools for stores whose values pass through transforms (encryption, compression):
/// the store tools with keys, key rotation, and its crash test. A tool of its own, so that
/// `strata` (and `make run`) builds no cryptography.
@main
struct StrataTransforms: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-transforms",
        abstract: "Strata's tools for stores whose values are encrypted or compressed: the store tools with keys, key rotation.",
        subcommands: StoreTools<TransformedStores>.commands + [RotateKeys.self, RotationCrashTest.self, RotationWriter.self]
    )
}

/// Prints a line and flushes it at once, so progress shows as it happens, also in pipes.
func say(_ line: String) {
    print(line)
    fflush(nil)
}
