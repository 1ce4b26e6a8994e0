/* shard_lock.c: the contended path of the shard lock (see shard_lock.h for
 * the scheme and its bound on waiting). */
#include "core/shard_lock.h"

#include <sched.h>

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One spin of a wait that may last: a pause, and every 128th time the CPU
 * to others (the thread it waits for may be descheduled on its CPU). */
static inline void spin(unsigned *n) {
    if (++*n < 128) {
        cpu_relax();
    } else {
        sched_yield();
        *n = 0;
    }
}

void sl__shard_lock_slow(sl__shard_lock *l) {
    unsigned n = 0;
    /* patient: look seldom, so that the holder keeps both lines for a while */
    for (unsigned looks = 0; looks < SL__LOCK_PATIENCE; looks++) {
        for (unsigned i = 0; i < SL__LOCK_POLL; i++) spin(&n);
        if (!atomic_load_explicit(&l->want, memory_order_relaxed) &&
            !atomic_load_explicit(&l->locked, memory_order_relaxed) &&
            !atomic_exchange_explicit(&l->locked, 1, memory_order_acquire))
            return;
    }
    /* impatient: first in, first served among such waiters */
    unsigned t = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);
    while (atomic_load_explicit(&l->serving, memory_order_acquire) != t) spin(&n);
    atomic_store_explicit(&l->want, 1, memory_order_relaxed); /* closes the fast path */
    for (;;) {
        while (atomic_load_explicit(&l->locked, memory_order_relaxed)) spin(&n);
        if (!atomic_exchange_explicit(&l->locked, 1, memory_order_acquire)) break;
    }
    atomic_store_explicit(&l->want, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&l->serving, 1, memory_order_release);
}
