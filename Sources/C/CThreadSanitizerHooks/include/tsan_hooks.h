#ifndef STRATA_TSAN_HOOKS_H
#define STRATA_TSAN_HOOKS_H

// Tells ThreadSanitizer of a lock it cannot see. On Linux, Swift's `Mutex` (Synchronization)
// waits on a futex through atomics compiled into the standard library, which ThreadSanitizer
// does not instrument: without these calls, every value a `Mutex` guards is reported as raced.
// Outside a ThreadSanitizer build the calls do nothing.

/// After taking the lock at `address`: what the last holder did before releasing it happened before.
void strata_tsan_acquire(void *address);

/// Before releasing the lock at `address`.
void strata_tsan_release(void *address);

#endif
