#include <string.h>
#include "common.h"
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static char message[512];

const char *rb_error(void) { return message; }

int rb_fail(const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return -1;
}

uint64_t rb_heap_in_use(void) {
#if defined(__GLIBC__)
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)(info.uordblks + info.hblkhd);
#else
    return 0;
#endif
}

uint64_t rb_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

rb_store *rb_open(int engine, const char *dir, int durable) {
    switch (engine) {
    case RB_LMDB: return rb_lmdb_open(dir, durable);
    case RB_LEVELDB: return rb_leveldb_open(dir, durable);
    case RB_SQLITE: return rb_sqlite_open(dir, durable);
    default: rb_fail("unknown engine %d", engine); return NULL;
    }
}

void rb_close(rb_store *s) { s->ops->close(s); }

int rb_fill(rb_store *s, const uint8_t *keys, size_t klen, const uint8_t *vals, size_t vlen,
            const uint32_t *order, size_t n, size_t per_txn, size_t batch, uint64_t *batch_ns) {
    return s->ops->fill(s, keys, klen, vals, vlen, order, n, per_txn, batch, batch_ns);
}

int rb_read(rb_store *s, const uint8_t *keys, size_t klen, const uint32_t *order, size_t n,
            size_t batch, uint64_t *batch_ns, uint64_t *found, uint64_t *checksum) {
    return s->ops->read(s, keys, klen, order, n, batch, batch_ns, found, checksum);
}

int rb_scan(rb_store *s, int reverse, size_t batch, uint64_t *batch_ns, size_t max_batches,
            uint64_t *rows, uint64_t *checksum) {
    return s->ops->scan(s, reverse, batch, batch_ns, max_batches, rows, checksum);
}

int rb_scans(rb_store *s, const uint8_t *starts, size_t klen, size_t nscans, size_t len,
             uint64_t *scan_ns, uint64_t *rows, uint64_t *checksum) {
    return s->ops->scans(s, starts, klen, nscans, len, scan_ns, rows, checksum);
}

uint64_t rb_checksum(const void *bytes, size_t count) {
    const uint8_t *p = bytes;
    uint64_t sum = 0, word;
    size_t i = 0;
    for (; i + 8 <= count; i += 8) { memcpy(&word, p + i, 8); sum += word; }
    for (; i < count; i++) sum += p[i];
    return sum;
}
