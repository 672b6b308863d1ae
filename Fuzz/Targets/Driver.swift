import Foundation

// libFuzzer's entry points (the fuzzer's own `main` calls them). The target is named by
// STRATA_FUZZ_TARGET; with STRATA_FUZZ_SEEDS=<directory> the target writes its seed inputs there
// instead of fuzzing (how Fuzz/Corpus was made).

/// The target this process runs, chosen once from the environment.
let chosen: FuzzTarget = {
    let environment = ProcessInfo.processInfo.environment
    let name = environment["STRATA_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget.all.first(where: { $0.name == name }) else {
        FileHandle.standardError.write(Data("STRATA_FUZZ_TARGET must be one of: \(FuzzTarget.all.map(\.name).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>) -> Int32 {
    guard let directory = ProcessInfo.processInfo.environment["STRATA_FUZZ_SEEDS"] else {
        _ = chosen
        return 0
    }
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (i, seed) in chosen.seeds().enumerated() {
            try Data(seed).write(to: URL(fileURLWithPath: directory).appendingPathComponent(String(format: "seed-%03d", i)))
        }
    } catch {
        FileHandle.standardError.write(Data("writing the seeds failed: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    chosen.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
