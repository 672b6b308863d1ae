import Foundation
import StrataEngine
import StrataKeyCodec

/// What upgrading a store's format did (RecordFormat.md, "Upgrading from format 1").
public struct FormatUpgradeReport: Sendable, Hashable {
    /// The format the store had.
    public var fromFormat: UInt32
    /// Records rewritten in the current format so far.
    public var converted: Int
    /// Values in a record keyspace whose format-1 checksum did not match: damaged before the
    /// upgrade. They are left as found and read as ``RecordError/corruptRecord(type:detail:)``.
    public var damaged: Int
    /// The first (at most 10) keys of damaged values.
    public var firstDamagedKeys: [[UInt8]]
    /// Keys outside every record keyspace (written through the engine), left as found.
    public var untouched: Int
    /// Write transactions committed so far.
    public var batches: Int
}

/// Rewrites a format-1 store as format 2, in place, in batches of short write transactions
/// whose progress is stored in the store: a crash (even `kill -9`) mid-way loses nothing, and the
/// next writable open resumes where the last committed batch ended. Format 2 changes only the
/// checksum of record values and the catalog entries; keys, schema versions and field bytes stay.
enum FormatUpgrade {
    static let jobName = "format-2"
    /// Formats this build upgrades from.
    static let upgradable: Set<UInt32> = [1]
    /// At most this many records per batch (and about 50 ms, within the engine's limits: ``JobBatch``).
    static let defaultBatchSize = JobBatch.defaultSize

    static func run(_ engine: any KeyValueEngine, batchSize requested: Int = defaultBatchSize,
                    onBatch: (FormatUpgradeReport) -> Void = { _ in }) throws -> FormatUpgradeReport? {
        let job = SystemKey.job(jobName)
        // 1. Claim the upgrade: catalog entries converted, the manifest at format 2, the job
        //    started. An older build refuses the store from here on; a current one resumes.
        let fromFormat: UInt32? = try engine.write { tx in
            let manifest = try Manifest.required(in: tx)
            if manifest.format == Manifest.formatVersion {
                return try tx.get(job).map { try Progress(decoding: $0).report.fromFormat }  // resume, or done by another
            }
            for (key, value) in try tx.pairs(SystemKey.keyspaces) {
                let name = try keyspaceName(ofCatalogKey: key)
                try tx.put(try CatalogEntry(formatOneLayout: value, keyspace: name).encoded(), forKey: key)
            }
            var upgraded = manifest
            upgraded.format = Manifest.formatVersion
            try tx.put(Manifest.encode(upgraded), forKey: SystemKey.manifest)
            let start = Progress(report: FormatUpgradeReport(
                fromFormat: manifest.format, converted: 0, damaged: 0, firstDamagedKeys: [], untouched: 0, batches: 1), after: [])
            try tx.put(start.encoded(), forKey: job)
            return manifest.format
        }
        guard fromFormat != nil else { return nil }

        // 2. Batches (``JobBatch``), each reading the progress in its own transaction: two
        //    processes upgrading at once take turns and never convert a record twice.
        var batching = JobBatch(engine: engine, requested: requested)
        while true {
            let outcome: (report: FormatUpgradeReport, finished: Bool)? = try JobBatch.run(&batching) { batching in
                try engine.write { tx in
                    guard let stored = try tx.get(job) else { return nil }
                    var progress = try Progress(decoding: stored)
                    let keyspaces = Set(try tx.keys(SystemKey.keyspaces).map(keyspaceName(ofCatalogKey:)))
                    let (batch, exhausted) = try batching.next(in: tx, SystemKey.nonSystem, after: progress.after.isEmpty ? nil : progress.after)
                    for (key, value) in batch {
                        guard let keyspace = try? recordKeyspace(of: key), keyspaces.contains(keyspace) else {
                            progress.report.untouched += 1
                            continue
                        }
                        if let rewritten = rewrite(key: key, formatOneValue: value) {
                            try tx.put(rewritten, forKey: key)
                            progress.report.converted += 1
                        } else {
                            progress.report.damaged += 1
                            if progress.report.firstDamagedKeys.count < 10 { progress.report.firstDamagedKeys.append(key) }
                        }
                    }
                    progress.after = batch.last?.key ?? progress.after
                    progress.report.batches += 1
                    if exhausted {
                        try tx.delete(job)
                    } else {
                        try tx.put(progress.encoded(), forKey: job)
                    }
                    return (progress.report, exhausted)
                }
            }
            guard let outcome else { return nil }  // another process finished it
            onBatch(outcome.report)
            if outcome.finished { return outcome.report }
        }
    }

    /// The format-2 value for a format-1 value, or `nil` when its format-1 checksum does not match.
    static func rewrite(key: [UInt8], formatOneValue value: [UInt8]) -> [UInt8]? {
        guard value.count >= 4 else { return nil }
        let body = value[..<(value.count - 4)]
        let stored = value[(value.count - 4)...].withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
        return key.withUnsafeBytes { k in
            body.withUnsafeBytes { b -> [UInt8]? in
                guard FormatOneChecksum.of(key: k, value: b) == stored else { return nil }
                let crc = RecordChecksum.of(key: k, value: b)
                return Array(body) + withUnsafeBytes(of: crc.littleEndian) { Array($0) }
            }
        }
    }

    static func keyspaceName(ofCatalogKey key: [UInt8]) throws -> String {
        try key.withUnsafeBytes { raw in
            var reader = KeyReader(UnsafeRawBufferPointer(rebasing: raw[SystemKey.prefix.count...]))
            _ = try reader.read(String.self)  // "keyspace"
            return try reader.read(String.self)
        }
    }

    /// The keyspace name a record key starts with.
    static func recordKeyspace(of key: [UInt8]) throws -> String {
        try key.withUnsafeBytes { raw in
            var reader = KeyReader(raw)
            return try reader.read(String.self)
        }
    }

    /// The job's stored progress: the report so far and the last key handled.
    struct Progress {
        var report: FormatUpgradeReport
        var after: [UInt8]

        func encoded() -> [UInt8] {
            var w = FieldWriter()
            w.write(report.fromFormat)
            w.write(report.converted)
            w.write(report.damaged)
            w.write(report.firstDamagedKeys)
            w.write(report.untouched)
            w.write(report.batches)
            w.write(after)
            return w.bytes
        }

        init(report: FormatUpgradeReport, after: [UInt8]) {
            self.report = report
            self.after = after
        }

        init(decoding bytes: [UInt8]) throws {
            do {
                self = try bytes.withUnsafeBytes { raw in
                    var r = FieldReader(raw)
                    let report = FormatUpgradeReport(
                        fromFormat: try r.read(), converted: try r.read(), damaged: try r.read(),
                        firstDamagedKeys: try r.read(), untouched: try r.read(), batches: try r.read())
                    let progress = Progress(report: report, after: try r.read([UInt8].self))
                    try r.finish()
                    return progress
                }
            } catch {
                throw RecordError.manifestMismatch(detail: "the format upgrade's progress is unreadable: \(error)")
            }
        }
    }
}
