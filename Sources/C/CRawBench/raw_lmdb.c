// The yardstick on LMDB, with the adapter's default settings: MDB_NOTLS, a 64 GiB map (the
// adapter's default, address space only), MDB_NOMETASYNC when not durable, the unnamed database.
#include "common.h"
#include <lmdb.h>
#include <errno.h>
#include <stdlib.h>

typedef struct { rb_store base; MDB_env *env; MDB_dbi dbi; } lmdb_store;

#define CHECK(rc, what) do { int _rc = (rc); if (_rc) return rb_fail("%s: %s", what, mdb_strerror(_rc)); } while (0)

static int lmdb_fill(rb_store *s, const uint8_t *keys, size_t klen, const uint8_t *vals, size_t vlen,
                     const uint32_t *order, size_t n, size_t per_txn, size_t batch, uint64_t *batch_ns) {
    lmdb_store *l = (lmdb_store *)s;
    MDB_txn *txn = NULL;
    size_t index = 0;
    uint64_t mark = rb_now();
    for (size_t i = 0; i < n; i++) {
        if (!txn) CHECK(mdb_txn_begin(l->env, NULL, 0, &txn), "begin");
        MDB_val k = { klen, (void *)(keys + (size_t)order[i] * klen) };
        MDB_val v = { vlen, (void *)(vals + (size_t)order[i] * vlen) };
        CHECK(mdb_put(txn, l->dbi, &k, &v, 0), "put");
        if ((i + 1) % per_txn == 0 || i + 1 == n) { CHECK(mdb_txn_commit(txn), "commit"); txn = NULL; }
        rb_tick(i + 1, batch, batch_ns, &index, &mark);
    }
    if (n % batch) batch_ns[index++] = rb_now() - mark;
    return 0;
}

static int lmdb_read(rb_store *s, const uint8_t *keys, size_t klen, const uint32_t *order, size_t n,
                     size_t batch, uint64_t *batch_ns, uint64_t *found, uint64_t *checksum) {
    lmdb_store *l = (lmdb_store *)s;
    MDB_txn *txn;
    CHECK(mdb_txn_begin(l->env, NULL, MDB_RDONLY, &txn), "begin read");
    size_t index = 0;
    uint64_t mark = rb_now(), hits = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        MDB_val k = { klen, (void *)(keys + (size_t)order[i] * klen) }, v;
        if (mdb_get(txn, l->dbi, &k, &v) == 0) { hits++; sum += rb_checksum(v.mv_data, v.mv_size); }
        rb_tick(i + 1, batch, batch_ns, &index, &mark);
    }
    if (n % batch) batch_ns[index++] = rb_now() - mark;
    mdb_txn_abort(txn);
    *found = hits;
    *checksum = sum;
    return 0;
}

static int lmdb_scan(rb_store *s, int reverse, size_t batch, uint64_t *batch_ns, size_t max_batches,
                     uint64_t *rows, uint64_t *checksum) {
    lmdb_store *l = (lmdb_store *)s;
    MDB_txn *txn;
    MDB_cursor *cursor;
    CHECK(mdb_txn_begin(l->env, NULL, MDB_RDONLY, &txn), "begin read");
    CHECK(mdb_cursor_open(txn, l->dbi, &cursor), "cursor");
    MDB_val k, v;
    size_t index = 0, count = 0;
    uint64_t mark = rb_now(), sum = 0;
    int rc = mdb_cursor_get(cursor, &k, &v, reverse ? MDB_LAST : MDB_FIRST);
    while (rc == 0) {
        sum += rb_checksum(v.mv_data, v.mv_size);
        count++;
        if (index < max_batches) rb_tick(count, batch, batch_ns, &index, &mark);
        rc = mdb_cursor_get(cursor, &k, &v, reverse ? MDB_PREV : MDB_NEXT);
    }
    if (count % batch && index < max_batches) batch_ns[index++] = rb_now() - mark;
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    *rows = count;
    *checksum = sum;
    return rc == MDB_NOTFOUND ? 0 : rb_fail("scan: %s", mdb_strerror(rc));
}

static int lmdb_scans(rb_store *s, const uint8_t *starts, size_t klen, size_t nscans, size_t len,
                      uint64_t *scan_ns, uint64_t *rows, uint64_t *checksum) {
    lmdb_store *l = (lmdb_store *)s;
    MDB_txn *txn;
    MDB_cursor *cursor;
    CHECK(mdb_txn_begin(l->env, NULL, MDB_RDONLY, &txn), "begin read");
    CHECK(mdb_cursor_open(txn, l->dbi, &cursor), "cursor");
    uint64_t count = 0, sum = 0;
    for (size_t i = 0; i < nscans; i++) {
        uint64_t start = rb_now();
        MDB_val k = { klen, (void *)(starts + i * klen) }, v;
        int rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
        for (size_t j = 0; j < len && rc == 0; j++) {
            count++;
            sum += rb_checksum(v.mv_data, v.mv_size);
            rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
        }
        scan_ns[i] = rb_now() - start;
    }
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    *rows = count;
    *checksum = sum;
    return 0;
}

static void lmdb_close(rb_store *s) {
    lmdb_store *l = (lmdb_store *)s;
    mdb_env_close(l->env);
    free(l);
}

static const rb_ops lmdb_ops = { lmdb_fill, lmdb_read, lmdb_scan, lmdb_scans, lmdb_close };

rb_store *rb_lmdb_open(const char *dir, int durable) {
    lmdb_store *l = calloc(1, sizeof *l);
    l->base.ops = &lmdb_ops;
    // As the adapter: a map that does not fit the address space (valgrind, ulimit -v) falls back
    // to smaller ones, down to 1 GiB.
    int rc;
    for (size_t map = (size_t)64 << 30;; map /= 8) {
        rc = mdb_env_create(&l->env);
        if (!rc) rc = mdb_env_set_mapsize(l->env, map);
        if (!rc) rc = mdb_env_set_maxreaders(l->env, 256);
        if (!rc) rc = mdb_env_open(l->env, dir, MDB_NOTLS | (durable ? 0 : MDB_NOMETASYNC), 0644);
        if (!(rc == ENOMEM || rc == EINVAL) || map <= (size_t)1 << 30) break;
        mdb_env_close(l->env);
    }
    MDB_txn *txn = NULL;
    if (!rc) rc = mdb_txn_begin(l->env, NULL, 0, &txn);
    if (!rc) rc = mdb_dbi_open(txn, NULL, 0, &l->dbi);
    if (!rc) rc = mdb_txn_commit(txn);
    if (rc) {
        rb_fail("lmdb open %s: %s", dir, mdb_strerror(rc));
        mdb_env_close(l->env);
        free(l);
        return NULL;
    }
    return &l->base;
}
