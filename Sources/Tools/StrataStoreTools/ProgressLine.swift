import Foundation
import StrataRecords

/// Progress of a long operation on standard error: on a terminal, one line rewritten in place
/// (records/s, elapsed, remaining); otherwise plain lines, at most one a second, with no control
/// characters, so logs and pipes stay readable.
final class ProgressLine {
    private let label: String
    private let terminal: Bool
    private var lastShown: Duration?
    private var last: InspectionProgress?

    init(_ label: String, terminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.label = label
        self.terminal = terminal
    }

    /// A progress line when standard error is a terminal, `nil` otherwise (for commands whose
    /// output is data, where progress lines in a log would only be noise).
    static func onTerminal(_ label: String) -> ProgressLine? {
        isatty(STDERR_FILENO) == 1 ? ProgressLine(label, terminal: true) : nil
    }

    func update(_ progress: InspectionProgress) {
        last = progress
        let interval: Duration = terminal ? .milliseconds(100) : .seconds(1)
        if let lastShown, progress.elapsed - lastShown < interval, progress.done < progress.total { return }
        lastShown = progress.elapsed
        show(Self.text(label, progress))
    }

    /// Ends the progress display with a last line (none when nothing was reported).
    func finish() {
        guard let last else { return }
        show(Self.text(label, last) + ", done")
        if terminal { write("\n") }
    }

    private func show(_ text: String) {
        write(terminal ? "\r\(text)\u{1B}[K" : "\(text)\n")
    }

    private func write(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }

    static func text(_ label: String, _ p: InspectionProgress) -> String {
        let seconds = p.elapsed.secondsValue
        let rate = seconds > 0 ? Double(p.done) / seconds : 0
        let percent = p.total > 0 ? 100 * p.done / p.total : 100
        var text = "\(label): \(p.done) of \(p.total) pairs (\(percent)%), \(Int(rate)) pairs/s, \(String(format: "%.1f", seconds)) s elapsed"
        if rate > 0 && p.done < p.total { text += ", \(String(format: "%.1f", Double(p.total - p.done) / rate)) s remaining" }
        return text
    }
}
