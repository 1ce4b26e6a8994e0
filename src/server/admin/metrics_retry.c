/* metrics_retry.c: /metrics for retry budgets (metrics_retry.h): what each
 * policy's retry_budget: counted (policy/retry_stage.h), first attempts and
 * retries admitted or refused, and the retries a fail mode decided. */
#include "server/admin/metrics_retry.h"

#include "policy/policy.h"
#include "server/admin/prom.h"
#include "policy/retry_stage.h"

void sl__metrics_retry(const struct sl__policy_set *set, sl__buf *out) {
    size_t n = set ? sl__policy_set_count(set) : 0, with = 0;
    for (size_t i = 0; i < n; i++) with += sl__policy_set_at(set, i)->retry != NULL;
    if (!with) return;
    sl__prom_family(out, "sluice_retry_budget_total", "counter",
                    "Requests of policies with a retry_budget: first attempts counted, retries "
                    "allowed and refused (429, or 403 on /v1/auth) by the budget.");
    static const char *const outcome[] = {"first", "allowed", "refused"};
    for (size_t i = 0; i < n; i++) {
        sl__policy *p = sl__policy_set_at(set, i);
        if (!p->retry) continue;
        sl__retry_counts rc = sl__retry_limit_counts(p->retry);
        uint64_t v[] = {rc.firsts, rc.allowed, rc.refused};
        for (int k = 0; k < 3; k++) {
            const char *l[] = {"policy", p->cfg.name, "outcome", outcome[k], NULL};
            sl__prom_sample(out, "sluice_retry_budget_total", l, v[k]);
        }
    }
    sl__prom_family(out, "sluice_retry_budget_fallback_total", "counter",
                    "Retries of a retry_budget decided by a fail mode (the Redis store did not "
                    "answer), by policy and fail mode.");
    static const sl__store_from from[] = {SL__FROM_OPEN, SL__FROM_CLOSED, SL__FROM_LOCAL};
    for (size_t i = 0; i < n; i++) {
        sl__policy *p = sl__policy_set_at(set, i);
        if (!p->retry) continue;
        sl__retry_counts rc = sl__retry_limit_counts(p->retry);
        for (int k = 0; k < 3; k++) {
            const char *l[] = {"policy", p->cfg.name, "fallback", sl__store_fallback_name(from[k]),
                               NULL};
            sl__prom_sample(out, "sluice_retry_budget_fallback_total", l, rc.from[from[k]]);
        }
    }
}
