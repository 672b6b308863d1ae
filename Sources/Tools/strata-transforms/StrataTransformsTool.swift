import ArgumentParser
import Foundation
import StrataStoreTools

/// Strata's tools for stores whose values pass through transforms (encryption, compression):
/// the store tools with keys, key rotation, its crash test, and the transforms' benchmark. A tool
/// of its own, so that `strata` links neither libcrypto nor libzstd.
@main
struct StrataTransforms: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-transforms",
        abstract: "Strata's tools for stores whose values are encrypted or compressed: the store tools with keys, key rotation, the benchmark.",
        subcommands: StoreTools<TransformedStores>.commands + [RotateKeys.self, RotationCrashTest.self, RotationWriter.self, TransformsBench.self]
    )
}
