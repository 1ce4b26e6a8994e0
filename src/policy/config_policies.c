/* config_policies.c: the policies: and quotas: sections (one sl__policy_config
 * each, quotas being fixed windows of a day or a calendar month), the
 * variants tiers make of them, and the check that every one of them is a
 * limit the Redis store decides exactly. docs/configuration.md. */
#include "policy/config_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"
#include "store/redis_script.h"

enum {
    POL_NAME,
    POL_ALGORITHM,
    POL_RATE,
    POL_BURST,
    POL_COUNT_REJECTED,
    POL_START,
    POL_SHADOW,
    POL_ON_FAILURE,
    POL_DELAY_AFTER,
    POL_REFILL,
    POL_GRAPHQL,
    POL_LIMIT, /* concurrency limits only (config_leases.c) */
    POL_LEASE,
    POL_ADAPTIVE,
    POL_MIN_LIMIT,
    POL_MAX_LIMIT,
    POL_RAMP_UP,
    POL_HOLD,
    POL_HOLD_PER_TENANT,
    POL_HOLD_WEIGHTS,
    POL_RETRY_BUDGET,
    POL_NKEYS
};

static const char *const policy_keys[] = {
    "name",        "algorithm", "rate",       "burst",           "count_rejected",
    "start",       "shadow",    "on_failure", "delay_after",     "refill",
    "graphql",     "limit",     "lease",      "adaptive",        "min_limit",
    "max_limit",   "ramp_up",   "hold",       "hold_per_tenant", "hold_weights",
    "retry_budget"};
_Static_assert(sizeof policy_keys / sizeof policy_keys[0] == POL_NKEYS, "one name per key");

static const char *const algorithm_names[] = {"fixed_window", "sliding_log", "sliding_window",
                                              "token_bucket", "gcra",        "leaky_queue",
                                              "concurrency"};
#define ALG_CONCURRENCY 6 /* not an sl_algorithm: a concurrency limit (config_leases.c) */

static const char *const start_names[] = {"full", "empty"};

static const char *const refill_names[] = {"continuous", "steps"};

/* What other tools call our algorithms, for "did you mean". */
static const sl__yaml_alias algorithm_aliases[] = {
    {"leaky_bucket", "gcra (the leaky bucket as a meter) or leaky_queue (as a queue)"},
    {"sliding_window_log", "sliding_log"},
    {"sliding_window_counter", "sliding_window"},
    {"generic_cell_rate", "gcra"},
    {"cell", "gcra"},
};

enum { QU_NAME, QU_LIMIT, QU_PER, QU_SHADOW, QU_NKEYS };

static const char *const quota_keys[] = {"name", "limit", "per", "shadow"};

static const char *const quota_periods[] = {"day", "month"};

#define MONTH_PERIOD (31 * NS_DAY) /* a calendar quota's table period, see policy.c */

typedef struct policy_build {
    sl__policy_config *pc;
    size_t index;
    int seen[POL_NKEYS];
    bool have_algorithm;
    bool concurrency; /* algorithm: concurrency */
    uint64_t limit;
    int64_t lease;
    bool adaptive;
    uint64_t min_limit, max_limit;
} policy_build;

static void policy_name(sl__config_parser *p, policy_build *b, const char *path) {
    const char *s = sl__yaml_scalar(&p->y, path, "a name such as api ([a-z0-9_.-]+)");
    if (!s) return;
    size_t n = sl__yaml_len(&p->y);
    if (!sl__config_check_name(p, sl__yaml_line(&p->y), path, s, n)) return;
    char q[64];
    sl__yaml_quote(q, sizeof q, s, n);
    for (size_t i = 0; i < b->index; i++) {
        const sl__policy_config *o = &p->cfg->policies[i];
        if (strcmp(o->name, s) == 0) {
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                           "duplicate policy name %s (first at line %d)", q, o->line);
            return;
        }
    }
    const sl__lease_config *lc = sl__config_lease(p->cfg, s, n);
    if (lc) {
        sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                       "duplicate policy name %s (first at line %d)", q, lc->line);
        return;
    }
    memcpy(b->pc->name, s, n + 1);
}

/* One tier's weight under hold_weights: (the tier is checked once tiers:
 * is read, config_identity.c). */
static void hold_weight(sl__yaml *y, void *obj, const char *key, size_t len, int line,
                        const char *path) {
    sl__config_parser *p = y->user;
    sl__policy_config *pc = obj;
    uint64_t u;
    for (unsigned i = 0; i < pc->nhold_weights; i++) {
        if (strcmp(pc->hold_weights[i].tier, key) == 0) {
            sl__yaml_error(y, line, path, "duplicate tier (first at line %d)",
                           pc->hold_weights[i].line);
            sl__yaml_skip(y);
            return;
        }
    }
    if (len > SL__POLICY_NAME_MAX || pc->nhold_weights == SL__HOLD_WEIGHTS_MAX) {
        sl__yaml_error(y, line, path,
                       len > SL__POLICY_NAME_MAX ? "not a tier name"
                                                 : "too many tiers (at most %d)",
                       SL__HOLD_WEIGHTS_MAX);
        sl__yaml_skip(y);
        return;
    }
    if (!sl__yaml_uint(&p->y, path, "a whole number weight", 1, SL__HOLD_WEIGHT_MAX, &u)) return;
    struct sl__hold_weight *w = &pc->hold_weights[pc->nhold_weights++];
    memcpy(w->tier, key, len + 1);
    w->weight = (uint32_t)u;
    w->line = line;
}

/* The keys of a concurrency limit (limit, lease, adaptive, min_limit,
 * max_limit), kept in b until the policy is finished (config_leases.c). */
static void lease_value(sl__config_parser *p, policy_build *b, int key, const char *path) {
    switch (key) {
    case POL_LIMIT:
        sl__yaml_uint(&p->y, path, "a whole number of leases held at once", 1, SL_CONCURRENCY_MAX,
                      &b->limit);
        break;
    case POL_LEASE:
        sl__yaml_duration(&p->y, path, NS_MS, SL__LEASE_MAX, &b->lease);
        break;
    case POL_ADAPTIVE:
        sl__yaml_bool(&p->y, path, &b->adaptive);
        break;
    case POL_MIN_LIMIT:
        sl__yaml_uint(&p->y, path, "a whole number of leases", 1, SL_CONCURRENCY_MAX,
                      &b->min_limit);
        break;
    case POL_MAX_LIMIT:
        sl__yaml_uint(&p->y, path, "a whole number of leases", 1, SL_CONCURRENCY_MAX,
                      &b->max_limit);
        break;
    }
}

/* rate: into pc's params. */
static void policy_rate(sl__config_parser *p, sl__policy_config *pc, const char *path) {
    const char *s = sl__yaml_scalar(&p->y, path, "a rate such as 5/s");
    if (!s) return;
    char q[64];
    sl__yaml_quote(q, sizeof q, s, sl__yaml_len(&p->y));
    int rc = sl_rate_parse(s, &pc->params.rate);
    if (rc == SL_EPARSE)
        sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                       "cannot parse %s (expected N/s, N/m, N/h, N/d or N/<duration> such as "
                       "100/10s)",
                       q);
    else if (rc == SL_EOVERFLOW)
        sl__yaml_error(&p->y, sl__yaml_line(&p->y), path, "%s: a number is too large", q);
    else if (rc != SL_OK)
        sl__yaml_error(&p->y, sl__yaml_line(&p->y), path, "%s: %s", q, sl_strerror(rc));
}

/* hold, hold_weights and hold_per_tenant: into pc. */
static void hold_value(sl__config_parser *p, sl__policy_config *pc, int key, const char *path) {
    uint64_t u;
    switch (key) {
    case POL_HOLD: {
        int64_t d;
        if (sl__yaml_duration(&p->y, path, NS_MS, SL__HOLD_MAX, &d)) pc->hold = d;
        break;
    }
    case POL_HOLD_WEIGHTS:
        if (sl__yaml_is_null(&p->y)) break;
        if (!sl__yaml_is_map(&p->y)) {
            sl__yaml_expected(&p->y, path, "a mapping of tier names to weights (pro: 4)");
            break;
        }
        sl__yaml_each_named(&p->y, path, hold_weight, pc);
        break;
    case POL_HOLD_PER_TENANT:
        if (sl__yaml_uint(&p->y, path, "a number of answers", 1, SL__HOLD_PER_TENANT_MAX, &u))
            pc->hold_per_tenant = (int64_t)u;
        break;
    }
}

static void policy_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    policy_build *b = obj;
    sl__policy_config *pc = b->pc;
    uint64_t u;
    bool flag;
    int i;
    switch (key) {
    case POL_NAME:
        policy_name(p, b, path);
        break;
    case POL_ALGORITHM:
        i = sl__yaml_enum_aliased(&p->y, path, "algorithm", algorithm_names, COUNT(algorithm_names),
                                  algorithm_aliases, COUNT(algorithm_aliases));
        if (i == ALG_CONCURRENCY)
            b->concurrency = b->have_algorithm = true;
        else if (i >= 0 && sl_algorithm_parse(algorithm_names[i], &pc->params.algorithm) == SL_OK)
            b->have_algorithm = true;
        break;
    case POL_LIMIT:
    case POL_LEASE:
    case POL_ADAPTIVE:
    case POL_MIN_LIMIT:
    case POL_MAX_LIMIT:
        lease_value(p, b, key, path);
        break;
    case POL_RATE:
        policy_rate(p, pc, path);
        break;
    case POL_BURST:
        if (sl__yaml_uint(&p->y, path, "a whole number of requests", 1, INT64_MAX, &u))
            pc->params.burst = (int64_t)u;
        break;
    case POL_DELAY_AFTER:
        if (sl__yaml_uint(&p->y, path, "a whole number of requests", 0, INT64_MAX, &u))
            pc->params.delay_after = (int64_t)u;
        break;
    case POL_HOLD:
    case POL_HOLD_WEIGHTS:
    case POL_HOLD_PER_TENANT:
        hold_value(p, pc, key, path);
        break;
    case POL_GRAPHQL:
        sl__config_policy_graphql(p, path, &pc->graphql);
        break;
    case POL_RAMP_UP:
        sl__config_policy_ramp(p, path, &pc->ramp);
        break;
    case POL_RETRY_BUDGET:
        sl__config_policy_retry(p, path, &pc->retry);
        break;
    case POL_COUNT_REJECTED:
        if (sl__yaml_bool(&p->y, path, &flag) && flag) pc->params.flags |= SL_COUNT_REJECTED;
        break;
    case POL_REFILL:
        if (sl__yaml_enum(&p->y, path, "refill", refill_names, COUNT(refill_names)) == 1)
            pc->params.flags |= SL_STEP_REFILL;
        break;
    case POL_START:
        if (sl__yaml_enum(&p->y, path, "start", start_names, COUNT(start_names)) == 1)
            pc->params.flags |= SL_START_EMPTY; /* origin: set by the server at load */
        break;
    case POL_SHADOW:
        if (sl__yaml_bool(&p->y, path, &flag)) pc->shadow = flag;
        break;
    case POL_ON_FAILURE:
        i = sl__yaml_enum(&p->y, path, "failure mode", sl__config_failure_modes,
                          COUNT(sl__config_failure_modes));
        if (i >= 0) pc->on_failure = (sl__fail_setting)(1 + i); /* in sl__fail_mode's order */
        break;
    }
}

/* A policy's keys against its algorithm: the required ones, those of a
 * concurrency limit only, a bucket's burst (a window's is dropped). */
static void finish_keys(sl__config_parser *p, policy_build *b, const char *path, int line) {
    sl__policy_config *pc = b->pc;
    char field[SL__YAML_PATH_SIZE + 32];
    static const sl__yaml_required required[] = {
        {POL_NAME, "every policy needs a name"},
        {POL_ALGORITHM, "every policy needs an algorithm"},
        {POL_RATE, "every policy needs a rate such as 5/s"}};
    sl__yaml_missing(&p->y, line, path, policy_keys, b->seen, required, COUNT(required));
    for (int k = POL_LIMIT; k <= POL_MAX_LIMIT; k++)
        if (b->seen[k] && b->have_algorithm) {
            snprintf(field, sizeof field, "%s.%s", path, policy_keys[k]);
            sl__yaml_error(&p->y, b->seen[k], field,
                           "only a concurrency limit (algorithm: concurrency) has a %s",
                           policy_keys[k]);
        }
    if (b->have_algorithm && sl_algorithm_is_bucket(pc->params.algorithm) && !b->seen[POL_BURST]) {
        snprintf(field, sizeof field, "%s.burst", path);
        sl__yaml_error(&p->y, line, field, "missing (%s needs a burst: %s)",
                       sl_algorithm_name(pc->params.algorithm),
                       pc->params.algorithm == SL_LEAKY_QUEUE ? "how many requests may wait"
                                                              : "the bucket size");
    }
    if (b->have_algorithm && !sl_algorithm_is_bucket(pc->params.algorithm)) pc->params.burst = 0;
}

/* The keys that only some algorithms or only a held policy take:
 * delay_after, hold, hold_per_tenant and hold_weights, refill: steps. False
 * after reporting the first that does not fit. */
static bool finish_combinations(sl__config_parser *p, policy_build *b, const char *path) {
    sl__policy_config *pc = b->pc;
    char field[SL__YAML_PATH_SIZE + 32];
    if (b->seen[POL_DELAY_AFTER] && pc->params.delay_after != 0 &&
        (pc->params.algorithm != SL_LEAKY_QUEUE || pc->params.delay_after >= pc->params.burst)) {
        snprintf(field, sizeof field, "%s.delay_after", path);
        if (pc->params.algorithm != SL_LEAKY_QUEUE)
            sl__yaml_error(&p->y, b->seen[POL_DELAY_AFTER], field,
                           "only a leaky_queue delays requests (nginx's delay=D is leaky_queue, "
                           "burst B+1, delay_after D)");
        else
            sl__yaml_error(&p->y, b->seen[POL_DELAY_AFTER], field,
                           "%lld: must be below the burst (%lld; burst - 1 delays nothing)",
                           (long long)pc->params.delay_after, (long long)pc->params.burst);
        return false;
    }
    if (b->seen[POL_HOLD] && pc->params.algorithm != SL_LEAKY_QUEUE) {
        snprintf(field, sizeof field, "%s.hold", path);
        sl__yaml_error(&p->y, b->seen[POL_HOLD], field,
                       "only a leaky_queue holds answers until their release time (nginx's "
                       "burst=B without nodelay is leaky_queue, burst B+1, hold: ...)");
        pc->nhold_weights = 0;
        return false;
    }
    for (int k = POL_HOLD_PER_TENANT; k <= POL_HOLD_WEIGHTS; k++)
        if (b->seen[k] && !b->seen[POL_HOLD]) {
            snprintf(field, sizeof field, "%s.%s", path, policy_keys[k]);
            sl__yaml_error(&p->y, b->seen[k], field,
                           "only a policy with hold: holds answers (hold: 5s, the longest wait)");
            pc->nhold_weights = 0; /* no cascade: its tiers are not checked */
            return false;
        }
    if ((pc->params.flags & SL_STEP_REFILL) && pc->params.algorithm != SL_TOKEN_BUCKET) {
        snprintf(field, sizeof field, "%s.refill", path);
        sl__yaml_error(&p->y, b->seen[POL_REFILL], field,
                       "steps: only a token_bucket refills in steps (Envoy's local rate limit: "
                       "token_bucket, rate tokens_per_fill/fill_interval, burst max_tokens)");
        return false;
    }
    return true;
}

/* sl_params_validate and the ramp's check, each refusal explained at the
 * key to blame (the burst only if the rate alone is fine). */
static void finish_params(sl__config_parser *p, policy_build *b, const char *path, int line) {
    sl__policy_config *pc = b->pc;
    char field[SL__YAML_PATH_SIZE + 32];
    int rc = sl_params_validate(&pc->params);
    const char *ramp = rc == SL_OK ? sl__config_ramp_problem(pc) : NULL;
    if (ramp) {
        snprintf(field, sizeof field, "%s.ramp_up", path);
        sl__yaml_error(&p->y, b->seen[POL_RAMP_UP], field, "%s", ramp);
        return;
    }
    if (rc == SL_OK) return;
    /* Blame the burst only if the rate alone is fine. */
    sl_params alone = pc->params;
    if (sl_algorithm_is_bucket(alone.algorithm)) alone.burst = 1;
    int key = rc == SL_EBURST || sl_params_validate(&alone) == SL_OK ? POL_BURST : POL_RATE;
    snprintf(field, sizeof field, "%s.%s", path, policy_keys[key]);
    char rate[48];
    sl_rate_format(pc->params.rate, rate, sizeof rate);
    int at = b->seen[key] ? b->seen[key] : line;
    if (rc == SL_EINVAL && pc->params.algorithm == SL_SLIDING_LOG)
        sl__yaml_error(&p->y, at, field,
                       "%s: a sliding_log keeps every request of its period, at most %d (use "
                       "sliding_window for larger limits)",
                       rate, SL_SLIDING_LOG_MAX);
    else if (rc == SL_EOVERFLOW && key == POL_BURST)
        sl__yaml_error(
            &p->y, at, field,
            "%lld with rate %s: %s (use a smaller burst, or a period that shares factors "
            "with the limit)",
            (long long)pc->params.burst, rate, sl_strerror(rc));
    else if (rc == SL_EOVERFLOW && sl_algorithm_is_bucket(pc->params.algorithm) &&
             pc->params.rate.limit <= (INT64_C(1) << 61) &&
             pc->params.rate.period <= 36600 * NS_DAY)
        /* a period the rate allows, too long for a bucket even at burst 1 */
        sl__yaml_error(
            &p->y, at, field,
            "%s: %s (for a bucket, burst x period / gcd(N, period) is at most 2^61 ns: at "
            "burst 1, a period of at most 26687d; windows take up to 36600d)",
            rate, sl_strerror(rc));
    else if (rc == SL_EOVERFLOW)
        sl__yaml_error(&p->y, at, field, "%s: %s (at most 2^61 per period of at most 36600d)", rate,
                       sl_strerror(rc));
    else
        sl__yaml_error(&p->y, at, field, "%s", sl_strerror(rc));
}

/* Checks a parsed policy as a whole (required fields, sl_params_validate). */
static void policy_finish(sl__config_parser *p, policy_build *b, const char *path, int line,
                          size_t errors_before) {
    if (b->concurrency) {
        sl__lease_config lc = {.limit = (int64_t)b->limit,
                               .lease = b->lease,
                               .adaptive = b->adaptive,
                               .min_limit = (int64_t)b->min_limit,
                               .max_limit = (int64_t)b->max_limit};
        sl__config_lease_finish(p, b->pc, b->seen, policy_keys, POL_NKEYS, &lc, path, line,
                                errors_before);
        return;
    }
    finish_keys(p, b, path, line);
    if (p->y.errs->n != errors_before) return; /* nothing to validate, or cascades */
    if (!finish_combinations(p, b, path)) return;
    finish_params(p, b, path, line);
}

static sl__policy_config *new_policy(sl__config_parser *p) {
    sl__config *c = p->cfg;
    if (c->npolicies == p->policies_cap) {
        size_t cap = p->policies_cap ? 2 * p->policies_cap : 8;
        if (cap > SL__CONFIG_MAX_POLICIES) cap = SL__CONFIG_MAX_POLICIES;
        sl__policy_config *np = realloc(c->policies, cap * sizeof *np);
        if (!np) return NULL;
        c->policies = np;
        p->policies_cap = cap;
    }
    sl__policy_config *pc = &c->policies[c->npolicies++];
    memset(pc, 0, sizeof *pc);
    return pc;
}

static void policy_item(sl__yaml *y, void *obj, size_t i, const char *item) {
    sl__config_parser *p = y->user;
    (void)obj, (void)i;
    int line = sl__yaml_line(y);
    size_t errors_before = y->errs->n;
    policy_build b = {.index = p->cfg->npolicies};
    b.pc = new_policy(p);
    if (!b.pc) {
        sl__yaml_error(y, line, item, "out of memory");
        y->fatal = true;
        return;
    }
    b.pc->line = line;
    sl__yaml_each_key(y, item, policy_keys, COUNT(policy_keys), policy_value, &b, b.seen);
    if (y->fatal) return;
    policy_finish(p, &b, item, line, errors_before);
}

void sl__config_policies(sl__config_parser *p, const char *path) {
    static const sl__yaml_list list = {
        .what = "a list of policies (- name: ...)",
        .item = "a policy (a mapping of name, algorithm, rate, ...)",
        .max = SL__CONFIG_MAX_POLICIES,
        .many = "policies",
    };
    sl__yaml_each_item(&p->y, path, &list, policy_item, NULL);
}

typedef struct quota_build {
    policy_build b;
    int seen[QU_NKEYS];
    int per;
    int64_t limit;
} quota_build;

static void quota_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    quota_build *q = obj;
    uint64_t u;
    bool flag;
    switch (key) {
    case QU_NAME:
        policy_name(p, &q->b, path);
        break;
    case QU_LIMIT:
        if (sl__yaml_uint(&p->y, path, "a whole number of requests", 1, (uint64_t)QUOTA_MAX, &u))
            q->limit = (int64_t)u;
        break;
    case QU_PER:
        q->per = sl__yaml_enum(&p->y, path, "quota period", quota_periods, COUNT(quota_periods));
        break;
    case QU_SHADOW:
        if (sl__yaml_bool(&p->y, path, &flag)) q->b.pc->shadow = flag;
        break;
    }
}

static void quota_item(sl__yaml *y, void *obj, size_t i, const char *item) {
    sl__config_parser *p = y->user;
    (void)obj, (void)i;
    if (p->cfg->npolicies >= SL__CONFIG_MAX_POLICIES) {
        sl__yaml_error(y, sl__yaml_line(y), item, "too many policies and quotas (at most %d)",
                       SL__CONFIG_MAX_POLICIES);
        sl__yaml_skip(y);
        return;
    }
    if (!sl__yaml_is_map(y)) {
        sl__yaml_expected(y, item, "a quota (a mapping of name, limit and per)");
        return;
    }
    int line = sl__yaml_line(y);
    quota_build q = {.b = {.index = p->cfg->npolicies}, .per = -1};
    q.b.pc = new_policy(p);
    if (!q.b.pc) {
        sl__yaml_error(y, line, item, "out of memory");
        y->fatal = true;
        return;
    }
    q.b.pc->line = line;
    q.b.pc->quota = true;
    sl__yaml_each_key(y, item, quota_keys, COUNT(quota_keys), quota_value, &q, q.seen);
    if (y->fatal) return;
    static const sl__yaml_required required[] = {
        {QU_NAME, "every quota needs a name"},
        {QU_LIMIT, "every quota needs a limit"},
        {QU_PER, "every quota needs a period: per: day or per: month"}};
    sl__yaml_missing(y, line, item, quota_keys, q.seen, required, COUNT(required));
    sl__policy_config *pc = q.b.pc;
    pc->params.algorithm = SL_FIXED_WINDOW;
    pc->params.rate.limit = q.limit > 0 ? q.limit : 1;
    /* A day is a fixed window aligned to the Unix epoch: midnight UTC. A
     * month is a window on a calendar clock (policy.c) of 31 days. */
    pc->params.rate.period = q.per == 1 ? MONTH_PERIOD : NS_DAY;
    pc->calendar = q.per == 1 ? SL__CALENDAR_MONTH : SL__CALENDAR_NONE;
}

void sl__config_quotas(sl__config_parser *p, const char *path) {
    /* the cap counts policies and quotas together: quota_item checks it */
    static const sl__yaml_list list = {
        .what = "a list of quotas (- name: ..., limit: ..., per: month)",
        .max = SIZE_MAX,
    };
    sl__yaml_each_item(&p->y, path, &list, quota_item, NULL);
}

/* Errors of the store check (sl__config_check_store), with their lines for
 * sort_errors when error_line is given. */
__attribute__((format(printf, 5, 6))) static void store_error(sl__config_errors *errs,
                                                              int *error_line, const char *source,
                                                              int line, const char *fmt, ...) {
    if (error_line && errs->n < SL__CONFIG_MAX_ERRORS) error_line[errs->n] = line;
    va_list ap;
    va_start(ap, fmt);
    sl__errors_addv(errs, source, line, NULL, fmt, ap);
    va_end(ap);
}

static const char *redis_limit_problem(const sl__policy_config *pc) {
    sl_params unit = pc->params; /* a ramped limit's state is kept in units (sluice/ramp.h) */
    if (pc->ramp.duration && sl_ramp_params(&pc->params, &unit) != SL_OK) unit = pc->params;
    int rc = sl__redis_script_check(&unit, pc->calendar == SL__CALENDAR_MONTH);
    if (rc == SL_OK) return NULL;
    return rc == SL_EOVERFLOW ? "too large for the Redis store (the limit, burst x period in "
                                "microseconds, or delay_after x 1024 must stay below 2^52)"
                              : "the Redis store decides in whole microseconds: the period must "
                                "be a whole number of microseconds";
}

/* With the Redis store, every policy and every tier variant must be a
 * limit the script decides exactly (whole microseconds; doubles exact to
 * 2^52: redis_script.h). The one place this is checked. */
static size_t store_errors(const sl__config *c, sl__config_errors *errs, int *error_line) {
    size_t before = errs->n;
    if (c->store_type != SL__STORE_REDIS) return 0;
    for (size_t i = 0; i < c->npolicies; i++) {
        const sl__policy_config *pc = &c->policies[i];
        const char *why = redis_limit_problem(pc);
        if (why)
            store_error(errs, error_line, c->source, pc->line, "%s %s: %s",
                        pc->quota ? "quota" : "policy", pc->name, why);
    }
    for (size_t i = 0; c->redis.batched && i < c->nleases; i++)
        store_error(errs, error_line, c->source, c->leases[i].line,
                    "policy %s: a concurrency limit needs sync: exact (batched mode would let "
                    "every server hold the limit)",
                    c->leases[i].name);
    for (size_t t = 0; t < c->ntiers; t++) {
        const sl__tier_config *tc = &c->tiers[t];
        for (size_t j = 0; j < tc->noverrides; j++) {
            sl__policy_config v;
            if (sl__config_tier_variant(c, tc, &tc->overrides[j], &v) != 0) continue;
            const char *why = redis_limit_problem(&v);
            if (why)
                store_error(errs, error_line, c->source, v.line, "tiers.%s.%s (policy %s): %s",
                            tc->name, tc->overrides[j].policy, v.name, why);
        }
    }
    return errs->n - before;
}

void sl__config_check_redis_limits(sl__config_parser *p) {
    store_errors(p->cfg, p->y.errs, p->y.error_line);
}

int sl__config_check_store(const sl__config *c, sl__config_errors *errs) {
    return store_errors(c, errs, NULL) ? -1 : 0;
}

int sl__config_tier_variant(const sl__config *c, const sl__tier_config *t,
                            const sl__tier_override *o, sl__policy_config *out) {
    const sl__policy_config *base = sl__config_policy(c, o->policy, strlen(o->policy));
    if (!base) return -1;
    size_t bl = strlen(base->name), tl = strlen(t->name);
    if (bl + 1 + tl > SL__POLICY_NAME_MAX) return -1; /* the loader refuses these */
    *out = *base;
    memcpy(out->name, base->name, bl);
    out->name[bl] = ':';
    memcpy(out->name + bl + 1, t->name, tl + 1);
    if (o->have_rate) out->params.rate = o->rate;
    if (o->have_burst && out->params.burst > 0) out->params.burst = o->burst;
    if (o->have_limit) out->params.rate.limit = o->limit;
    out->line = o->line;
    return 0;
}
