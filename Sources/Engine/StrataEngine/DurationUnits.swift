// Durations as the C and NIO calls below the engines want them: whole units, clamped.

extension Duration {
    /// The duration in whole milliseconds, rounded toward zero; durations past `Int64`'s range
    /// clamp to its ends. For C calls that take milliseconds (`poll`, `sqlite3_busy_timeout`).
    public var wholeMilliseconds: Int64 { whole(per: 1_000) }

    /// The duration in whole nanoseconds, rounded toward zero; durations past `Int64`'s range
    /// (about 292 years) clamp to its ends. For NIO's `TimeAmount`.
    public var wholeNanoseconds: Int64 { whole(per: 1_000_000_000) }

    /// The duration in seconds, as `Foundation`'s time intervals count them.
    public var secondsValue: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// Whole units of `1 / unitsPerSecond` s, clamped to `Int64`.
    private func whole(per unitsPerSecond: Int64) -> Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: unitsPerSecond)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflowSum) = scaled.addingReportingOverflow(attoseconds / (1_000_000_000_000_000_000 / unitsPerSecond))
        if overflowSum { return seconds < 0 ? .min : .max }
        return sum
    }
}
