/* prng.c: splitmix64 (Steele, Lea, Flood 2014; the reference constants of
 * Vigna's public-domain implementation) and unbiased bounded draws. */
#include "cli/prng.h"

void prng_seed(prng *r, uint64_t seed) {
    r->state = seed;
}

uint64_t prng_next(prng *r) {
    uint64_t z = (r->state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint64_t prng_upto(prng *r, uint64_t n) {
    if (n == UINT64_MAX) return prng_next(r);
    uint64_t range = n + 1;
    /* reject the top partial block so every value is equally likely */
    uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    for (;;) {
        uint64_t x = prng_next(r);
        if (x < limit) return x % range;
    }
}
