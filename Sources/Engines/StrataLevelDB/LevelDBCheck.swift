import CLevelDB
import StrataEngine

/// The one place a LevelDB error string becomes a Strata error. LevelDB's C API reports
/// failures as a malloc'd message (`errptr`), which is freed here.
@inline(__always)
func check(_ errptr: UnsafeMutablePointer<CChar>?, _ operation: @autoclosure () -> String, path: String) throws(EngineError) {
    guard let errptr else { return }
    let message = String(cString: errptr)
    leveldb_free(errptr)
    throw levelDBError(message, operation(), path: path)
}

func levelDBError(_ message: String, _ operation: String, path: String) -> EngineError {
    if message.contains("already held by process") { return .alreadyOpen(path: path) }
    if message.contains("/LOCK") && (message.contains("Resource temporarily unavailable") || message.contains("lock")) {
        return .locked(path: path)
    }
    if message.contains("No space left") || message.contains("Disk quota") { return .diskFull(path: path) }
    if message.contains("Permission denied") || message.contains("Read-only file system") {
        return .permissionDenied(path: path, detail: "\(message) - while \(operation)")
    }
    // The store was made with another comparator: its keys are in another order.
    if message.contains("does not match existing comparator") {
        return .notAStore(path: path, reason: "a LevelDB store made with another comparator (\(message))")
    }
    if message.hasPrefix("Corruption") { return .corrupt(path: path, detail: "\(message) - while \(operation)") }
    if message.contains("does not exist (create_if_missing is false)") { return .notFound(path: path) }
    return .engineFailure(engine: "LevelDB", code: 0, message: message, operation: operation)
}

/// A key or value as LevelDB's C API takes it: a pointer and a length.
extension UnsafeRawBufferPointer {
    @inline(__always)
    var chars: UnsafePointer<CChar>? { baseAddress?.assumingMemoryBound(to: CChar.self) }
}
