/* top.h: `sluice top [URL]`, a terminal view of a sluiced's GET /v1/stats
 * (docs/operations.md, "sluice top"): decisions per second per policy, the
 * top rejected and near-limit keys, the store's health, refreshed in place
 * with ANSI escapes (no curses), or printed once with --once. */
#ifndef SLUICE_CLI_TOP_H
#define SLUICE_CLI_TOP_H

/* argv[first..argc) are the options; `cmd` names the command in messages
 * ("sluice top"). Returns the exit code: 0 (--once printed a frame, or the
 * view was stopped by SIGINT/SIGTERM), 1 when sluiced could not be read or
 * answered something that is not a /v1/stats document, 2 on a usage error. */
int sl__cli_top_main(const char *cmd, int argc, char **argv, int first);

#endif
