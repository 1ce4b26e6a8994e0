/* sim.h: what the simulations (race, herd, aimd, fair) share: the entry
 * points main.c dispatches to, the time base that aligns the library's
 * windows with the simulation's t = 0, and deterministic tables. */
#ifndef SLUICE_CLI_SIM_H
#define SLUICE_CLI_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "cli/args.h"
#include "cli/output.h"
#include "sluice/sluice.h"

/* Entry points: argv[first..argc) are the subcommand's options; `cmd` names
 * it in messages ("sluice sim race"). Return the process exit code: 0, 1
 * (runtime error, e.g. a bad trace file), 2 (usage error). */
int sl__cli_sim_race_main(const char *cmd, int argc, char **argv, int first);
int sl__cli_sim_herd_main(const char *cmd, int argc, char **argv, int first);
int sl__cli_sim_aimd_main(const char *cmd, int argc, char **argv, int first);
int sl__cli_sim_fair_main(const char *cmd, int argc, char **argv, int first);
int sl__cli_sim_adaptive_main(const char *cmd, int argc, char **argv,
                              int first); /* sim_adaptive.c */

/* The absolute time (ns) passed to libsluice for simulation time 0: a
 * multiple of `period`, so that window k of the library is exactly the
 * simulation's [k*P, (k+1)*P), and far enough from both ends of the
 * library's time domain: min(1,000,000, (SL_TIME_MAX - span) / period)
 * periods. `span` is the largest simulation time that will be passed. */
int64_t sl__cli_sim_time_base(int64_t period, int64_t span);

/* Creates a table for `params` whose decisions do not depend on anything but
 * its inputs: one shard, a fixed hash seed, a generous memory cap (checked
 * with sl__cli_sim_table_check_evictions after the run). Returns 0 or an SL_E* code
 * (message in err). */
int sl__cli_sim_table_create(const sl_params *params, sl_table **out, char *err, size_t errlen);

/* Returns 0 when the table never had to forget a live state (so every
 * decision is what an unbounded table would have made), else SL_ENOMEM
 * (its memory cap was too small) with a message in err. */
int sl__cli_sim_table_check_evictions(sl_table *t, char *err, size_t errlen);

/* The options the simulations read the same way: --format FMT (table, csv or
 * json; OUT_TABLE when not given) and --svg FILE (NULL when not given). */
typedef struct sl__cli_sim_opts {
    sl__cli_out_format fmt;
    const char *svg_path;
} sl__cli_sim_opts;

/* A simulation's own options: opts[idx] was given with value v (NULL for a
 * flag). Returns 0, or SL_EINVAL after printing an error (sl__cli_args_error). */
typedef int (*sl__cli_sim_option_fn)(sl__cli_args *a, int idx, const char *v, void *ctx);

/* Reads argv[first..argc) against opts (NULL-name-terminated, with a
 * "help" entry). "help" prints `help` to stdout; with common not NULL, the
 * entries named "format" and "svg" fill *common (which is set to its
 * defaults first); every other option goes to apply(a, idx, v, ctx).
 * Returns 0, 1 after printing the help (exit code 0), or SL_EINVAL after a
 * usage error was printed to stderr (exit code EXIT_USAGE). */
int sl__cli_sim_parse(const char *cmd, int argc, char **argv, int first, const sl__cli_opt *opts,
                      const char *help, sl__cli_sim_opts *common, sl__cli_sim_option_fn apply,
                      void *ctx);

/* Checks that rate and burst suit alg (sl_params_validate); if not, prints
 * "cmd: --rate/--burst do not suit ALG: why" to stderr. Returns SL_OK or the
 * SL_E* code of sl_params_validate. */
int sl__cli_sim_params_check(const char *cmd, sl_algorithm alg, sl_rate rate, int64_t burst);

/* What a simulation shows: its config and result (of the simulation's own
 * types), the run to compare with (sim herd's run without the ramp; NULL
 * for the others) and the limit as text (sl_rate_format). */
typedef struct sl__cli_sim_view {
    const void *cfg, *result, *base;
    const char *rate_text;
} sl__cli_sim_view;

/* How a simulation shows its result: svg writes the chart to path (0, or a
 * negative SL_E* code with the message in err), print writes the result in
 * fmt to fp (0, or SL_ENOMEM when a cell could not be stored). */
typedef struct sl__cli_sim_show {
    int (*svg)(const char *path, const sl__cli_sim_view *v, char *err, size_t errlen);
    int (*print)(FILE *fp, sl__cli_out_format fmt, const sl__cli_sim_view *v);
    sl__cli_sim_view view;
} sl__cli_sim_show;

/* Writes the chart when common->svg_path is set, then, if that worked, prints
 * the result to stdout in common->fmt. Errors go to stderr as "cmd: message"
 * ("cmd: out of memory" for print). Returns the exit code: 0 or 1. */
int sl__cli_sim_show_result(const char *cmd, const sl__cli_sim_opts *common,
                            const sl__cli_sim_show *show);

#endif
