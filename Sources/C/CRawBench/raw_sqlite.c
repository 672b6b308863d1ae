// The yardstick on SQLite, with the adapter's settings: one STRICT WITHOUT ROWID blob table, WAL,
// synchronous FULL when durable and NORMAL otherwise, BEGIN IMMEDIATE for writes, prepared
// statements, a deferred BEGIN plus a first read for read transactions.
#include "common.h"
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { rb_store base; sqlite3 *db; sqlite3_stmt *put, *get, *first, *last, *from; } sqlite_store;

static int exec(sqlite_store *l, const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(l->db, sql, NULL, NULL, &err) != SQLITE_OK) {
        rb_fail("%s: %s", sql, err ? err : "?");
        sqlite3_free(err);
        return -1;
    }
    return 0;
}

static int begin_read(sqlite_store *l) {
    if (exec(l, "BEGIN")) return -1;
    return exec(l, "SELECT 1 FROM kv LIMIT 1");
}

static int sq_fill(rb_store *s, const uint8_t *keys, size_t klen, const uint8_t *vals, size_t vlen,
                   const uint32_t *order, size_t n, size_t per_txn, size_t batch, uint64_t *batch_ns) {
    sqlite_store *l = (sqlite_store *)s;
    int open = 0;
    size_t index = 0;
    uint64_t mark = rb_now();
    for (size_t i = 0; i < n; i++) {
        if (!open) { if (exec(l, "BEGIN IMMEDIATE")) return -1; open = 1; }
        sqlite3_bind_blob(l->put, 1, keys + (size_t)order[i] * klen, (int)klen, SQLITE_STATIC);
        sqlite3_bind_blob(l->put, 2, vals + (size_t)order[i] * vlen, (int)vlen, SQLITE_STATIC);
        if (sqlite3_step(l->put) != SQLITE_DONE) return rb_fail("insert: %s", sqlite3_errmsg(l->db));
        sqlite3_reset(l->put);
        if ((i + 1) % per_txn == 0 || i + 1 == n) { if (exec(l, "COMMIT")) return -1; open = 0; }
        rb_tick(i + 1, batch, batch_ns, &index, &mark);
    }
    if (n % batch) batch_ns[index++] = rb_now() - mark;
    return 0;
}

static int sq_read(rb_store *s, const uint8_t *keys, size_t klen, const uint32_t *order, size_t n,
                   size_t batch, uint64_t *batch_ns, uint64_t *found, uint64_t *checksum) {
    sqlite_store *l = (sqlite_store *)s;
    if (begin_read(l)) return -1;
    size_t index = 0;
    uint64_t mark = rb_now(), hits = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_blob(l->get, 1, keys + (size_t)order[i] * klen, (int)klen, SQLITE_STATIC);
        if (sqlite3_step(l->get) == SQLITE_ROW) {
            const void *v = sqlite3_column_blob(l->get, 0);
            hits++;
            sum += rb_checksum(v, (size_t)sqlite3_column_bytes(l->get, 0));
        }
        sqlite3_reset(l->get);
        rb_tick(i + 1, batch, batch_ns, &index, &mark);
    }
    if (n % batch) batch_ns[index++] = rb_now() - mark;
    *found = hits;
    *checksum = sum;
    return exec(l, "COMMIT");
}

static int sq_scan(rb_store *s, int reverse, size_t batch, uint64_t *batch_ns, size_t max_batches,
                   uint64_t *rows, uint64_t *checksum) {
    sqlite_store *l = (sqlite_store *)s;
    if (begin_read(l)) return -1;
    sqlite3_stmt *st = reverse ? l->last : l->first;
    size_t index = 0, count = 0;
    uint64_t mark = rb_now(), sum = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        /* The key, as every engine hands it to its scan's visitor (SQLite reads columns lazily). */
        (void)sqlite3_column_blob(st, 0);
        (void)sqlite3_column_bytes(st, 0);
        const void *v = sqlite3_column_blob(st, 1);
        sum += rb_checksum(v, (size_t)sqlite3_column_bytes(st, 1));
        count++;
        if (index < max_batches) rb_tick(count, batch, batch_ns, &index, &mark);
    }
    if (count % batch && index < max_batches) batch_ns[index++] = rb_now() - mark;
    sqlite3_reset(st);
    *rows = count;
    *checksum = sum;
    return exec(l, "COMMIT");
}

static int sq_scans(rb_store *s, const uint8_t *starts, size_t klen, size_t nscans, size_t len,
                    uint64_t *scan_ns, uint64_t *rows, uint64_t *checksum) {
    sqlite_store *l = (sqlite_store *)s;
    if (begin_read(l)) return -1;
    uint64_t count = 0, sum = 0;
    for (size_t i = 0; i < nscans; i++) {
        uint64_t start = rb_now();
        sqlite3_bind_blob(l->from, 1, starts + i * klen, (int)klen, SQLITE_STATIC);
        sqlite3_bind_int64(l->from, 2, (sqlite3_int64)len);
        while (sqlite3_step(l->from) == SQLITE_ROW) {
            /* The key, as every engine hands it to its scan's visitor (SQLite reads columns lazily). */
            (void)sqlite3_column_blob(l->from, 0);
            (void)sqlite3_column_bytes(l->from, 0);
            const void *v = sqlite3_column_blob(l->from, 1);
            sum += rb_checksum(v, (size_t)sqlite3_column_bytes(l->from, 1));
            count++;
        }
        sqlite3_reset(l->from);
        scan_ns[i] = rb_now() - start;
    }
    *rows = count;
    *checksum = sum;
    return exec(l, "COMMIT");
}

static void sq_close(rb_store *s) {
    sqlite_store *l = (sqlite_store *)s;
    sqlite3_finalize(l->put);
    sqlite3_finalize(l->get);
    sqlite3_finalize(l->first);
    sqlite3_finalize(l->last);
    sqlite3_finalize(l->from);
    sqlite3_close_v2(l->db);
    free(l);
}

static const rb_ops sqlite_ops = { sq_fill, sq_read, sq_scan, sq_scans, sq_close };

rb_store *rb_sqlite_open(const char *dir, int durable) {
    sqlite_store *l = calloc(1, sizeof *l);
    l->base.ops = &sqlite_ops;
    char file[4096];
    snprintf(file, sizeof file, "%s/data.sqlite", dir);
    int ok = sqlite3_open_v2(file, &l->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK
        && !exec(l, "PRAGMA journal_mode=WAL")
        && !exec(l, durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
        && !exec(l, "CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID")
        && sqlite3_prepare_v3(l->db, "INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)", -1, SQLITE_PREPARE_PERSISTENT, &l->put, NULL) == SQLITE_OK
        && sqlite3_prepare_v3(l->db, "SELECT v FROM kv WHERE k = ?1", -1, SQLITE_PREPARE_PERSISTENT, &l->get, NULL) == SQLITE_OK
        && sqlite3_prepare_v3(l->db, "SELECT k, v FROM kv ORDER BY k", -1, SQLITE_PREPARE_PERSISTENT, &l->first, NULL) == SQLITE_OK
        && sqlite3_prepare_v3(l->db, "SELECT k, v FROM kv ORDER BY k DESC", -1, SQLITE_PREPARE_PERSISTENT, &l->last, NULL) == SQLITE_OK
        && sqlite3_prepare_v3(l->db, "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2", -1, SQLITE_PREPARE_PERSISTENT, &l->from, NULL) == SQLITE_OK;
    if (!ok) {
        if (l->db) rb_fail("sqlite open %s: %s", file, sqlite3_errmsg(l->db));
        sq_close(&l->base);
        return NULL;
    }
    return &l->base;
}
