#ifndef STRATA_ALLOCATION_COUNTER_H
#define STRATA_ALLOCATION_COUNTER_H
#include <stdint.h>

/// Heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made by
/// the whole process since it started, counted by the interposer linked into the executable.
/// Returns 0 forever when the interposer is not active (it only is on glibc, and never under a
/// sanitizer, which replaces malloc itself).
uint64_t strata_allocation_count(void);

/// Bytes currently allocated on the heap, from mallinfo2: uordblks + hblkhd, the arena and the
/// mmapped blocks (0 where unavailable).
uint64_t strata_heap_in_use(void);

#endif
