#ifndef STRATA_RAWBENCH_H
#define STRATA_RAWBENCH_H
// The yardstick: the benchmark's engine-layer workloads run straight against liblmdb,
// libleveldb and libsqlite3 through their C APIs, with the settings Strata's adapters use.
// Every function times batches of operations into an array of nanoseconds and returns 0, or
// -1 with a message in rb_error().
#include <stddef.h>
#include <stdint.h>

enum { RB_LMDB = 0, RB_LEVELDB = 1, RB_SQLITE = 2 };

typedef struct rb_store rb_store;

/// Opens (creating) a store in directory `dir`. `durable`: 1 syncs every commit (Strata's
/// Durability.full), 0 does not (Durability.relaxed).
rb_store *rb_open(int engine, const char *dir, int durable);
void rb_close(rb_store *store);
const char *rb_error(void);

/// Writes n pairs, keys[order[i]] → vals[order[i]], `per_txn` per transaction. The time of each
/// batch of `batch` writes (commits included where they fall) goes to batch_ns.
int rb_fill(rb_store *s, const uint8_t *keys, size_t klen, const uint8_t *vals, size_t vlen,
            const uint32_t *order, size_t n, size_t per_txn, size_t batch, uint64_t *batch_ns);

/// Bytes of heap in use (glibc's mallinfo2: uordblks + hblkhd; 0 elsewhere), for the
/// benchmark's heap high-water marks. Statistics only: nothing is interposed.
uint64_t rb_heap_in_use(void);

/// The checksum every layer of the benchmark computes over each value it reads, so that every
/// value byte is read (as a record layer decoding it must) and the layers can be checked against
/// each other: a wrapping sum of the bytes as 8-byte little-endian words, then single bytes.
uint64_t rb_checksum(const void *bytes, size_t count);

/// Reads keys[order[i]] for all n in one read transaction; counts hits in *found and adds each
/// value's rb_checksum to *checksum.
int rb_read(rb_store *s, const uint8_t *keys, size_t klen, const uint32_t *order, size_t n,
            size_t batch, uint64_t *batch_ns, uint64_t *found, uint64_t *checksum);

/// Scans the whole store forward or backward in one read transaction, fetching every row's key
/// and value (as an engine hands both to its scan's visitor). Writes the time of each batch of
/// rows (up to max_batches), the row count and the sum of the values' rb_checksum.
int rb_scan(rb_store *s, int reverse, size_t batch, uint64_t *batch_ns, size_t max_batches,
            uint64_t *rows, uint64_t *checksum);

/// nscans scans of `len` rows each, from starts[i] (klen bytes each), in one read transaction;
/// times each scan; the rows seen (key and value fetched) and the sum of their values' rb_checksum.
int rb_scans(rb_store *s, const uint8_t *starts, size_t klen, size_t nscans, size_t len,
             uint64_t *scan_ns, uint64_t *rows, uint64_t *checksum);

#endif
