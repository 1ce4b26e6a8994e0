/* sim_herd.h: the retry herd (seed section 09): many workers share one key;
 * each 429 says Retry-After; a worker waits the hint plus a uniform random
 * extra up to the jitter, and tries again until it is served or time is up.
 * Discrete events in integer nanoseconds, one random draw per retry. With a
 * ramp (--ramp-up), t = 0 is the store's recovery: the limit starts at
 * --ramp-from of its burst and rate and grows to all of it (sluice/ramp.h),
 * and the run is shown next to the same herd without the ramp. */
#ifndef SLUICE_CLI_SIM_HERD_H
#define SLUICE_CLI_SIM_HERD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/sluice.h"

#define HERD_BIN      (100 * SL_NS_PER_MS) /* the chart's and the result's bins */
#define HERD_MAX_SENT 20000000             /* requests one run may send */

typedef struct sl__cli_herd_config {
    int64_t workers;  /* all fire at t = 0 */
    sl_algorithm alg; /* the server's limit on the shared key */
    sl_rate rate;
    int64_t burst;
    int64_t retry_after; /* ns: the hint every 429 carries */
    int64_t jitter;      /* ns: a retry waits retry_after + uniform[0, jitter] */
    int64_t duration;    /* ns: requests at t >= duration are not sent */
    uint64_t seed;
    bool start_empty; /* the key is exhausted at t = 0 (SL_START_EMPTY): every worker has
                         just been refused, as in the seed's telling */
    sl_ramp ramp;     /* ramp_up from t = 0, the recovery (sluice/ramp.h); duration 0: none */
} sl__cli_herd_config;

typedef struct sl__cli_herd_result {
    int64_t sent, served, unserved;
    int64_t retries;        /* requests after each worker's first one (sent - workers) */
    int64_t last_served_at; /* when the last worker to be served was served (its
                               request's arrival + queue delay), ns; -1 if none */
    int64_t all_served_at;  /* the same, but -1 unless every worker was served */
    size_t nbins;           /* ceil(duration / HERD_BIN) */
    int64_t *served_bin;    /* requests allowed per bin (by arrival time) */
    int64_t *rejected_bin;  /* requests refused per bin */
} sl__cli_herd_result;

/* Runs the herd. Returns 0, or a negative SL_E* code with a message in err:
 * SL_EINVAL (an algorithm --ramp-up cannot ramp), SL_ETOOMANY (more than
 * HERD_MAX_SENT requests), SL_ENOMEM, or the library's (the table). Free with
 * sl__cli_herd_result_free (nothing to free on failure). */
int sl__cli_herd_run(const sl__cli_herd_config *cfg, sl__cli_herd_result *out, char *err,
                     size_t errlen);
void sl__cli_herd_result_free(sl__cli_herd_result *r);

#endif
