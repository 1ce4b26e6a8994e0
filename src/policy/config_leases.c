/* config_leases.c: concurrency limits in the policies: section
 * (`algorithm: concurrency`, `limit:`, `lease:`; docs/protection.md): what
 * makes sense for them, with a clear error for what does not (a rate, a
 * burst, ...), and their place in the config (sl__config.leases, apart from
 * the rate policies). The policies section reads the keys
 * (config_policies.c) and hands the policy over here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/config_parse.h"

/* The line a key was seen at (0: absent). */
static int seen_at(const int *seen, const char *const *keys, size_t nkeys, const char *name) {
    for (size_t i = 0; i < nkeys; i++)
        if (strcmp(keys[i], name) == 0) return seen[i];
    return 0;
}

/* Keys of a rate policy that mean nothing for a concurrency limit, and why. */
static const struct {
    const char *key, *why;
} not_for_leases[] = {
    {"rate", "a concurrency limit counts requests held at once, not per period: use limit: N"},
    {"burst", "a concurrency limit has no burst: limit: N is how many are held at once"},
    {"count_rejected", "a refused acquire holds nothing, so there is nothing to count"},
    {"start", "a concurrency limit always starts with nothing held"},
    {"delay_after", "only a leaky_queue delays requests"},
    {"hold", "only a leaky_queue holds answers"},
    {"hold_per_tenant", "only a leaky_queue holds answers"},
    {"hold_weights", "only a leaky_queue holds answers"},
    {"shadow", "not supported for concurrency limits (yet)"},
    {"retry_budget",
     "a retry budget limits retries of rate-limited requests (/v1/check, /v1/auth)"},
    {"ramp_up", "a ramp scales a rate and a burst; a concurrency limit's N is not ramped (yet)"},
};

void sl__config_lease_finish(sl__config_parser *p, sl__policy_config *pc, const int *seen,
                             const char *const *keys, size_t nkeys, const sl__lease_config *in,
                             const char *path, int line, size_t errors_before) {
    char field[SL__YAML_PATH_SIZE + 32];
    sl__config *c = p->cfg;
    if (!seen_at(seen, keys, nkeys, "name")) {
        snprintf(field, sizeof field, "%s.name", path);
        sl__yaml_error(&p->y, line, field, "missing (every policy needs a name)");
    }
    int limit_line = seen_at(seen, keys, nkeys, "limit");
    if (!limit_line) {
        snprintf(field, sizeof field, "%s.limit", path);
        sl__yaml_error(&p->y, line, field,
                       "missing (a concurrency limit needs limit: N, how many requests may be "
                       "in flight at once per key)");
    }
    for (size_t i = 0; i < sizeof not_for_leases / sizeof not_for_leases[0]; i++) {
        int at = seen_at(seen, keys, nkeys, not_for_leases[i].key);
        if (!at) continue;
        snprintf(field, sizeof field, "%s.%s", path, not_for_leases[i].key);
        sl__yaml_error(&p->y, at, field, "not for algorithm: concurrency (%s)",
                       not_for_leases[i].why);
    }
    int min_at = seen_at(seen, keys, nkeys, "min_limit"),
        max_at = seen_at(seen, keys, nkeys, "max_limit");
    if (!in->adaptive && (min_at || max_at)) {
        snprintf(field, sizeof field, "%s.%s", path, min_at ? "min_limit" : "max_limit");
        sl__yaml_error(&p->y, min_at ? min_at : max_at, field,
                       "only an adaptive concurrency limit (adaptive: true) has bounds");
    }
    if (in->adaptive && !max_at) {
        snprintf(field, sizeof field, "%s.max_limit", path);
        sl__yaml_error(&p->y, line, field,
                       "missing (adaptive: true needs max_limit: the most it may grow to)");
    }
    int64_t lo = in->min_limit ? in->min_limit : 1;
    if (in->adaptive && max_at && limit_line && p->y.errs->n == errors_before &&
        (lo > in->max_limit || in->limit < lo || in->limit > in->max_limit)) {
        snprintf(field, sizeof field, "%s.limit", path);
        sl__yaml_error(&p->y, limit_line, field,
                       "%lld: must lie within min_limit %lld and max_limit %lld (it is where an "
                       "adaptive limit starts)",
                       (long long)in->limit, (long long)lo, (long long)in->max_limit);
    }
    /* the policy leaves cfg->policies in any case: it was the last one */
    sl__policy_config copy = *pc;
    c->npolicies--;
    if (p->y.errs->n != errors_before) return;
    sl__lease_config *lc =
        sl__yaml_push(&p->y, &c->leases, NULL, &c->nleases, sizeof *c->leases, 1, line, path);
    if (!lc) return;
    memcpy(lc->name, copy.name, sizeof lc->name);
    lc->on_failure = copy.on_failure;
    lc->limit = in->limit;
    lc->lease = in->lease ? in->lease : SL__LEASE_DEFAULT;
    lc->line = line;
    lc->adaptive = in->adaptive;
    lc->min_limit = in->adaptive ? lo : 0;
    lc->max_limit = in->adaptive ? in->max_limit : 0;
    if (lc->lease % NS_MS != 0) {
        snprintf(field, sizeof field, "%s.lease", path);
        sl__yaml_error(&p->y, seen_at(seen, keys, nkeys, "lease"), field,
                       "must be a whole number of milliseconds");
        c->nleases--;
    }
}

const sl__lease_config *sl__config_lease(const sl__config *c, const char *name, size_t len) {
    if (!c || !name || len > SL__POLICY_NAME_MAX) return NULL;
    for (size_t i = 0; i < c->nleases; i++) {
        const sl__lease_config *lc = &c->leases[i];
        if (strlen(lc->name) == len && memcmp(lc->name, name, len) == 0) return lc;
    }
    return NULL;
}
