import FuzzSupport

// libFuzzer's entry points (the fuzzer's own `main` calls them), over the etcd target (a binary of its own: it builds gRPC).

let chosen = FuzzDriver.chosen(among: [EtcdAnswerTarget.target])

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>) -> Int32 {
    FuzzDriver.initialize(chosen)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    chosen.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
