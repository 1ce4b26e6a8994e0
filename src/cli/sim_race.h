/* sim_race.h: the algorithm race (seed section 05): every algorithm decides
 * the same trace with the same rate and burst; what each let through, and
 * the busiest interval of one period the server saw. The engine is separate
 * from the command so tests can check the seed's narrative on it. */
#ifndef SLUICE_CLI_SIM_RACE_H
#define SLUICE_CLI_SIM_RACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/trace.h"
#include "sluice/sluice.h"

typedef struct sl__cli_race_config {
    sl_rate rate;  /* windows: rate.limit per rate.period; buckets: the refill rate */
    int64_t burst; /* buckets (token_bucket, gcra, leaky_queue) only */
    sl_algorithm algs[6];
    int nalgs;
} sl__cli_race_config;

typedef struct sl__cli_race_result {
    sl_algorithm alg;
    int64_t allowed, rejected; /* requests */
    /* Most cost units (requests, with cost 1) that reached the server in any
     * interval [s, s + period): arrivals of allowed requests, or release
     * times (arrival + delay) for leaky_queue. busiest_at is that s, the
     * earliest one if several tie (ns from the trace's start). */
    int64_t busiest, busiest_at;
    int64_t busiest_key; /* the same, counting one key at a time: the most for any key */
    int64_t max_delay;   /* leaky_queue: the longest delay (ns); 0 for the others */
    bool *ok;            /* per request, in trace order: allowed */
    int64_t *delay;      /* per request: delay before release (ns), 0 unless leaky_queue */
} sl__cli_race_result;

/* Runs the race: results[i] for cfg->algs[i] (results must hold cfg->nalgs).
 * Keys are independent limiters (one table per algorithm holding all the
 * trace's keys). Returns 0, or a negative SL_E* code with a message in err:
 * the library's (parameters that do not suit an algorithm, a failed check),
 * SL_ENOMEM (also when a table's memory cap forgot live states). On success
 * free with sl__cli_race_results_free. */
int sl__cli_race_run(const sl__cli_trace *t, const sl__cli_race_config *cfg,
                     sl__cli_race_result *results, char *err, size_t errlen);
void sl__cli_race_results_free(sl__cli_race_result *results, int n);

/* The largest total weight of events in any half-open interval of length
 * `period`, exactly. times must be sorted ascending. *start (may be NULL)
 * gets the earliest interval start reaching it (an event time; 0 if n is 0). */
int64_t sl__cli_busiest_interval(const int64_t *times, const int64_t *weights, size_t n,
                                 int64_t period, int64_t *start);

#endif
