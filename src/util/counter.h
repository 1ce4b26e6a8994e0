/* counter.h: statistics counters that one thread writes and others read
 * (/metrics): a relaxed load and store, no read-modify-write on the hot path.
 * Counters that several threads write need atomic_fetch_add instead. */
#ifndef SLUICE_UTIL_COUNTER_H
#define SLUICE_UTIL_COUNTER_H

#include <stdatomic.h>
#include <stdint.h>

static inline void sl__counter_add(atomic_uint_fast64_t *c, uint64_t n) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

#endif
