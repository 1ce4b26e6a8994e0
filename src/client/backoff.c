/* backoff.c: retry waits (hint plus jitter, or exponential backoff with full
 * jitter). See backoff.h; the PRNG is client/prng.h. */
#include "client/backoff.h"

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
