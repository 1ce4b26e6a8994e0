/* hash.c: seeds for sl__hash (core/hash.h, where the hash itself lives,
 * inline). */
#include <sys/random.h>
#include <time.h>

#include "core/hash.h"

uint64_t sl__random_seed(void) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) {
        struct timespec ts; /* no entropy source: still differs per process */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = sl__hash_mix((uint64_t)ts.tv_nsec ^ SL__HASH_K2,
                         (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&s);
    }
    return s | 1;
}
