/* sim_fair.h: noisy neighbours (seed section 11): one tenant dumps a pile
 * of jobs at t = 0, small tenants send one job each at uniform random times;
 * one server of a fixed rate drains the queue, first come first served
 * (FIFO) or by weighted fair queuing (sl_fairq, deficit round robin). The
 * result is each small tenant's wait under both disciplines. Discrete
 * events in integer nanoseconds; one random draw per small tenant. */
#ifndef SLUICE_CLI_SIM_FAIR_H
#define SLUICE_CLI_SIM_FAIR_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/sluice.h"

#define FAIR_MAX_JOBS    1000000 /* the dump, at most */
#define FAIR_MAX_TENANTS 100000  /* small tenants, at most */

enum { FAIR_FIFO, FAIR_WFQ, FAIR_DISCIPLINES };

typedef struct sl__cli_fair_config {
    int64_t jobs;    /* the big tenant's dump, all at t = 0 */
    int64_t tenants; /* small tenants, one job each */
    int64_t spread;  /* ns: a small job arrives at a uniform random time in [0, spread] */
    sl_rate rate;    /* the server: rate.limit jobs every rate.period, one at a time */
    uint32_t weight_big, weight_small;
    uint64_t seed;
} sl__cli_fair_config;

/* Waits (ns from a job's arrival to the start of its service), nearest
 * rank: p50 is the ceil(n / 2)-th smallest, p99 the ceil(99 n / 100)-th. */
typedef struct sl__cli_fair_stats {
    int64_t p50, p99, max;
} sl__cli_fair_stats;

typedef struct sl__cli_fair_result {
    int64_t *arrival;                /* per small tenant (index = tenant number), ns */
    int64_t *wait[FAIR_DISCIPLINES]; /* per small tenant, ns */
    sl__cli_fair_stats small[FAIR_DISCIPLINES];
    sl__cli_fair_stats big[FAIR_DISCIPLINES]; /* all zero when jobs is 0 */
    int64_t done_at[FAIR_DISCIPLINES];        /* when the last job started service, ns */
    int64_t service;                          /* one job's service time, ns (rounded down) */
} sl__cli_fair_result;

/* Runs both disciplines on the same arrivals. Returns 0, or a negative
 * SL_E* code with a message in err: SL_EINVAL (parameters out of range),
 * SL_EOVERFLOW (a run longer than the time domain), SL_ENOMEM, or sl_fairq's
 * code. Free with sl__cli_fair_result_free (nothing to free on failure). */
int sl__cli_fair_run(const sl__cli_fair_config *cfg, sl__cli_fair_result *out, char *err,
                     size_t errlen);
void sl__cli_fair_result_free(sl__cli_fair_result *r);

/* "fifo", "wfq". */
const char *sl__cli_fair_discipline_name(int d);

#endif
