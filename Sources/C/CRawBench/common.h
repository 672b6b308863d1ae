#ifndef STRATA_RAWBENCH_COMMON_H
#define STRATA_RAWBENCH_COMMON_H
#include "rawbench.h"

/// One engine's implementation of the workloads.
typedef struct rb_ops {
    int (*fill)(rb_store *, const uint8_t *, size_t, const uint8_t *, size_t, const uint32_t *, size_t, size_t, size_t, uint64_t *);
    int (*read)(rb_store *, const uint8_t *, size_t, const uint32_t *, size_t, size_t, uint64_t *, uint64_t *, uint64_t *);
    int (*scan)(rb_store *, int, size_t, uint64_t *, size_t, uint64_t *, uint64_t *);
    int (*scans)(rb_store *, const uint8_t *, size_t, size_t, size_t, uint64_t *, uint64_t *, uint64_t *);
    void (*close)(rb_store *);
} rb_ops;

/// Every engine's store starts with this header.
struct rb_store { const rb_ops *ops; };

int rb_fail(const char *format, ...);
uint64_t rb_now(void);

rb_store *rb_lmdb_open(const char *dir, int durable);
rb_store *rb_leveldb_open(const char *dir, int durable);
rb_store *rb_sqlite_open(const char *dir, int durable);

/// Records the time since *mark into batch_ns[*index] every `batch` operations.
static inline void rb_tick(size_t done, size_t batch, uint64_t *batch_ns, size_t *index, uint64_t *mark) {
    if (done % batch == 0) {
        uint64_t now = rb_now();
        batch_ns[(*index)++] = now - *mark;
        *mark = now;
    }
}
#endif
