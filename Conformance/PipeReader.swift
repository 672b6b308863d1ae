import Foundation

/// Reads everything a child process writes into a pipe, on a thread of its own, and hands each
/// chunk to `receive` as it comes.
///
/// Blocking reads, not `FileHandle.readabilityHandler`: on Linux, tearing down that handler's
/// dispatch source races the descriptor's close and can crash libdispatch's manager thread
/// (swift-corelibs-libdispatch#949, swift-corelibs-foundation#3276; it crashed `strata
/// conformance` here once). A blocking read registers nothing with libdispatch.
public final class PipeReader: Sendable {
    private let ended = DispatchSemaphore(value: 0)

    /// Starts reading `handle` (the read end of a pipe the child writes) until end of file.
    public init(_ handle: FileHandle, _ receive: @escaping @Sendable (Data) -> Void) {
        let ended = ended
        Thread.detachNewThread {
            while true {
                let data = handle.availableData  // blocks until bytes arrive; empty at end of file
                if data.isEmpty { break }
                receive(data)
            }
            ended.signal()
        }
    }

    /// Waits until every writer closed the pipe (the child ended) and every chunk was received.
    public func waitForEnd() {
        ended.wait()
        ended.signal()
    }
}
