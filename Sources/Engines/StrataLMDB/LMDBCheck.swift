import CLMDB
import Foundation
import StrataEngine

/// The one place an LMDB return code becomes a Strata error.
@inline(__always)
func check(_ rc: Int32, _ operation: @autoclosure () -> String, path: String) throws(EngineError) {
    if rc != MDB_SUCCESS { throw lmdbError(rc, operation(), path: path) }
}

func lmdbError(_ rc: Int32, _ operation: String, path: String) -> EngineError {
    switch rc {
    case MDB_READERS_FULL: return .engineFailure(engine: "LMDB", code: Int(rc), message: "MDB_READERS_FULL", operation: operation)
    case MDB_INVALID, MDB_VERSION_MISMATCH:
        return .notAStore(path: path, reason: "not an LMDB data file (\(message(rc)))")
    case MDB_CORRUPTED, MDB_PAGE_NOTFOUND:
        return .corrupt(path: path, detail: "\(message(rc)) - while \(operation)")
    case ENOSPC, EDQUOT: return .diskFull(path: path)
    case EACCES, EPERM, EROFS: return .permissionDenied(path: path, detail: "\(message(rc)) - while \(operation)")
    case ENOENT: return .notFound(path: path)
    default: return .engineFailure(engine: "LMDB", code: Int(rc), message: message(rc), operation: operation)
    }
}

private func message(_ rc: Int32) -> String { String(cString: mdb_strerror(rc)) }

/// A pointer LMDB may read for an empty buffer, whose base address can be nil.
nonisolated(unsafe) private var emptyByte: UInt8 = 0

extension MDB_val {
    /// An `MDB_val` viewing `buffer`, for the duration of one LMDB call.
    @inline(__always)
    init(_ buffer: UnsafeRawBufferPointer) {
        self.init(mv_size: buffer.count, mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress) ?? UnsafeMutableRawPointer(&emptyByte))
    }

    /// The bytes this value points to, valid while LMDB says they are.
    @inline(__always)
    var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: mv_data, count: mv_size) }
}
