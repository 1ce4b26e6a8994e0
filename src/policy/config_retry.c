/* config_retry.c: a policy's `retry_budget:` block (sluice/retry.h,
 * docs/protection.md "Retry budget"): requests marked as retries pass only
 * while they stay under a share of the key's first attempts over a window:
 *
 *   retry_budget: {ratio: 10%, min_retries: 10, window: 10s, header: Retry-Attempt}
 *
 * ratio: a percentage 0%..100%, up to four decimals (default 10%);
 * min_retries: retries a key may always make per window, 0..10^9 (default
 * 10); window: 10ms..24h, whole milliseconds (default 10s); header: the
 * request header that marks a retry when its value is a number >= 1
 * (default Retry-Attempt). Every key is optional: `retry_budget: {}` is the
 * defaults. */
#include <stdio.h>
#include <string.h>

#include "policy/config_parse.h"
#include "sluice/error.h"
#include "sluice/retry.h"

enum { RB_RATIO, RB_MIN, RB_WINDOW, RB_HEADER, RB_NKEYS };

static const char *const retry_keys[] = {"ratio", "min_retries", "window", "header"};

#define RATIO_WHAT "a percentage from 0% to 100%, such as 10% or 2.5%"

static void retry_value(sl__yaml *y, void *obj, int key, const char *path) {
    struct sl__retry_budget_config *r = obj;
    uint64_t u;
    switch (key) {
    case RB_RATIO:
        sl__config_percent_value(y, path, RATIO_WHAT, 0, SL_RETRY_PPM, &r->ratio_ppm);
        break;
    case RB_MIN:
        if (sl__yaml_uint(y, path, "a whole number of retries", 0, SL_RETRY_MIN_MAX, &u))
            r->min_retries = (int64_t)u;
        break;
    case RB_WINDOW:
        sl__yaml_duration(y, path, SL_RETRY_WINDOW_MIN, SL_RETRY_WINDOW_MAX, &r->window);
        break;
    case RB_HEADER: {
        const char *s = sl__yaml_scalar(y, path, "a header name such as Retry-Attempt");
        if (!s) break;
        size_t n = sl__yaml_len(y);
        if (!sl__config_header_name(s, n, sizeof r->header)) {
            char q[64];
            sl__yaml_quote(q, sizeof q, s, n);
            sl__yaml_error(y, sl__yaml_line(y), path,
                           "%s is not a header name (letters, digits and !#$%%&'*+-.^_`|~, at "
                           "most %zu)",
                           q, sizeof r->header - 1);
            break;
        }
        memcpy(r->header, s, n + 1);
        break;
    }
    }
}

void sl__config_policy_retry(sl__config_parser *p, const char *path,
                             struct sl__retry_budget_config *r) {
    *r = (struct sl__retry_budget_config){.ratio_ppm = SL_RETRY_DEFAULT_PPM,
                                          .min_retries = SL__RETRY_MIN_DEFAULT,
                                          .window = 10 * SL_NS_PER_SEC,
                                          .header = "Retry-Attempt"};
    int seen[RB_NKEYS] = {0};
    size_t before = p->y.errs->n;
    sl__yaml_section(&p->y, path, retry_keys, RB_NKEYS, retry_value, r, seen,
                     "a mapping of ratio, min_retries, window and header, such as {ratio: 10%, "
                     "window: 10s}");
    if (p->y.errs->n == before && r->window % NS_MS != 0) {
        char field[160];
        snprintf(field, sizeof field, "%s.window", path);
        sl__yaml_error(&p->y, seen[RB_WINDOW], field, "must be a whole number of milliseconds");
    }
    if (p->y.errs->n != before) r->window = 0;
}
