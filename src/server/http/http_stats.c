/* http_stats.c: GET /v1/stats, what the dashboard (/ui/) and `sluice top`
 * show, as one JSON document (docs/http-api.md, "GET /v1/stats"): per policy
 * its configuration and decision counters, its most-rejected keys (the
 * sketch behind /v1/top) and its near-limit keys, and the store's health.
 * Counters are totals since the policy's state was made; `now_ms` (a
 * monotonic clock) lets a client turn two documents into rates. Bounded:
 * at most SL__STATS_POLICIES_MAX policies and SL__STATS_TOP_MAX keys per list,
 * each key at most SL__TOPK_KEY_MAX bytes (as /v1/top), so a document is at
 * most about 1 MiB even for keys made of control bytes (64 x 20 keys of
 * 128 bytes written as \u00XX), and a few KiB for a usual config. It shows no key /v1/top does not
 * already show. */
#include <stdatomic.h>
#include <string.h>

#include "policy/ramp.h"
#include "policy/retry_stage.h"
#include "server/http/http_ops.h"
#include "sluice/clock.h"
#include "sluice/limit.h"
#include "sluice/sluice.h"
#include "sluice/table.h"

/* The keys of one sketch: [{"key":"...","<count>":N,"error":E},...], as
 * /v1/top writes them. */
static void top_list(sl__buf *b, sl__topk *t, unsigned top, const char *count) {
    sl__topk_item items[SL__STATS_TOP_MAX];
    size_t k = t ? sl__topk_list(t, items, top) : 0;
    sl__buf_puts(b, "[");
    for (size_t i = 0; i < k; i++) {
        sl__buf_puts(b, i ? ",{\"key\":" : "{\"key\":");
        sl__http_json_string(b, items[i].key, items[i].keylen);
        sl__buf_printf(b, ",\"%s\":%llu,\"error\":%llu}", count, (unsigned long long)items[i].count,
                       (unsigned long long)items[i].error);
    }
    sl__buf_puts(b, "]");
}

static void policy_entry(sl__buf *b, sl__policy *p, bool redis, unsigned top) {
    const sl_params *pa = &p->cfg.params;
    sl__buf_puts(b, "{\"name\":");
    sl__http_json_string(b, p->cfg.name, strlen(p->cfg.name));
    sl__buf_printf(b,
                   ",\"algorithm\":\"%s\",\"rate\":\"%s\",\"limit\":%lld,\"period_ms\":%lld,"
                   "\"burst\":%lld,\"quota\":%s,\"shadow\":%s",
                   sl_algorithm_name(pa->algorithm), p->rate_text, (long long)pa->rate.limit,
                   (long long)(pa->rate.period / 1000000), (long long)pa->burst,
                   p->cfg.quota ? "true" : "false", atomic_load(&p->lim.shadow) ? "true" : "false");
    sl__buf_printf(b,
                   ",\"decisions\":{\"allowed\":%llu,\"limited\":%llu,\"shadow_limited\":%llu,"
                   "\"shed\":%llu}",
                   (unsigned long long)atomic_load(&p->lim.allowed),
                   (unsigned long long)atomic_load(&p->lim.limited),
                   (unsigned long long)atomic_load(&p->lim.shadow_limited),
                   (unsigned long long)(atomic_load(&p->shed[SL_PRIORITY_CRITICAL]) +
                                        atomic_load(&p->shed[SL_PRIORITY_DEFAULT]) +
                                        atomic_load(&p->shed[SL_PRIORITY_SHEDDABLE])));
    if (p->lim.ramp) { /* ramp_up: the share it allows now, 0.1 to 1 (policy/ramp.h) */
        int64_t f = sl_ramp_factor(p->lim.ramp, sl__ramp_started(), sl_now());
        if (f >= SL_RAMP_ONE)
            sl__buf_puts(b, ",\"ramp_factor\":1");
        else
            sl__buf_printf(b, ",\"ramp_factor\":0.%06lld", (long long)f);
    }
    if (p->retry) { /* retry_budget: (policy/retry_stage.h) */
        sl__retry_counts rc = sl__retry_limit_counts(p->retry);
        sl__buf_printf(b, ",\"retry_budget\":{\"first\":%llu,\"allowed\":%llu,\"refused\":%llu}",
                       (unsigned long long)rc.firsts, (unsigned long long)rc.allowed,
                       (unsigned long long)rc.refused);
    }
    sl_table *t = atomic_load(&p->lim.store.table);
    if (t) {
        sl_table_stats st;
        sl_table_stats_get(t, &st);
        sl__buf_printf(b, ",\"keys\":%llu", (unsigned long long)st.keys);
    }
    if (redis)
        sl__buf_printf(b, ",\"fallback\":{\"open\":%llu,\"closed\":%llu,\"local\":%llu}",
                       (unsigned long long)atomic_load(&p->lim.store.from[SL__FROM_OPEN]),
                       (unsigned long long)atomic_load(&p->lim.store.from[SL__FROM_CLOSED]),
                       (unsigned long long)atomic_load(&p->lim.store.from[SL__FROM_LOCAL]));
    sl__buf_puts(b, ",\"top_rejected\":");
    top_list(b, p->lim.top, top, "rejected");
    sl__buf_puts(b, ",\"top_near\":"); /* the keys allowed near their limit (/v1/top?by=near) */
    top_list(b, p->lim.near, top, "near");
    sl__buf_puts(b, "}");
}

static void store_entry(sl__buf *b, const sl__engine_report *e) {
    sl__engine_report es = *e;
    if (!es.redis) {
        sl__buf_puts(b, "\"store\":{\"type\":\"memory\",\"up\":true,\"breakers_open\":0}");
        return;
    }
    sl__buf_printf(b,
                   "\"store\":{\"type\":\"redis\",\"up\":%s,\"breakers_open\":%d,\"batched\":%s,"
                   "\"calls\":{\"ok\":%llu,\"error\":%llu,\"timeout\":%llu,\"open\":%llu},"
                   "\"deny_cache_hits\":%llu}",
                   es.up ? "true" : "false", es.breakers_open > 0 ? es.breakers_open : 0,
                   es.batched ? "true" : "false", (unsigned long long)es.ok,
                   (unsigned long long)es.errors, (unsigned long long)es.timeouts,
                   (unsigned long long)es.rejected_open, (unsigned long long)es.deny_hits);
}

bool sl__http_stats_write(const sl__ops_view *v, unsigned top, sl__buf *b) {
    int64_t mono = sl_now_monotonic();
    int64_t up = (sl_now() - v->started_at) / SL_NS_PER_SEC;
    sl__buf_printf(b,
                   "{\"version\":\"%s\",\"now_ms\":%lld,\"uptime_seconds\":%lld,\"workers\":%u,"
                   "\"draining\":%s,",
                   SLUICE_VERSION, (long long)(mono / 1000000), (long long)(up > 0 ? up : 0),
                   v->workers, v->draining ? "true" : "false");
    store_entry(b, &v->store);
    size_t n = v->policies ? sl__policy_set_count(v->policies) : 0;
    size_t shown = n < SL__STATS_POLICIES_MAX ? n : SL__STATS_POLICIES_MAX;
    sl__buf_printf(b, ",\"policies_total\":%zu,\"policies\":[", n);
    for (size_t i = 0; i < shown; i++) {
        if (i) sl__buf_puts(b, ",");
        policy_entry(b, sl__policy_set_at(v->policies, i), v->store.redis, top);
    }
    sl__buf_puts(b, "]}");
    return !b->failed;
}
