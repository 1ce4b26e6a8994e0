/* rate.c: text forms of rates and durations ("5/s", "100/10s", "5ms"), the
 * syntax of the config file and the command line. Integers only: a rate is
 * an exact fraction, never a float. */
#include <stdio.h>
#include <string.h>

#include "sluice/error.h"
#include "sluice/limit.h"

static const struct unit {
    const char *name;
    int64_t ns;
} units[] = {
    {"d", 86400 * SL_NS_PER_SEC},
    {"h", 3600 * SL_NS_PER_SEC},
    {"m", 60 * SL_NS_PER_SEC},
    {"s", SL_NS_PER_SEC},
    {"ms", SL_NS_PER_MS},
    {"us", 1000},
    {"ns", 1},
};

/* Parses leading decimal digits into *out; returns the count of digits, 0 if
 * none, -1 on overflow. */
static int parse_digits(const char *s, int64_t *out) {
    int64_t v = 0;
    int i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        int digit = s[i] - '0';
        if (v > (INT64_MAX - digit) / 10) return -1;
        v = v * 10 + digit;
    }
    *out = v;
    return i;
}

static const struct unit *find_unit(const char *s) {
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(s, units[i].name) == 0) return &units[i];
    return NULL;
}

int sl_duration_parse(const char *text, int64_t *out_ns) {
    if (!text || !out_ns) return SL_EPARSE;
    int64_t v;
    int nd = parse_digits(text, &v);
    if (nd < 0) return SL_EOVERFLOW;
    if (nd == 0) return SL_EPARSE;
    const struct unit *u = find_unit(text + nd);
    if (!u) return SL_EPARSE;
    if (v > INT64_MAX / u->ns) return SL_EOVERFLOW;
    *out_ns = v * u->ns;
    return SL_OK;
}

int sl_rate_parse(const char *text, sl_rate *out) {
    if (!text || !out) return SL_EPARSE;
    int64_t limit, period;
    int nd = parse_digits(text, &limit);
    if (nd < 0) return SL_EOVERFLOW;
    if (nd == 0 || text[nd] != '/') return SL_EPARSE;
    const char *per = text + nd + 1;
    if (*per >= '0' && *per <= '9') {
        int rc = sl_duration_parse(per, &period);
        if (rc) return rc;
    } else {
        const struct unit *u = find_unit(per);
        if (!u) return SL_EPARSE;
        period = u->ns;
    }
    if (limit <= 0 || period <= 0) return SL_ERATE;
    out->limit = limit;
    out->period = period;
    return SL_OK;
}

int sl_rate_format(sl_rate r, char *buf, size_t size) {
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (r.period > 0 && r.period % units[i].ns == 0) {
            int64_t k = r.period / units[i].ns;
            if (k == 1) return snprintf(buf, size, "%lld/%s", (long long)r.limit, units[i].name);
            return snprintf(buf, size, "%lld/%lld%s", (long long)r.limit, (long long)k,
                            units[i].name);
        }
    }
    return snprintf(buf, size, "%lld/%lldns", (long long)r.limit, (long long)r.period);
}
