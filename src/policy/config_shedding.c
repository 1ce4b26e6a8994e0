/* config_shedding.c: the config's `shedding:` section (docs/protection.md),
 * load shedding by priority for the whole server (sluice/shed.h):
 *
 *   shedding:
 *     rate: 1000/s          # the capacity, as a bucket's refill
 *     burst: 200            # its size (default: the rate's count)
 *     reserve_critical: 40  # tokens only critical requests take (default 0)
 *     reserve_default: 20   # more, only critical and default ones (default 0)
 *     header: X-Priority    # where a request says its priority (default)
 *     scope: process        # or fleet: one capacity in Redis for every server
 *     on_failure: local     # fleet, Redis failed: open | closed | local
 *                           # (default store.redis.on_failure)
 *
 * Checked here as sl_shed_create will check it, with the line of the key at
 * fault; scope fleet against the store (sl__config_check_shedding). */
#include <stdio.h>
#include <string.h>

#include "policy/config_parse.h"
#include "sluice/error.h"
#include "sluice/shed.h"
#include "store/redis_script.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum {
    SH_RATE,
    SH_BURST,
    SH_RESERVE_CRITICAL,
    SH_RESERVE_DEFAULT,
    SH_HEADER,
    SH_SCOPE,
    SH_ON_FAILURE
};

static const char *const shed_keys[] = {"rate",   "burst", "reserve_critical", "reserve_default",
                                        "header", "scope", "on_failure"};
static const char *const scopes[] = {"process", "fleet"};

bool sl__config_header_name(const char *s, size_t n, size_t max) {
    if (n == 0 || n >= max) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool tchar = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     strchr("!#$%&'*+-.^_`|~", c) != NULL;
        if (!tchar || c == '\0') return false;
    }
    return true;
}

static void shed_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__shed_config *sc = obj;
    uint64_t u;
    switch (key) {
    case SH_RATE: {
        const char *s = sl__yaml_scalar(y, path, "a rate such as 1000/s");
        if (!s) break;
        char q[64];
        sl__yaml_quote(q, sizeof q, s, sl__yaml_len(y));
        if (sl_rate_parse(s, &sc->rate) != SL_OK)
            sl__yaml_error(y, sl__yaml_line(y), path,
                           "cannot parse %s (expected N/s, N/m or N/<duration> such as 1000/s)", q);
        break;
    }
    case SH_BURST:
        if (sl__yaml_uint(y, path, "a whole number of requests", 1, INT64_MAX, &u))
            sc->burst = (int64_t)u;
        break;
    case SH_RESERVE_CRITICAL:
        if (sl__yaml_uint(y, path, "a whole number of requests", 0, INT64_MAX, &u))
            sc->reserve_critical = (int64_t)u;
        break;
    case SH_RESERVE_DEFAULT:
        if (sl__yaml_uint(y, path, "a whole number of requests", 0, INT64_MAX, &u))
            sc->reserve_default = (int64_t)u;
        break;
    case SH_HEADER: {
        const char *s = sl__yaml_scalar(y, path, "a header name such as X-Priority");
        if (!s) break;
        size_t n = sl__yaml_len(y);
        if (!sl__config_header_name(s, n, SL__SHED_HEADER_MAX)) {
            char q[64];
            sl__yaml_quote(q, sizeof q, s, n);
            sl__yaml_error(y, sl__yaml_line(y), path,
                           "%s is not a header name (letters, digits and !#$%%&'*+-.^_`|~, at "
                           "most %d)",
                           q, SL__SHED_HEADER_MAX - 1);
            break;
        }
        memcpy(sc->header, s, n + 1);
        break;
    }
    case SH_SCOPE: {
        int i = sl__yaml_enum(y, path, "scope", scopes, COUNT(scopes));
        if (i >= 0) sc->fleet = i == 1;
        break;
    }
    case SH_ON_FAILURE: {
        int i = sl__yaml_enum(y, path, "failure mode", sl__config_failure_modes,
                              COUNT(sl__config_failure_modes));
        if (i >= 0) sc->on_failure = (sl__fail_setting)(1 + i); /* in sl__fail_mode's order */
        break;
    }
    }
}

void sl__config_shedding(sl__config_parser *p, const char *path) {
    sl__shed_config *sc = &p->cfg->shedding;
    int line = p->y.key_line;
    int seen[COUNT(shed_keys)] = {0};
    size_t before = p->y.errs->n;
    *sc = (sl__shed_config){.header = "X-Priority"};
    sl__yaml_section(&p->y, path, shed_keys, COUNT(shed_keys), shed_value, sc, seen,
                     "a mapping of rate, burst, reserve_critical, reserve_default, header, "
                     "scope and on_failure");
    if (p->y.fatal || p->y.errs->n != before) return;
    if (!seen[SH_RATE]) {
        sl__yaml_error(&p->y, line, path, "missing rate (the server's capacity, such as 1000/s)");
        return;
    }
    if (!seen[SH_BURST]) sc->burst = sc->rate.limit;
    char field[SL__YAML_PATH_SIZE + 32];
    sl_shed_options o = {.rate = sc->rate,
                         .burst = sc->burst,
                         .reserve_critical = sc->reserve_critical,
                         .reserve_default = sc->reserve_default};
    sl_shed *test = NULL;
    int rc = sl_shed_create(&o, 0, &test);
    sl_shed_destroy(test);
    if (rc == SL_EINVAL) {
        snprintf(field, sizeof field, "%s.reserve_default", path);
        sl__yaml_error(&p->y, seen[SH_RESERVE_DEFAULT] ? seen[SH_RESERVE_DEFAULT] : line, field,
                       "reserve_critical + reserve_default (%lld) must leave sheddable requests "
                       "at least one of the burst's %lld",
                       (long long)sc->reserve_critical + sc->reserve_default, (long long)sc->burst);
        return;
    }
    if (rc != SL_OK) {
        snprintf(field, sizeof field, "%s.%s", path, seen[SH_BURST] ? "burst" : "rate");
        sl__yaml_error(&p->y, seen[SH_BURST] ? seen[SH_BURST] : seen[SH_RATE], field, "%s",
                       sl_strerror(rc));
        return;
    }
    sc->enabled = true;
    sc->line = line;
    sc->scope_line = seen[SH_SCOPE];
}

/* The largest burst of a fleet capacity: its floors travel in the script's
 * flags (floor x SL__SCRIPT_DELAY_AFTER below 2^52, redis_script.h). */
#define FLEET_BURST_MAX (INT64_C(1) << 41)

void sl__config_check_shedding(sl__config_parser *p) {
    const sl__config *c = p->cfg;
    const sl__shed_config *sc = &c->shedding;
    if (!sc->enabled || !sc->fleet) return;
    int line = sc->scope_line ? sc->scope_line : sc->line;
    const char *why = NULL;
    if (c->store_type != SL__STORE_REDIS)
        why = "needs store.type: redis (one capacity in Redis for the fleet)";
    else if (c->redis.batched)
        why = "needs store.redis.sync: exact (a batched store decides in memory)";
    else if (c->redis.cluster)
        why = "needs a single Redis node, not a cluster (the capacity's key and a request's keys "
              "must be in one script call)";
    if (why) {
        sl__yaml_error(&p->y, line, "shedding.scope", "fleet %s", why);
        return;
    }
    sl_params pa = {.algorithm = SL_TOKEN_BUCKET, .rate = sc->rate, .burst = sc->burst};
    int rc = sl__redis_script_check(&pa, false);
    if (rc == SL_OK && sc->burst > FLEET_BURST_MAX) rc = SL_EOVERFLOW;
    if (rc != SL_OK)
        sl__yaml_error(
            &p->y, line, "shedding.scope",
            "fleet: Redis cannot decide rate %lld/%lld ns with burst %lld exactly (%s; a "
            "period of whole microseconds, burst at most 2^41)",
            (long long)sc->rate.limit, (long long)sc->rate.period, (long long)sc->burst,
            sl_strerror(rc));
}
