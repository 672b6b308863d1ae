import CSQLite
import StrataEngine

/// The one place an SQLite result code becomes a Strata error, in GRDB's style:
/// `SQLite error 19: NOT NULL constraint failed: kv.v - while executing INSERT …`.
@inline(__always)
func check(_ rc: Int32, _ db: OpaquePointer?, _ operation: @autoclosure () -> String, path: String) throws(EngineError) {
    if rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE {
        throw sqliteError(rc, db, operation(), path: path)
    }
}

func sqliteError(_ rc: Int32, _ db: OpaquePointer?, _ operation: String, path: String) -> EngineError {
    let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
    switch rc & 0xFF {
    case SQLITE_FULL: return .diskFull(path: path)
    case SQLITE_NOTADB: return .notAStore(path: path, reason: "data.sqlite is not an SQLite database (\(message))")
    case SQLITE_CORRUPT: return .corrupt(path: path, detail: "SQLite error \(rc): \(message) - while \(operation)")
    case SQLITE_PERM, SQLITE_AUTH, SQLITE_READONLY:
        return .permissionDenied(path: path, detail: "SQLite error \(rc): \(message) - while \(operation)")
    case SQLITE_CANTOPEN:
        return .permissionDenied(path: path, detail: "SQLite error \(rc): \(message) - while \(operation)")
    default: return .engineFailure(engine: "SQLite", code: Int(rc), message: message, operation: operation)
    }
}

/// SQLite's "copy the bytes now" destructor marker.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
