/* sim.c: what every simulation uses (see sim.h): the time base, the
 * deterministic tables, the option loop with the common options, and the
 * chart-then-print ending. */
#include "cli/sim.h"

#include <stdio.h>
#include <string.h>

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
    return SL_ENOMEM;
}

int sl__cli_sim_parse(const char *cmd, int argc, char **argv, int first, const sl__cli_opt *opts,
                      const char *help, sl__cli_sim_opts *common, sl__cli_sim_option_fn apply,
                      void *ctx) {
    if (common) *common = (sl__cli_sim_opts){.fmt = OUT_TABLE, .svg_path = NULL};
    sl__cli_args a;
    sl__cli_args_init(&a, cmd, argc, argv, first);
    int idx, got;
    const char *v;
    while ((got = sl__cli_args_next(&a, opts, &idx, &v)) > 0) {
        const char *name = opts[idx].name;
        int rc;
        if (strcmp(name, "help") == 0) {
            fputs(help, stdout);
            return 1;
        } else if (common && strcmp(name, "format") == 0) {
            rc = sl__cli_out_format_parse(v, &common->fmt) == 0
                     ? 0
                     : sl__cli_args_error(&a, "expected table, csv or json, got '%s'", v);
        } else if (common && strcmp(name, "svg") == 0) {
            common->svg_path = v;
            rc = 0;
        } else {
            rc = apply(&a, idx, v, ctx);
        }
        if (rc < 0) return SL_EINVAL;
    }
    return got < 0 ? SL_EINVAL : 0;
}

int sl__cli_sim_params_check(const char *cmd, sl_algorithm alg, sl_rate rate, int64_t burst) {
    sl_params p = {.algorithm = alg, .rate = rate, .burst = burst};
    int rc = sl_params_validate(&p);
    if (rc != SL_OK)
        fprintf(stderr, "%s: --rate/--burst do not suit %s: %s\n", cmd, sl_algorithm_name(alg),
                sl_strerror(rc));
    return rc;
}

int sl__cli_sim_show_result(const char *cmd, const sl__cli_sim_opts *common,
                            const sl__cli_sim_show *show) {
    char err[512];
    if (common->svg_path && show->svg(common->svg_path, &show->view, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return 1;
    }
    if (show->print(stdout, common->fmt, &show->view) < 0) {
        fprintf(stderr, "%s: out of memory\n", cmd);
        return 1;
    }
    return 0;
}
