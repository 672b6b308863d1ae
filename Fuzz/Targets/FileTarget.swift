import FuzzSupport
import Foundation
import StrataEngine
import StrataLevelDB
import StrataLMDB
import StrataSQLite

/// An engine's files, damaged: the input is the first byte (which engine) and the store's files
/// (each a framed name and a value framed by three bytes), written into a new directory and
/// opened. Opening must refuse with a typed `EngineError`, or open and then read every pair (or
/// refuse the read with a typed error); never crash, hang or read out of bounds. The seeds are
/// small real stores of each engine.
///
/// LMDB reads its pages straight from its map and trusts them: a leaf page whose node offsets
/// point past the page (found by this target in its first minute) faults when read, and only
/// reading every page at open could tell (RecordFormat.md and DurabilityAndCrashSafety.md say
/// so). So LMDB's input damages what Strata checks before LMDB maps the file: the meta pages and
/// the file's length (a store of 2,000 pairs, large values among them, with branch pages and
/// overflow pages): the input is a length in pages (0: all), a patch offset in the meta pages
/// (two bytes) and the patch (framed).
enum FileTarget {
    static let engines: [(name: String, configuration: @Sendable (String) -> EngineConfiguration)] = [
        ("lmdb", { .lmdb(path: $0) }), ("leveldb", { .leveldb(path: $0) }), ("sqlite", { .sqlite(path: $0) }),
    ]
    static let target = FuzzTarget(name: "files", run: run, seeds: seeds)

    /// The pristine LMDB file the LMDB inputs damage, and its page size.
    static let lmdbFile: (bytes: [UInt8], pageSize: Int) = {
        let directory = NSTemporaryDirectory() + "strata-fuzz-lmdb-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let opened = try! EngineConfiguration.lmdb(path: directory).open(EngineOptions(mode: .create))
        try! opened.write { tx in
            for n in 0..<2_000 {
                let value = n % 100 == 0 ? [UInt8](repeating: UInt8(n % 251), count: 9_000) : Array("value \(n)".utf8)
                try tx.put(value, forKey: Array("key \(n * 7919 % 10_000)".utf8))
            }
        }
        try! opened.close()
        return (Array(FileManager.default.contents(atPath: directory + "/data.mdb")!), Int(getpagesize()))
    }()

    static func run(_ input: UnsafeRawBufferPointer) {
        var r = InputReader(input)
        let engine = engines[Int(r.byte()) % engines.count]
        let directory = NSTemporaryDirectory() + "strata-fuzz-files-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            if engine.name == "lmdb" {
                var file = lmdbFile.bytes
                let pages = Int(r.byte()) << 8 | Int(r.byte())
                if pages > 0 { file = Array(file.prefix(pages * lmdbFile.pageSize / 4)) }  // quarter pages: cuts inside pages too
                let offset = (Int(r.byte()) << 8 | Int(r.byte())) % (2 * lmdbFile.pageSize)
                for (i, byte) in r.chunk().enumerated() where offset + i < min(file.count, 2 * lmdbFile.pageSize) { file[offset + i] = byte }
                try Data(file).write(to: URL(fileURLWithPath: directory).appendingPathComponent("data.mdb"))
            }
            while engine.name != "lmdb", !r.isAtEnd {
                let name = String(decoding: r.chunk(), as: UTF8.self)
                let content = Data(r.chunk(lengthBytes: 3))
                // Plain names only: the input must not write outside its directory.
                guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else { continue }
                try content.write(to: URL(fileURLWithPath: directory).appendingPathComponent(name))
            }
        } catch {
            return
        }
        let opened: any KeyValueEngine
        do {
            opened = try engine.configuration(directory).open(EngineOptions(mode: .openExisting))
        } catch is EngineError {
            return
        } catch {
            violated("\(engine.name): opening damaged files failed with an untyped error: \(error)")
        }
        defer { try? opened.close() }
        do {
            try opened.read { tx in
                try tx.scan(.all, reverse: false, limit: nil) { _, _ in true }
                try tx.scan(.all, reverse: true, limit: 100) { _, _ in true }
            }
        } catch is EngineError {
        } catch {
            violated("\(engine.name): reading damaged files failed with an untyped error: \(error)")
        }
    }

    static func seeds() -> [[UInt8]] {
        // LMDB: whole, cut to its meta pages, cut by a quarter page, and a meta page's root patched.
        let pages = lmdbFile.bytes.count / lmdbFile.pageSize
        var seeds: [[UInt8]] = [[0, 0, 0, 0, 0, 0], [0, 0, 8, 0, 0, 0], [0, UInt8((4 * pages - 1) >> 8), UInt8((4 * pages - 1) & 0xFF), 0, 0, 0],
                                [0, 0, 0, 0, 128, 2, 0x30, 0]]
        for (i, engine) in engines.enumerated() where engine.name != "lmdb" {
            for count in [0, 3, 40] {
                let directory = NSTemporaryDirectory() + "strata-fuzz-seed-\(getpid())"
                try? FileManager.default.removeItem(atPath: directory)
                defer { try? FileManager.default.removeItem(atPath: directory) }
                guard let opened = try? engine.configuration(directory).open(EngineOptions(mode: .create)) else { continue }
                try? opened.write { tx in
                    for n in 0..<count { try tx.put(Array("value \(n)".utf8), forKey: Array("key \(n * 7919 % 1000)".utf8)) }
                }
                try? opened.close()
                var seed: [UInt8] = [UInt8(i)]
                for name in ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted() {
                    guard let content = FileManager.default.contents(atPath: directory + "/" + name), content.count < 1 << 24,
                          name != "lock.mdb", name != "LOCK"
                    else { continue }
                    seed += framed(Array(name.utf8)) + framed(Array(content), lengthBytes: 3)
                }
                seeds.append(seed)
            }
        }
        return seeds
    }
}
