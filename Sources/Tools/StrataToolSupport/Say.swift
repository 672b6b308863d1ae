import Foundation

/// Prints a line and flushes it at once, so progress shows as it happens, also in pipes (a
/// test reading a child's output, a log).
package func say(_ line: String) {
    print(line)
    fflush(nil)
}
