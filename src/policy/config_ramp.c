/* config_ramp.c: a policy's `ramp_up:` block (sluice/ramp.h,
 * docs/protection.md): after the server starts, the store recovers or an
 * operator asks, the policy's burst and rate grow from `from` to the whole
 * limit over `duration`:
 *
 *   ramp_up: {duration: 5m, from: 10%}
 *
 * duration: 1ms..24h (required); from: a percentage above 0% and at most
 * 100%, up to four decimals ("10%", "2.5%"; required). */
#include <stdio.h>
#include <string.h>

#include "policy/config_parse.h"
#include "sluice/error.h"

enum { RAMP_DURATION, RAMP_FROM, RAMP_NKEYS };

static const char *const ramp_keys[] = {"duration", "from"};

#define FROM_WHAT "a percentage above 0% and at most 100%, such as 10% or 2.5%"

/* "10%", "2.5%", "100%" into parts per million; false if not one. */
bool sl__config_percent(const char *s, size_t n, int64_t *ppm) {
    if (n < 2 || s[n - 1] != '%') return false;
    int64_t whole = 0, frac = 0, scale = 10000; /* ppm per percent */
    size_t i = 0, digits = 0;
    for (; i < n - 1 && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        if (whole > 1000) return false;
        whole = whole * 10 + (s[i] - '0');
    }
    if (digits == 0) return false;
    if (i < n - 1 && s[i] == '.') {
        size_t fd = 0;
        for (i++; i < n - 1 && s[i] >= '0' && s[i] <= '9'; i++, fd++) {
            if (fd == 4) return false; /* beyond a millionth */
            scale /= 10;
            frac += (s[i] - '0') * scale;
        }
        if (fd == 0) return false;
    }
    if (i != n - 1) return false;
    *ppm = whole * 10000 + frac;
    return true;
}

bool sl__config_percent_value(sl__yaml *y, const char *path, const char *what, int64_t min,
                              int64_t max, int64_t *ppm) {
    const char *s = sl__yaml_scalar(y, path, what);
    if (!s) return false;
    size_t n = sl__yaml_len(y);
    char q[64];
    sl__yaml_quote(q, sizeof q, s, n);
    int64_t v = 0;
    if (!sl__config_percent(s, n, &v) || v < min || v > max) {
        sl__yaml_error(y, sl__yaml_line(y), path, "%s: expected %s", q, what);
        return false;
    }
    *ppm = v;
    return true;
}

static void ramp_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl_ramp *r = obj;
    switch (key) {
    case RAMP_DURATION:
        sl__yaml_duration(y, path, NS_MS, SL_RAMP_DURATION_MAX, &r->duration);
        break;
    case RAMP_FROM:
        sl__config_percent_value(y, path, FROM_WHAT, 1, SL_RAMP_ONE, &r->from);
        break;
    }
}

void sl__config_policy_ramp(sl__config_parser *p, const char *path, sl_ramp *r) {
    memset(r, 0, sizeof *r);
    int seen[RAMP_NKEYS] = {0};
    int line = sl__yaml_line(&p->y);
    size_t before = p->y.errs->n;
    bool map = sl__yaml_is_map(&p->y);
    sl__yaml_section(&p->y, path, ramp_keys, RAMP_NKEYS, ramp_value, r, seen,
                     "a mapping of duration and from, such as {duration: 5m, from: 10%}");
    if (!map) return;
    static const sl__yaml_required required[] = {
        {RAMP_DURATION, "how long the ramp lasts, such as 5m"},
        {RAMP_FROM, "the share of the limit at the start, such as 10%"}};
    sl__yaml_missing(&p->y, line, path, ramp_keys, seen, required, COUNT(required));
    if (p->y.errs->n != before) memset(r, 0, sizeof *r);
}

const char *sl__config_ramp_problem(const sl__policy_config *pc) {
    if (pc->ramp.duration == 0) return NULL;
    sl_params unit;
    int rc = sl_ramp_params(&pc->params, &unit);
    if (rc == SL_OK) return NULL;
    return rc == SL_EALGORITHM
               ? "not for algorithm: sliding_log (it keeps one time per request counted: use "
                 "sliding_window)"
               : "the limit or burst is too large to ramp (a ramped limit counts thousandths "
                 "of a request: at most 2^61 / 1000)";
}
