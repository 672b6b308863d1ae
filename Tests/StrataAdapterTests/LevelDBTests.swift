import CLevelDB
import Foundation
import StrataEngine
import StrataLevelDB
import Testing

@Suite("LevelDB adapter")
struct LevelDBTests {
    @Test("a store made through LevelDB's C API with another comparator is refused as not a store, files untouched")
    func otherComparator() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        // Reverse bytewise order, under a name of its own: what another program may have used.
        let comparator = leveldb_comparator_create(
            nil, { _ in },
            { _, a, alen, b, blen in
                let x = UnsafeRawBufferPointer(start: a, count: alen), y = UnsafeRawBufferPointer(start: b, count: blen)
                return y.lexicographicallyPrecedes(x) ? -1 : (x.lexicographicallyPrecedes(y) ? 1 : 0)
            },
            { _ in UnsafePointer(strdup("example.ReverseComparator")) })
        let options = leveldb_options_create()
        leveldb_options_set_create_if_missing(options, 1)
        leveldb_options_set_comparator(options, comparator)
        var err: UnsafeMutablePointer<CChar>?
        let db = leveldb_open(options, dir.path, &err)
        #expect(err == nil)
        let write = leveldb_writeoptions_create()
        leveldb_put(db, write, "a", 1, "1", 1, &err)
        leveldb_close(db)
        leveldb_writeoptions_destroy(write)
        leveldb_options_destroy(options)
        leveldb_comparator_destroy(comparator)

        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        let sizes = files.map { (try? FileManager.default.attributesOfItem(atPath: dir.path + "/" + $0)[.size] as? Int) ?? -1 }
        for mode in [OpenMode.openExisting, .readOnly] {
            do {
                _ = try LevelDBEngine(path: dir.path, options: EngineOptions(mode: mode))
                Issue.record("opened a store made with another comparator")
            } catch let EngineError.notAStore(path, reason) {
                #expect(path == dir.path)
                #expect(reason.hasPrefix("a LevelDB store made with another comparator") && reason.contains("example.ReverseComparator"), "\(reason)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == files)
        #expect(files.map { (try? FileManager.default.attributesOfItem(atPath: dir.path + "/" + $0)[.size] as? Int) ?? -1 } == sizes)
    }
}
