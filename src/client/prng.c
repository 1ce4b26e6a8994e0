/* prng.c: splitmix64 (the reference constants of Vigna's public-domain
 * implementation), unbiased bounded draws and an OS seed. See prng.h. */
#include "client/prng.h"

#include <sys/random.h>
#include <sys/types.h>
#include <time.h>

void sl__prng_seed(sl__prng *r, uint64_t seed) {
    r->state = seed;
}

uint64_t sl__prng_next(sl__prng *r) {
    uint64_t z = (r->state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint64_t sl__prng_upto(sl__prng *r, uint64_t n) {
    if (n == UINT64_MAX) return sl__prng_next(r);
    uint64_t range = n + 1;
    /* reject the top partial block so every value is equally likely */
    uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    for (;;) {
        uint64_t x = sl__prng_next(r);
        if (x < limit) return x % range;
    }
}

int64_t sl__prng_below(sl__prng *r, int64_t n) {
    if (n <= 0) return 0;
    return (int64_t)sl__prng_upto(r, (uint64_t)n - 1);
}

uint64_t sl__jitter_seed(void) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
        /* no entropy yet (early boot): the time and an address still make
         * two clients differ, which is all jitter needs */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&s;
    }
    return s ? s : 1;
}
