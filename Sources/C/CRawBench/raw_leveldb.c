// The yardstick on LevelDB, with the adapter's settings: default options (Snappy on), reads
// from a snapshot, writes as WriteBatches, sync per commit when durable.
#include "common.h"
#include <leveldb/c.h>
#include <stdlib.h>

typedef struct { rb_store base; leveldb_t *db; leveldb_options_t *options; leveldb_filterpolicy_t *filter; leveldb_writeoptions_t *write; } leveldb_store;

#define CHECK(err, what) do { if (err) { rb_fail("%s: %s", what, err); leveldb_free(err); return -1; } } while (0)

static int ldb_fill(rb_store *s, const uint8_t *keys, size_t klen, const uint8_t *vals, size_t vlen,
                    const uint32_t *order, size_t n, size_t per_txn, size_t batch, uint64_t *batch_ns) {
    leveldb_store *l = (leveldb_store *)s;
    leveldb_writebatch_t *wb = leveldb_writebatch_create();
    size_t index = 0;
    uint64_t mark = rb_now();
    for (size_t i = 0; i < n; i++) {
        leveldb_writebatch_put(wb, (const char *)keys + (size_t)order[i] * klen, klen, (const char *)vals + (size_t)order[i] * vlen, vlen);
        if ((i + 1) % per_txn == 0 || i + 1 == n) {
            char *err = NULL;
            leveldb_write(l->db, l->write, wb, &err);
            if (err) leveldb_writebatch_destroy(wb);
            CHECK(err, "write");
            leveldb_writebatch_clear(wb);
        }
        rb_tick(i + 1, batch, batch_ns, &index, &mark);
    }
    if (n % batch) batch_ns[index++] = rb_now() - mark;
    leveldb_writebatch_destroy(wb);
    return 0;
}

static leveldb_readoptions_t *snapshot_options(leveldb_store *l, const leveldb_snapshot_t **snapshot) {
    *snapshot = leveldb_create_snapshot(l->db);
    leveldb_readoptions_t *options = leveldb_readoptions_create();
    leveldb_readoptions_set_snapshot(options, *snapshot);
    return options;
}

static void release(leveldb_store *l, leveldb_readoptions_t *options, const leveldb_snapshot_t *snapshot) {
    leveldb_readoptions_destroy(options);
    leveldb_release_snapshot(l->db, snapshot);
}

static int ldb_read(rb_store *s, const uint8_t *keys, size_t klen, const uint32_t *order, size_t n,
                    size_t batch, uint64_t *batch_ns, uint64_t *found, uint64_t *checksum) {
    leveldb_store *l = (leveldb_store *)s;
    const leveldb_snapshot_t *snapshot;
    leveldb_readoptions_t *options = snapshot_options(l, &snapshot);
    size_t index = 0;
    uint64_t mark = rb_now(), hits = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        size_t length;
        char *err = NULL;
        char *value = leveldb_get(l->db, options, (const char *)keys + (size_t)order[i] * klen, klen, &length, &err);
        if (err) { release(l, options, snapshot); }
        CHECK(err, "get");
        if (value) { hits++; sum += rb_checksum(value, length); leveldb_free(value); }
        rb_tick(i + 1, batch, batch_ns, &index, &mark);
    }
    if (n % batch) batch_ns[index++] = rb_now() - mark;
    release(l, options, snapshot);
    *found = hits;
    *checksum = sum;
    return 0;
}

static int ldb_scan(rb_store *s, int reverse, size_t batch, uint64_t *batch_ns, size_t max_batches,
                    uint64_t *rows, uint64_t *checksum) {
    leveldb_store *l = (leveldb_store *)s;
    const leveldb_snapshot_t *snapshot;
    leveldb_readoptions_t *options = snapshot_options(l, &snapshot);
    leveldb_iterator_t *it = leveldb_create_iterator(l->db, options);
    size_t index = 0, count = 0;
    uint64_t mark = rb_now(), sum = 0;
    if (reverse) leveldb_iter_seek_to_last(it); else leveldb_iter_seek_to_first(it);
    while (leveldb_iter_valid(it)) {
        size_t kl, vl;
        (void)leveldb_iter_key(it, &kl);  /* the key, as every engine hands it to its visitor */
        const char *v = leveldb_iter_value(it, &vl);
        sum += rb_checksum(v, vl);
        count++;
        if (index < max_batches) rb_tick(count, batch, batch_ns, &index, &mark);
        if (reverse) leveldb_iter_prev(it); else leveldb_iter_next(it);
    }
    if (count % batch && index < max_batches) batch_ns[index++] = rb_now() - mark;
    leveldb_iter_destroy(it);
    release(l, options, snapshot);
    *rows = count;
    *checksum = sum;
    return 0;
}

static int ldb_scans(rb_store *s, const uint8_t *starts, size_t klen, size_t nscans, size_t len,
                     uint64_t *scan_ns, uint64_t *rows, uint64_t *checksum) {
    leveldb_store *l = (leveldb_store *)s;
    const leveldb_snapshot_t *snapshot;
    leveldb_readoptions_t *options = snapshot_options(l, &snapshot);
    leveldb_iterator_t *it = leveldb_create_iterator(l->db, options);
    uint64_t count = 0, sum = 0;
    for (size_t i = 0; i < nscans; i++) {
        uint64_t start = rb_now();
        leveldb_iter_seek(it, (const char *)starts + i * klen, klen);
        for (size_t j = 0; j < len && leveldb_iter_valid(it); j++) {
            size_t kl, vl;
            (void)leveldb_iter_key(it, &kl);
            const char *v = leveldb_iter_value(it, &vl);
            count++;
            sum += rb_checksum(v, vl);
            leveldb_iter_next(it);
        }
        scan_ns[i] = rb_now() - start;
    }
    leveldb_iter_destroy(it);
    release(l, options, snapshot);
    *rows = count;
    *checksum = sum;
    return 0;
}

static void ldb_close(rb_store *s) {
    leveldb_store *l = (leveldb_store *)s;
    leveldb_close(l->db);
    leveldb_options_destroy(l->options);
    leveldb_filterpolicy_destroy(l->filter);
    leveldb_writeoptions_destroy(l->write);
    free(l);
}

static const rb_ops leveldb_ops = { ldb_fill, ldb_read, ldb_scan, ldb_scans, ldb_close };

rb_store *rb_leveldb_open(const char *dir, int durable) {
    leveldb_store *l = calloc(1, sizeof *l);
    l->base.ops = &leveldb_ops;
    l->options = leveldb_options_create();
    leveldb_options_set_create_if_missing(l->options, 1);
    // The same Bloom filter as Strata's LevelDB default (10 bits per key).
    l->filter = leveldb_filterpolicy_create_bloom(10);
    leveldb_options_set_filter_policy(l->options, l->filter);
    l->write = leveldb_writeoptions_create();
    leveldb_writeoptions_set_sync(l->write, durable);
    char *err = NULL;
    l->db = leveldb_open(l->options, dir, &err);
    if (err) {
        rb_fail("leveldb open %s: %s", dir, err);
        leveldb_free(err);
        leveldb_options_destroy(l->options);
    leveldb_filterpolicy_destroy(l->filter);
        leveldb_writeoptions_destroy(l->write);
        free(l);
        return NULL;
    }
    return &l->base;
}
