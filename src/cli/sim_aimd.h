/* sim_aimd.h: a client adapting its sending rate with AIMD (seed section
 * 10) against a server's limit: +increase per success, times decrease per
 * 429, between floor and cap. The client paces itself with an sl_limiter
 * (burst 1) whose rate it changes with sl_limiter_set_rate; the server is
 * an sl_table. Rates are exact: milli-requests per second, sl_rate{mr, 1000 s}. */
#ifndef SLUICE_CLI_SIM_AIMD_H
#define SLUICE_CLI_SIM_AIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/sluice.h"

#define AIMD_MAX_REQUESTS 10000000 /* requests one run may send */

typedef struct sl__cli_aimd_config {
    int64_t start, increase, floor, cap; /* milli-requests per second */
    int64_t decrease_ppm;                /* the factor on a 429, in millionths (500000 = x0.5) */
    sl_algorithm alg;                    /* the server's limit */
    sl_rate rate;
    int64_t burst;
    int64_t duration; /* ns */
} sl__cli_aimd_config;

typedef struct sl__cli_aimd_point {
    int64_t t;    /* ns: when the request was sent */
    int64_t rate; /* the client's rate after this answer (milli-requests per second) */
    bool ok;      /* served (false: 429) */
} sl__cli_aimd_point;

typedef struct sl__cli_aimd_result {
    sl__cli_aimd_point *pts; /* one per request, in time order */
    size_t n;
    int64_t served, rejected;
} sl__cli_aimd_result;

/* One AIMD step: the rate after a success (got_429 false) or a 429. */
int64_t sl__cli_aimd_step(const sl__cli_aimd_config *cfg, int64_t rate, bool got_429);

/* Runs the client against the server for cfg->duration. Returns 0, or a
 * negative SL_E* code with a message in err: the library's (the server's
 * table, the client's limiter), SL_ETOOMANY (more than AIMD_MAX_REQUESTS
 * requests), SL_ENOMEM. Free with sl__cli_aimd_result_free (nothing to free
 * on failure). */
int sl__cli_aimd_run(const sl__cli_aimd_config *cfg, sl__cli_aimd_result *out, char *err,
                     size_t errlen);
void sl__cli_aimd_result_free(sl__cli_aimd_result *r);

#endif
