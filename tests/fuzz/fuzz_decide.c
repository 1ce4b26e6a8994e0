/* fuzz_decide.c: libFuzzer target for the decision engine with arbitrary
 * parameters, costs and times (including huge values and clocks that jump
 * back). Under UBSan any overflow is a crash; the properties checked are the
 * decision invariants every caller relies on. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int64_t take(const uint8_t **p, size_t *left) {
    uint64_t v = 0;
    size_t n = *left < 8 ? *left : 8;
    memcpy(&v, *p, n);
    *p += n;
    *left -= n;
    return (int64_t)v;
}

/* Squeezes x into [lo, hi] keeping small values small. */
static int64_t squeeze(int64_t x, int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)((uint64_t)x % span);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *p = data;
    size_t left = size;
    if (left < 4) return 0;
    sl_params params = {0};
    params.algorithm = (sl_algorithm)(1 + p[0] % 6);
    params.flags = p[1] & 3;
    uint8_t shape = p[2], table_shape = p[3];
    p += 4;
    left -= 4;
    int64_t a = take(&p, &left), b = take(&p, &left), c = take(&p, &left);
    /* half the time any 64-bit value, half the time a plausible one */
    params.rate.limit = (shape & 1) ? a : squeeze(a, 1, 1000);
    params.rate.period = (shape & 2) ? b : squeeze(b, 1, 3600) * SL_NS_PER_MS;
    params.burst = (shape & 4) ? c : squeeze(c, 1, 1000);
    params.origin = (shape & 8) ? squeeze(take(&p, &left), 0, SL_TIME_MAX) : 0;
    if (params.algorithm == SL_SLIDING_LOG && params.rate.limit > 1000) return 0; /* memory */
    if (sl_params_validate(&params) != SL_OK) return 0;

    sl_table_options o = {.params = params, .max_memory = 1 << 20, .seed = 7};
    sl_table *t;
    if (sl_table_create(&o, &t) != SL_OK) return 0;
    int64_t now = (table_shape & 1) ? (int64_t)1 << 60 : 0;
    while (left >= 3) {
        uint8_t op = p[0], key = p[1], costb = p[2];
        p += 3;
        left -= 3;
        int64_t step = (op & 0x80) ? take(&p, &left) : (int64_t)(op & 0x7f) * 7919;
        if (op & 0x40) step = -(step & 0xffffff); /* the clock goes back a little */
        if ((step > 0 && now > INT64_MAX / 2 - step) || (step < 0 && now < INT64_MIN / 2 - step))
            break;
        now += step; /* may leave 0..SL_TIME_MAX: then SL_EINVAL */
        int64_t cost = costb % 5;
        sl_decision d;
        int rc = sl_table_check(t, &key, 1, cost, now, &d);
        if (now < 0 || now > SL_TIME_MAX) {
            if (rc != SL_EINVAL || d.allowed) abort();
            continue;
        }
        if (rc == SL_ECOST) {
            if (d.allowed) abort();
            continue;
        }
        if (rc != SL_OK) abort();
        if (d.remaining < 0 || d.reset_after < 0 || d.retry_after < 0 || d.delay < 0) abort();
        if (d.allowed != (d.retry_after == 0)) abort();
        if (cost == 0 && !d.allowed) abort();
        if (d.remaining > d.limit) abort();
        if (op & 0x20) sl_table_sweep(t, now, 64);
    }
    sl_table_destroy(t);
    return 0;
}
