// Counts heap allocations for the benchmark's "allocations per operation" column.
//
// An executable that defines malloc and friends takes precedence over libc for every shared
// library in the process (the dynamic linker searches the executable first), so allocations
// made by Swift's runtime, by libleveldb's C++ and by the engines are all counted. The real
// work is done by glibc's exported __libc_* entry points.
#define _GNU_SOURCE
#include "allocation_counter.h"
#include <stddef.h>
#include <errno.h>

// A sanitizer replaces malloc and free itself: glibc's __libc_free must never see its blocks,
// so under one the interposer is left out and the count reads 0.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define STRATA_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRATA_SANITIZED 1
#endif

#if defined(__GLIBC__) && !defined(STRATA_SANITIZED)
#include <malloc.h>
#include <stdatomic.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic uint64_t allocations;

static inline void count(void) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); }

void *malloc(size_t size) { count(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { count(); return __libc_realloc(p, size); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    count();
    void *p = __libc_memalign(alignment, size);
    if (!p && size) return ENOMEM;
    *out = p;
    return 0;
}

uint64_t strata_allocation_count(void) { return atomic_load_explicit(&allocations, memory_order_relaxed); }
uint64_t strata_heap_in_use(void) { struct mallinfo2 info = mallinfo2(); return (uint64_t)(info.uordblks + info.hblkhd); }
#else
uint64_t strata_allocation_count(void) { return 0; }
uint64_t strata_heap_in_use(void) { return 0; }
#endif
