/* metrics_ramp.c: the /metrics families of ramp-up after recovery
 * (docs/protection.md#ramp-up-after-recovery): each ramped policy's factor
 * now, and the ramp's restarts by reason (policy/ramp.h). */
#include "server/admin/metrics_ramp.h"

#include "policy/policy.h"
#include "policy/ramp.h"
#include "server/admin/prom.h"

void sl__metrics_ramp(const struct sl__policy_set *set, int64_t now, sl__buf *out) {
    size_t n = set ? sl__policy_set_count(set) : 0;
    if (!sl__policy_set_ramped(set)) return;
    sl__prom_family(out, "sluice_ramp_factor", "gauge",
                    "Share of its limit (burst and rate) a policy with ramp_up allows now: "
                    "from its from to 1 over its duration.");
    int64_t start = sl__ramp_started();
    for (size_t i = 0; i < n; i++) {
        const sl__policy *p = sl__policy_set_at(set, i);
        if (!p->lim.ramp) continue;
        const char *labels[] = {"policy", p->cfg.name, NULL};
        int64_t f = sl_ramp_factor(p->lim.ramp, start, now);
        sl__prom_sample_f(out, "sluice_ramp_factor", labels, (double)f / (double)SL_RAMP_ONE);
    }
    sl__prom_family(out, "sluice_ramp_restarts_total", "counter",
                    "Times ramp_up started: at server start, at the store's recovery after an "
                    "outage, by POST /v1/ramp.");
    for (int r = 0; r < SL__RAMP_REASONS; r++) {
        const char *labels[] = {"reason", sl__ramp_reason_name((sl__ramp_reason)r), NULL};
        sl__prom_sample(out, "sluice_ramp_restarts_total", labels,
                        sl__ramp_restarts((sl__ramp_reason)r));
    }
}
