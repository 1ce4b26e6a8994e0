/* budget.c: the retry budget as a token bucket on a request clock. See
 * budget.h. */
#include "client/budget.h"

#include "sluice/error.h"

#define PPM 1000000

int sl__budget_init(sl__budget *b, int64_t ppm, int64_t reserve, bool off) {
    b->bucket = NULL;
    b->requests = 0;
    b->earns = ppm > 0;
    if (off) return SL_OK;
    if (ppm < 0 || ppm > PPM || reserve < 1 || reserve > 1000000000) return SL_EINVAL;
    /* ppm tokens per 10^6 requests; with ppm == 0 any valid rate will do,
     * since the clock never moves */
    sl_rate rate = b->earns ? (sl_rate){ppm, PPM} : (sl_rate){1, 1};
    int rc = sl_limiter_create(rate, reserve, 0, 0, &b->bucket);
    return rc == SL_OK ? SL_OK : (rc == SL_ENOMEM ? SL_ENOMEM : SL_EINVAL);
}

void sl__budget_free(sl__budget *b) {
    sl_limiter_destroy(b->bucket);
    b->bucket = NULL;
}

void sl__budget_request(sl__budget *b) {
    if (b->earns && b->requests < SL_TIME_MAX) b->requests++;
}

bool sl__budget_take(sl__budget *b) {
    return !b->bucket || sl_limiter_allow(b->bucket, 1, b->requests);
}

int64_t sl__budget_available(sl__budget *b) {
    return b->bucket ? sl_limiter_tokens(b->bucket, b->requests) : INT64_MAX;
}
