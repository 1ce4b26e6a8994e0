/* fetch.h: `sluice fetch URL`, the polite client (libsluice-client) from the
 * command line, with curl's habits for the request (-X, -H, -d, -o, -v) and
 * options for politeness (--max-attempts, --max-wait, --budget, --aimd,
 * --pace, --count N --rate R). See docs/client.md. */
#ifndef SLUICE_CLI_FETCH_H
#define SLUICE_CLI_FETCH_H

/* argv[first..argc) are the options; `cmd` names the command in messages
 * ("sluice fetch"). Returns the exit code: 0 when every answer was below
 * 400, 1 when one was not (including a 429 the client gave up on) or a
 * transfer failed, 2 on a usage error. */
int sl__cli_fetch_main(const char *cmd, int argc, char **argv, int first);

#endif
