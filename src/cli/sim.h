/* sim.h: what the simulations (race, herd, aimd, fair) share: the entry
 * points main.c dispatches to, the time base that aligns the library's
 * windows with the simulation's t = 0, and deterministic tables. */
#ifndef SLUICE_CLI_SIM_H
#define SLUICE_CLI_SIM_H

#include <stddef.h>
#include <stdint.h>

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
 * decision is what an unbounded table would have made), else -1 with a
 * message in err. */
int sl__cli_sim_table_check_evictions(sl_table *t, char *err, size_t errlen);

#endif
