/* metrics_lease.c: the /metrics families of concurrency limits
 * (docs/http-api.md#metrics, docs/protection.md), written by metrics.c for
 * the policy set of the worker answering. */
#include "server/admin/metrics_lease.h"

#include <stddef.h>

#include "policy/lease_set.h"
#include "policy/policy.h"
#include "server/admin/prom.h"

void sl__metrics_leases(const sl__policy_set *set, sl__buf *out) {
    const sl__lease_set *ls = set ? sl__policy_set_leases(set) : NULL;
    size_t n = sl__lease_set_count(ls);
    if (!n) return;
    static const struct {
        const char *name, *help;
        size_t off;
    } counters[] = {
        {"sluice_lease_acquired_total", "Leases of concurrency limits granted.",
         offsetof(sl__lease_limit, acquired)},
        {"sluice_lease_refused_total", "Acquires refused: the key held the limit.",
         offsetof(sl__lease_limit, refused)},
        {"sluice_lease_released_total", "Leases given back before they expired.",
         offsetof(sl__lease_limit, released)},
        {"sluice_lease_unknown_total",
         "Releases and renewals of a lease not held (never acquired, released, or expired).",
         offsetof(sl__lease_limit, unknown)},
    };
    for (size_t c = 0; c < sizeof counters / sizeof counters[0]; c++) {
        sl__prom_family(out, counters[c].name, "counter", counters[c].help);
        for (size_t i = 0; i < n; i++) {
            sl__lease_limit *l = sl__lease_set_at(ls, i);
            const char *labels[] = {"policy", l->name, NULL};
            const atomic_uint_fast64_t *v =
                (const atomic_uint_fast64_t *)(const void *)((const char *)l + counters[c].off);
            sl__prom_sample(out, counters[c].name, labels, atomic_load(v));
        }
    }
    sl__prom_family(out, "sluice_lease_limit", "gauge",
                    "The configured limit of each concurrency limit (leases per key).");
    for (size_t i = 0; i < n; i++) {
        sl__lease_limit *l = sl__lease_set_at(ls, i);
        const char *labels[] = {"policy", l->name, NULL};
        sl__prom_sample(out, "sluice_lease_limit", labels, (uint64_t)atomic_load(&l->limit));
    }
    sl__prom_family(out, "sluice_lease_keys", "gauge",
                    "Keys in the memory store's table (expired leases count until swept).");
    for (size_t i = 0; i < n; i++) {
        sl__lease_limit *l = sl__lease_set_at(ls, i);
        sl_concurrency_stats st;
        sl_concurrency_stats_get(l->conc, &st);
        const char *labels[] = {"policy", l->name, NULL};
        sl__prom_sample(out, "sluice_lease_keys", labels, st.keys);
    }
}
