/* backoff.c: retry waits (hint plus jitter, or exponential backoff with full
 * jitter) and the PRNG behind them. See backoff.h. */
#include "client/backoff.h"

#include <sys/random.h>
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

int64_t sl__prng_below(sl__prng *r, int64_t n) {
    if (n <= 0) return 0;
    uint64_t range = (uint64_t)n;
    /* reject the top partial block so every value is equally likely */
    uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    for (;;) {
        uint64_t x = sl__prng_next(r);
        if (x < limit) return (int64_t)(x % range);
    }
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

int64_t sl__backoff_bound(const sl__backoff *b, int attempt) {
    int64_t v = b->base < b->max_wait ? b->base : b->max_wait;
    for (int i = 1; i < attempt && v < b->max_wait; i++) {
        __int128 next = (__int128)v * b->factor_milli / 1000;
        v = next >= b->max_wait ? b->max_wait : (int64_t)next;
        if (b->factor_milli == 1000) break; /* constant from here on */
    }
    return v;
}

int64_t sl__retry_wait(const sl__backoff *b, int attempt, int64_t hint, sl__prng *r) {
    if (hint > 0) {
        /* the hint, plus up to the hint again: the seed's remedy for the herd */
        int64_t w = hint + sl__prng_below(r, hint);
        return w > b->max_wait ? (hint > b->max_wait ? hint : b->max_wait) : w;
    }
    return sl__prng_below(r, sl__backoff_bound(b, attempt));
}
