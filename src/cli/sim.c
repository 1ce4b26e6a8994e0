/* sim.c: the time base and the deterministic tables every simulation uses
 * (see sim.h). */
#include "cli/sim.h"

#include <stdio.h>

#define SIM_MAX_MEMORY ((size_t)256 << 20)

int64_t sl__cli_sim_time_base(int64_t period, int64_t span) {
    int64_t k = (SL_TIME_MAX - span) / period;
    if (k > 1000000) k = 1000000;
    if (k < 0) k = 0;
    return k * period;
}

int sl__cli_sim_table_create(const sl_params *params, sl_table **out, char *err, size_t errlen) {
    sl_table_options o = {
        .params = *params,
        .max_memory = SIM_MAX_MEMORY,
        .shards = 1,
        .seed = UINT64_C(0x5eed),
    };
    int rc = sl_table_create(&o, out);
    if (rc != SL_OK)
        snprintf(err, errlen, "%s: %s", sl_algorithm_name(params->algorithm), sl_strerror(rc));
    return rc;
}

int sl__cli_sim_table_check_evictions(sl_table *t, char *err, size_t errlen) {
    sl_table_stats st;
    sl_table_stats_get(t, &st);
    if (st.evicted_live == 0) return 0;
    snprintf(err, errlen,
             "%s: the trace's keys need more than %zu MiB of limiter state (%llu states had to be "
             "forgotten early); use fewer keys or a smaller limit",
             sl_algorithm_name(sl_table_params(t)->algorithm), SIM_MAX_MEMORY >> 20,
             (unsigned long long)st.evicted_live);
    return -1;
}
