/* metrics.c: the server's own numbers, as the Prometheus page (/metrics)
 * and as the RESP INFO text. Per-worker counters are summed at read time;
 * per-policy counters and table statistics come from the policy set the
 * answering worker holds. Keys never appear as labels (see /v1/top). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stddef.h>

#include "policy/rules.h"
#include "server/admin/metrics_lease.h"
#include "server/admin/metrics_ramp.h"
#include "server/admin/metrics_retry.h"
#include "server/admin/prom.h"
#include "server/admin/admin.h"
#include "server/server.h"
#include "sluice/clock.h"
#include "sluice/sluice.h"
#include "util/log.h"

/* The sum over the workers of the counter at `offset` bytes into sl__worker. */
static uint64_t sum_at(sl__server *s, size_t offset) {
    uint64_t t = 0;
    for (unsigned i = 0; i < s->nworkers; i++)
        t += atomic_load_explicit((atomic_uint_fast64_t *)((char *)&s->workers[i] + offset),
                                  memory_order_relaxed);
    return t;
}

static uint64_t sum(sl__server *s, size_t offset) {
    return sum_at(s, offsetof(sl__worker, stats) + offset);
}

#define SUM(s, field) sum((s), offsetof(sl__worker_stats, field))

/* Held /v1/auth answers (a policy's hold:, server/hold.h). */
static void held_metrics(sl__server *s, sl__buf *out) {
    uint64_t held = SUM(s, held), released = SUM(s, held_released);
    uint64_t cancelled = SUM(s, held_cancelled), gone = released + cancelled;
    sl__prom_single(out, "sluice_held_answers", "gauge",
                    "GET /v1/auth answers held until their release time now (hold:).",
                    held > gone ? held - gone : 0);
    sl__prom_family(out, "sluice_hold_total", "counter",
                    "GET /v1/auth answers that a hold: delayed: held, then released at their time "
                    "or cancelled (their connection closed); refused at once (the hold full, "
                    "or the delay longer than hold:).");
    const char *lh[] = {"outcome", "held", NULL}, *lr[] = {"outcome", "released", NULL};
    const char *lc[] = {"outcome", "cancelled", NULL}, *lx[] = {"outcome", "refused", NULL};
    sl__prom_sample(out, "sluice_hold_total", lh, held);
    sl__prom_sample(out, "sluice_hold_total", lr, released);
    sl__prom_sample(out, "sluice_hold_total", lc, cancelled);
    sl__prom_sample(out, "sluice_hold_total", lx, SUM(s, held_refused));
}

/* POST /v1/graphql by policy: policies with a graphql: block, and any
 * other that answered a query (a policy without one uses the defaults). */
/* Load shedding (shedding:): /v1/check requests refused by the server's
 * capacity, by policy and priority; every policy once shedding is on. A
 * fleet capacity: its decisions made by its fail mode (Redis failed). */
static void shed_metrics(sl__policy_set *set, size_t n, sl__buf *out) {
    const sl__decide_capacity *cap = sl__policy_set_shed(set, NULL);
    if (!cap) return;
    if (cap->fleet) {
        sl__prom_family(out, "sluice_shed_fallback_total", "counter",
                        "Decisions of the fleet's shedding capacity (shedding: {scope: fleet}) "
                        "made by its on_failure while Redis failed, by mode.");
        for (int f = SL__FROM_OPEN; f < SL__FROM_COUNT; f++) {
            const char *l[] = {"mode", sl__store_fallback_name((sl__store_from)f), NULL};
            sl__prom_sample(out, "sluice_shed_fallback_total", l, atomic_load(&cap->from[f]));
        }
    }
    sl__prom_family(out, "sluice_shed_total", "counter",
                    "/v1/check requests shed (503) by the server's capacity (shedding:), by "
                    "policy and priority.");
    for (size_t i = 0; i < n; i++) {
        sl__policy *p = sl__policy_set_at(set, i);
        for (int k = 0; k < SL_PRIORITIES; k++) {
            const char *l[] = {"policy", p->cfg.name, "priority", sl_priority_name((sl_priority)k),
                               NULL};
            sl__prom_sample(out, "sluice_shed_total", l, atomic_load(&p->shed[k]));
        }
    }
}

static void graphql_metrics(sl__policy_set *set, size_t n, sl__buf *out) {
    static const char *const result[SL__GQL_RESULTS] = {[SL__GQL_RESULT_ALLOWED] = "allowed",
                                                        [SL__GQL_RESULT_LIMITED] = "limited",
                                                        [SL__GQL_RESULT_BAD_QUERY] = "bad_query",
                                                        [SL__GQL_RESULT_TOO_COSTLY] = "too_costly",
                                                        [SL__GQL_RESULT_TOO_LARGE] = "too_large"};
    sl__prom_family(out, "sluice_graphql_queries_total", "counter",
                    "POST /v1/graphql queries by policy and result (allowed, limited; bad_query, "
                    "too_costly, too_large: refused before anything was charged).");
    for (size_t i = 0; i < n; i++) {
        sl__policy *p = sl__policy_set_at(set, i);
        uint64_t v[SL__GQL_RESULTS], any = 0;
        for (int r = 0; r < SL__GQL_RESULTS; r++) any |= v[r] = atomic_load(&p->gql[r]);
        if (!any && !p->cfg.graphql.configured) continue;
        for (int r = 0; r < SL__GQL_RESULTS; r++) {
            const char *l[] = {"policy", p->cfg.name, "result", result[r], NULL};
            sl__prom_sample(out, "sluice_graphql_queries_total", l, v[r]);
        }
    }
    sl__prom_family(out, "sluice_graphql_cost_points_total", "counter",
                    "Points charged to the policy by allowed POST /v1/graphql queries.");
    for (size_t i = 0; i < n; i++) {
        sl__policy *p = sl__policy_set_at(set, i);
        uint64_t any = 0;
        for (int r = 0; r < SL__GQL_RESULTS; r++) any |= atomic_load(&p->gql[r]);
        if (!any && !p->cfg.graphql.configured) continue;
        const char *l[] = {"policy", p->cfg.name, NULL};
        sl__prom_sample(out, "sluice_graphql_cost_points_total", l, atomic_load(&p->gql_points));
    }
}

/* The tier of a tier variant ("api:pro": "pro"), or NULL. */
static const char *tier_of(const sl__policy *p) {
    return p->cfg.name[p->base_len] == ':' ? p->cfg.name + p->base_len + 1 : NULL;
}

/* labels: policy, then tier (for a tier variant), then `name`="value" (or
 * nothing more when name is NULL); NULL-terminated. */
static void policy_labels(const char *l[7], const sl__policy *p, const char *name,
                          const char *value) {
    size_t i = 0;
    l[i++] = "policy";
    l[i++] = p->cfg.name;
    const char *tier = tier_of(p);
    if (tier) l[i++] = "tier", l[i++] = tier;
    if (name) l[i++] = name, l[i++] = value;
    l[i] = NULL;
}

/* The near-limit histogram (decide.h): remaining / limit after each
 * decision, buckets SL__RATIO_BOUNDS / 100. */
static void ratio_metrics(sl__policy_set *set, size_t n, sl__buf *out) {
    static const char *const le[SL__RATIO_BUCKETS] = {"0",    "0.01", "0.05", "0.1",
                                                      "0.25", "0.5",  "1"};
    sl__prom_family(out, "sluice_decision_remaining_ratio", "histogram",
                    "Fraction of the limit left after each decision of the policy (remaining / "
                    "limit): a key at 95% of its limit is in the le=\"0.05\" bucket.");
    for (size_t i = 0; i < n; i++) {
        sl__policy *p = sl__policy_set_at(set, i);
        uint64_t counts[SL__RATIO_BUCKETS + 1];
        for (int b = 0; b <= SL__RATIO_BUCKETS; b++) counts[b] = atomic_load(&p->lim.ratio[b]);
        uint64_t sum = atomic_load(&p->lim.ratio_sum); /* millionths */
        char text[32];
        int k = snprintf(text, sizeof text, "%llu.%06llu", (unsigned long long)(sum / 1000000),
                         (unsigned long long)(sum % 1000000));
        while (k > 0 && text[k - 1] == '0') text[--k] = '\0';
        if (k > 0 && text[k - 1] == '.') text[--k] = '\0';
        const char *l[7];
        policy_labels(l, p, NULL, NULL);
        sl__prom_histogram_le(out, "sluice_decision_remaining_ratio", l, le, SL__RATIO_BUCKETS,
                              counts, text);
    }
}

/* One gauge family of the policies' table snapshots `st[0..n)`: the
 * uint64_t field at `offset` bytes into sl_table_stats, labelled by policy. */
static void table_gauge(sl__buf *out, sl__policy_set *set, const sl_table_stats *st, size_t n,
                        const char *family, const char *help, size_t offset) {
    sl__prom_family(out, family, "gauge", help);
    for (size_t i = 0; i < n; i++) {
        const char *l[] = {"policy", sl__policy_set_at(set, i)->cfg.name, NULL};
        uint64_t v;
        memcpy(&v, (const char *)&st[i] + offset, sizeof v);
        sl__prom_sample(out, family, l, v);
    }
}

static void policy_metrics(sl__policy_set *set, sl__buf *out) {
    size_t n = set ? sl__policy_set_count(set) : 0;
    sl__prom_family(out, "sluice_decisions_total", "counter",
                    "Decisions by policy (tier, for a tier variant) and outcome (allowed, "
                    "limited, shadow_limited).");
    for (size_t i = 0; i < n; i++) {
        sl__policy *p = sl__policy_set_at(set, i);
        const char *l0[7], *l1[7], *l2[7];
        policy_labels(l0, p, "outcome", "allowed");
        policy_labels(l1, p, "outcome", "limited");
        policy_labels(l2, p, "outcome", "shadow_limited");
        sl__prom_sample(out, "sluice_decisions_total", l0, atomic_load(&p->lim.allowed));
        sl__prom_sample(out, "sluice_decisions_total", l1, atomic_load(&p->lim.limited));
        sl__prom_sample(out, "sluice_decisions_total", l2, atomic_load(&p->lim.shadow_limited));
    }
    ratio_metrics(set, n, out);
    graphql_metrics(set, n, out);
    shed_metrics(set, n, out);
    /* One snapshot per table for the four families below. A set holds the
     * configured policies and quotas (at most SL__CONFIG_MAX_POLICIES) plus
     * one policy per tier override, so its size has no fixed bound: the
     * array is sized by the set; without memory the families are empty. */
    sl_table_stats *st = n ? calloc(n, sizeof *st) : NULL;
    if (!st) n = 0;
    for (size_t i = 0; i < n; i++)
        sl_table_stats_get(sl__policy_set_at(set, i)->lim.store.table, &st[i]);
    table_gauge(out, set, st, n, "sluice_table_keys", "Keys held in the policy's table.",
                offsetof(sl_table_stats, keys));
    table_gauge(out, set, st, n, "sluice_table_bytes",
                "Bytes held by the policy's table (states, keys, index).",
                offsetof(sl_table_stats, bytes));
    table_gauge(out, set, st, n, "sluice_table_max_bytes", "The table's memory cap.",
                offsetof(sl_table_stats, max_bytes));
    sl__prom_family(out, "sluice_evictions_total", "counter",
                    "States dropped: idle (fresh again, lossless) or live (memory cap reached).");
    for (size_t i = 0; i < n; i++) {
        const char *name = sl__policy_set_at(set, i)->cfg.name;
        const char *li[] = {"policy", name, "kind", "idle", NULL};
        const char *ll[] = {"policy", name, "kind", "live", NULL};
        sl__prom_sample(out, "sluice_evictions_total", li, st[i].evicted_idle);
        sl__prom_sample(out, "sluice_evictions_total", ll, st[i].evicted_live);
    }
    free(st);
}

/* Envoy's rules (domains:): each rule limit (and limit override) that has
 * decided at least once, by domain and rule (upstream's stats key below the
 * domain, "key_value.key2"), never by descriptor value. Rules that never
 * matched are left out, so the page grows with the rules in use, not with
 * the size of the rule files. */
static void domain_metrics(const sl__domain_set *ds, sl__buf *out) {
    size_t n = sl__domain_set_rule_count(ds);
    sl__domain_rule_stats st;
    sl__prom_family(out, "sluice_domain_decisions_total", "counter",
                    "Envoy rate limit rule decisions by domain, rule and outcome (allowed, "
                    "limited, shadow_limited).");
    for (size_t i = 0; i < n && sl__domain_set_rule_stats(ds, i, &st); i++) {
        if (st.allowed + st.limited + st.shadow_limited == 0) continue;
        const char *la[] = {"domain", st.domain, "rule", st.rule, "outcome", "allowed", NULL};
        const char *ll[] = {"domain", st.domain, "rule", st.rule, "outcome", "limited", NULL};
        const char *ls[] = {"domain",  st.domain,        "rule", st.rule,
                            "outcome", "shadow_limited", NULL};
        sl__prom_sample(out, "sluice_domain_decisions_total", la, st.allowed);
        sl__prom_sample(out, "sluice_domain_decisions_total", ll, st.limited);
        sl__prom_sample(out, "sluice_domain_decisions_total", ls, st.shadow_limited);
    }
    sl__prom_family(out, "sluice_domain_table_keys", "gauge",
                    "Descriptor values held in the table of an Envoy rate limit rule.");
    for (size_t i = 0; i < n && sl__domain_set_rule_stats(ds, i, &st); i++) {
        if (st.allowed + st.limited + st.shadow_limited == 0) continue;
        const char *l[] = {"domain", st.domain, "rule", st.rule, NULL};
        sl__prom_sample(out, "sluice_domain_table_keys", l, st.keys);
    }
}

/* The limits of rules: (/v1/auth) by rule, policy and tier (policy/rules.h):
 * those that decided at least once since the rules were compiled. */
static void rule_stat(void *ctx, const sl__rule_stats *st) {
    sl__buf *out = ctx;
    static const char *const outcome[3] = {"allowed", "limited", "shadow_limited"};
    const uint64_t v[3] = {st->allowed, st->limited, st->shadow_limited};
    for (int o = 0; o < 3; o++) {
        const char *l[9];
        size_t i = 0;
        l[i++] = "rule", l[i++] = st->rule, l[i++] = "policy", l[i++] = st->policy;
        if (st->tier) l[i++] = "tier", l[i++] = st->tier;
        l[i++] = "outcome", l[i++] = outcome[o];
        l[i] = NULL;
        sl__prom_sample(out, "sluice_rule_decisions_total", l, v[o]);
    }
}

static void rules_metrics(sl__policy_set *set, sl__buf *out) {
    const sl__rules *r = set ? sl__policy_set_rules(set) : NULL;
    sl__prom_family(out, "sluice_rule_decisions_total", "counter",
                    "Decisions of the limits of rules: (GET /v1/auth) by rule (the route), policy, "
                    "the key's tier and outcome; since the rules were last compiled (start or "
                    "reload). Never by key.");
    sl__rules_each_stat(r, rule_stat, out);
    uint64_t refused[SL__RULES_REFUSALS];
    sl__rules_refusals(r, refused);
    sl__prom_family(out, "sluice_identity_refused_total", "counter",
                    "GET /v1/auth requests refused because who or what they are could not be "
                    "established: 401 (unknown_key, missing_key) and 400 (client address, "
                    "original URI or method missing or malformed); since the rules were last "
                    "compiled.");
    for (size_t i = 0; i < SL__RULES_REFUSALS; i++) {
        const char *l[] = {"reason", sl__rules_refusal_names[i], NULL};
        sl__prom_sample(out, "sluice_identity_refused_total", l, refused[i]);
    }
}

/* A family with one unlabelled sample. */
static void single(sl__buf *out, const char *name, const char *type, const char *help, uint64_t v) {
    sl__prom_family(out, name, type, help);
    sl__prom_sample(out, name, NULL, v);
}

/* The Redis store's health and work (store.type: redis). */
static void redis_metrics(const sl__engine_report *es, sl__policy_set *set, sl__buf *out) {
    int up = es->up, open = es->breakers_open;
    single(out, "sluice_redis_up", "gauge",
           "1 when every worker reaches Redis (every node, for a cluster).", (uint64_t)up);
    single(out, "sluice_redis_breaker_open", "gauge",
           "Circuit breakers open now (per worker and node).", (uint64_t)(open > 0 ? open : 0));
    sl__prom_family(out, "sluice_redis_calls_total", "counter",
                    "Redis calls by result: ok (answered), error (connection lost or refused), "
                    "timeout, open (not sent: breaker open).");
    const char *lok[] = {"result", "ok", NULL}, *ler[] = {"result", "error", NULL},
               *lto[] = {"result", "timeout", NULL}, *lop[] = {"result", "open", NULL};
    sl__prom_sample(out, "sluice_redis_calls_total", lok, es->ok);
    sl__prom_sample(out, "sluice_redis_calls_total", ler, es->errors);
    sl__prom_sample(out, "sluice_redis_calls_total", lto, es->timeouts);
    sl__prom_sample(out, "sluice_redis_calls_total", lop, es->rejected_open);
    sl__prom_family(out, "sluice_redis_call_seconds_total", "counter",
                    "Total time of answered Redis calls (divide by calls ok for the mean).");
    sl__prom_sample_f(out, "sluice_redis_call_seconds_total", NULL,
                      (double)es->latency_sum_us / 1e6);
    sl__prom_family(out, "sluice_redis_redirects_total", "counter",
                    "Redis Cluster redirections followed (MOVED, ASK).");
    const char *lmv[] = {"kind", "moved", NULL}, *lask[] = {"kind", "ask", NULL};
    sl__prom_sample(out, "sluice_redis_redirects_total", lmv, es->moved);
    sl__prom_sample(out, "sluice_redis_redirects_total", lask, es->ask);
    single(out, "sluice_redis_connects_total", "counter", "Connection attempts.", es->reconnects);
    single(out, "sluice_redis_slot_refreshes_total", "counter",
           "Redis Cluster slot maps read (CLUSTER SLOTS).", es->slot_refreshes);
    single(out, "sluice_redis_script_reloads_total", "counter",
           "NOSCRIPT answers: the script was sent again with EVAL.", es->noscript_reloads);
    sl__prom_family(out, "sluice_redis_decide_calls_total", "counter",
                    "Decision calls by command: module (SLUICE.DECIDE, sluice-redis.so) or "
                    "script (EVALSHA/EVAL).");
    const char *lvm[] = {"via", "module", NULL}, *lvs[] = {"via", "script", NULL};
    sl__prom_sample(out, "sluice_redis_decide_calls_total", lvm, es->module_calls);
    sl__prom_sample(out, "sluice_redis_decide_calls_total", lvs, es->script_calls);
    single(out, "sluice_redis_module_missing", "gauge",
           "Workers that refuse to decide: store.redis.module is require and Redis lacks "
           "SLUICE.DECIDE.",
           (uint64_t)(es->module_missing > 0 ? es->module_missing : 0));
    single(out, "sluice_redis_script_errors_total", "counter",
           "Script answers that could not be used (treated as a failure).", es->script_errors);
    single(out, "sluice_deny_cache_hits_total", "counter",
           "Requests refused from the deny cache without asking Redis.", es->deny_hits);
    single(out, "sluice_deny_cache_inserts_total", "counter",
           "Refusals remembered in the deny cache.", es->deny_inserts);
    if (es->batched) {
        single(out, "sluice_batch_syncs_total", "counter",
               "Batched mode: syncs with Redis completed.", es->syncs);
        single(out, "sluice_batch_keys_synced_total", "counter",
               "Batched mode: keys pushed to Redis and charged with what the fleet used.",
               es->keys_synced);
        single(out, "sluice_batch_failed_syncs_total", "counter",
               "Batched mode: key pushes that failed (pushed again, unless timed out).",
               es->failed_syncs);
    }
    sl__prom_family(out, "sluice_store_fallback_total", "counter",
                    "Decisions made by a fail mode because Redis failed, by policy and mode.");
    size_t n = set ? sl__policy_set_count(set) : 0;
    for (size_t i = 0; i < n; i++) {
        sl__policy *p = sl__policy_set_at(set, i);
        for (int m = SL__FROM_OPEN; m < SL__FROM_COUNT; m++) {
            const char *l[] = {"policy", p->cfg.name, "mode",
                               sl__store_fallback_name((sl__store_from)m), NULL};
            sl__prom_sample(out, "sluice_store_fallback_total", l,
                            atomic_load(&p->lim.store.from[m]));
        }
    }
}

/* The build and the start time. */
static void info_metrics(sl__server *s, sl__buf *out) {
    sl__prom_family(out, "sluice_info", "gauge", "Build information.");
    const char *vl[] = {"version", SLUICE_VERSION, NULL};
    sl__prom_sample(out, "sluice_info", vl, 1);
    sl__prom_single(out, "sluice_start_time_seconds", "gauge", "Unix time the server started.",
                    (uint64_t)(s->started_at / SL_NS_PER_SEC));
}

/* CL.THROTTLE's own store. */
static void cell_metrics(sl__server *s, sl__buf *out) {
    uint64_t keys = 0, bytes = 0, live = 0;
    sl__cell_stats(s->cell, &keys, &bytes, &live);
    sl__prom_single(out, "sluice_cell_keys", "gauge", "Keys held for CL.THROTTLE.", keys);
    sl__prom_single(out, "sluice_cell_bytes", "gauge", "Bytes held for CL.THROTTLE.", bytes);
    sl__prom_single(out, "sluice_cell_evictions_total", "counter",
                    "CL.THROTTLE live states evicted at the memory cap.", live);
}

/* Requests and their latency histogram, by protocol. */
static void request_metrics(sl__server *s, sl__buf *out) {
    static const char *const proto_names[SL__PROTO_COUNT] = {"http", "resp", "grpc"};
    sl__prom_family(out, "sluice_requests_total", "counter",
                    "Requests (HTTP) and commands (RESP) answered.");
    for (int p = 0; p < SL__PROTO_COUNT; p++) {
        const char *l[] = {"protocol", proto_names[p], NULL};
        sl__prom_sample(out, "sluice_requests_total", l,
                        sum(s, offsetof(sl__worker_stats, requests) +
                                   (size_t)p * sizeof(atomic_uint_fast64_t)));
    }
    sl__prom_family(out, "sluice_request_duration_seconds", "histogram",
                    "Time to decide and encode one request or command (a pipelined batch is timed "
                    "once and each of its answers counted at the batch's average).");
    for (int p = 0; p < SL__PROTO_COUNT; p++) {
        uint64_t counts[SL__PROM_LATENCY_BUCKETS + 1] = {0}, total = 0;
        for (unsigned i = 0; i < s->nworkers; i++) {
            for (int b = 0; b <= SL__PROM_LATENCY_BUCKETS; b++)
                counts[b] +=
                    atomic_load_explicit(&s->workers[i].stats.latency[p][b], memory_order_relaxed);
            total +=
                atomic_load_explicit(&s->workers[i].stats.latency_sum_ns[p], memory_order_relaxed);
        }
        const char *l[] = {"protocol", proto_names[p], NULL};
        sl__prom_histogram(out, "sluice_request_duration_seconds", l, counts, total);
    }
}

/* The connection layer: open, accepted, refused, paused, malformed, timed out. */
static void connection_metrics(sl__server *s, sl__buf *out) {
    sl__prom_single(out, "sluice_connections", "gauge", "Open client connections.",
                    atomic_load(&s->connections));
    sl__prom_single(out, "sluice_connections_total", "counter", "Client connections accepted.",
                    SUM(s, accepted));
    sl__prom_single(out, "sluice_connections_refused_total", "counter",
                    "Connections closed at once: max_connections reached, or no file "
                    "descriptor left.",
                    SUM(s, refused_connections));
    sl__prom_single(out, "sluice_accept_errors_total", "counter",
                    "accept() failures (such as too many open files).", SUM(s, accept_errors));
    sl__prom_single(out, "sluice_pending_output_bytes", "gauge",
                    "Answers queued on all connections, not yet taken by their clients.",
                    atomic_load(&s->pending_output));
    sl__prom_single(out, "sluice_read_pauses_total", "counter",
                    "Times a connection stopped being read because its queued answers were "
                    "over limits.max_pending_output or its share of "
                    "limits.max_pending_output_total.",
                    SUM(s, read_pauses));
    sl__prom_single(out, "sluice_protocol_errors_total", "counter",
                    "Malformed or oversized requests answered with an error and closed.",
                    SUM(s, protocol_errors));
    sl__prom_single(out, "sluice_timeouts_total", "counter",
                    "Connections closed for idleness or a request or command that came too slowly, "
                    "and gRPC streams reset past their deadline.",
                    SUM(s, timeouts));
}

/* API keys refused, held answers, dropped log lines and reloads. */
static void process_metrics(sl__server *s, sl__buf *out) {
    sl__prom_family(out, "sluice_api_key_refused_total", "counter",
                    "GET /v1/auth requests with an unknown API key, or none where one is "
                    "required (401, or 403 when a limit without a key refused them first).");
    const char *luk[] = {"reason", "unknown_key", NULL}, *lmk[] = {"reason", "missing_key", NULL};
    sl__prom_sample(out, "sluice_api_key_refused_total", luk, SUM(s, unknown_keys));
    sl__prom_sample(out, "sluice_api_key_refused_total", lmk, SUM(s, missing_keys));
    held_metrics(s, out);
    sl__prom_single(out, "sluice_log_lines_dropped_total", "counter",
                    "Lines a client can cause (shadow mode's would-be refusals) not written: over "
                    "SL_LOG_LIMITED_PER_SEC (10) a second in the process.",
                    sl__log_limited_dropped());
    sl__prom_single(out, "sluice_reloads_total", "counter", "Successful config reloads.",
                    atomic_load(&s->reloads));
    sl__prom_single(out, "sluice_reload_failures_total", "counter",
                    "Reloads refused (the running config was kept).",
                    atomic_load(&s->reload_failures));
}

void sl__metrics_write(sl__server *s, sl__buf *out) {
    info_metrics(s, out);
    sl__worker *self = NULL;
    for (unsigned i = 0; i < s->nworkers; i++)
        if (pthread_equal(s->workers[i].thread, pthread_self())) self = &s->workers[i];
    policy_metrics(self ? self->policies : NULL, out);
    rules_metrics(self ? self->policies : NULL, out);
    sl__metrics_leases(self ? self->policies : NULL, out);
    sl__metrics_ramp(self ? self->policies : NULL, sl_now(), out);
    sl__metrics_retry(self ? self->policies : NULL, out);
    domain_metrics(self ? self->domains : NULL, out);
    sl__engine_report es;
    sl__engine_stats(s->engine, s->nworkers, &es);
    if (es.redis) redis_metrics(&es, self ? self->policies : NULL, out);

    cell_metrics(s, out);
    request_metrics(s, out);
    connection_metrics(s, out);
    process_metrics(s, out);
}

void sl__resp_info(void *admin, sl__buf *out) {
    sl__worker *w = sl__admin_worker(admin);
    sl__server *s = w->server;
    int64_t up = (sl_now() - s->started_at) / SL_NS_PER_SEC;
    uint64_t cmds = sum(s, offsetof(sl__worker_stats, requests) +
                               SL__PROTO_RESP * sizeof(atomic_uint_fast64_t));
    sl__buf_printf(out,
                   "# Sluiced\r\ntcp_port:%u\r\nuptime_in_seconds:%lld\r\nworkers:%u\r\n"
                   "policies:%zu\r\n\r\n"
                   "# Clients\r\nconnected_clients:%u\r\n\r\n"
                   "# Stats\r\ntotal_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
                   "rejected_connections:%llu\r\n",
                   (unsigned)s->bound_port[SL__PROTO_RESP], (long long)up, s->nworkers,
                   w->policies ? sl__policy_set_count(w->policies) : (size_t)0,
                   atomic_load(&s->connections), (unsigned long long)SUM(s, accepted),
                   (unsigned long long)cmds, (unsigned long long)SUM(s, refused_connections));
}
