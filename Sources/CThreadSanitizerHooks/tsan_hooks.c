#include "tsan_hooks.h"

// ThreadSanitizer's annotation interface (compiler-rt's tsan_interface.h), linked only into a
// ThreadSanitizer build: weak, so elsewhere they are null and nothing is called.
void __tsan_acquire(void *address) __attribute__((weak));
void __tsan_release(void *address) __attribute__((weak));

void strata_tsan_acquire(void *address) {
    if (__tsan_acquire) __tsan_acquire(address);
}

void strata_tsan_release(void *address) {
    if (__tsan_release) __tsan_release(address);
}
