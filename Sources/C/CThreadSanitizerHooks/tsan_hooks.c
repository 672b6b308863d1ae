#include "tsan_hooks.h"

// Compiled with -fsanitize=thread in a ThreadSanitizer build (SwiftPM passes the sanitizer to C
// targets too), and only then calling ThreadSanitizer's annotation interface; elsewhere the
// functions do nothing. (Not weak symbols: Apple's linker wants those defined at link time.)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRATA_TSAN 1
#endif
#endif

#ifdef STRATA_TSAN
#include <sanitizer/tsan_interface.h>

void strata_tsan_acquire(void *address) { __tsan_acquire(address); }

void strata_tsan_release(void *address) { __tsan_release(address); }
#else
void strata_tsan_acquire(void *address) { (void)address; }

void strata_tsan_release(void *address) { (void)address; }
#endif
