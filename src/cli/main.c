/* main.c: the `sluice` command line: dispatches subcommands (`sim
 * race|herd|aimd|fair|adaptive`, `fetch`, `top`, `check-config`), prints
 * help, and turns misuse into a clear message and exit code 2. Each
 * subcommand parses its own options. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/fetch.h"
#include "cli/sim.h"
#include "cli/top.h"
#include "policy/config_check.h"
#include "sluice/sluice.h"

static const char main_help[] =
    "usage: sluice <command> [options]\n"
    "\n"
    "commands:\n"
    "  sim race    run every rate-limiting algorithm on the same traffic and compare\n"
    "  sim herd    many workers retrying after 429: with and without jitter\n"
    "  sim aimd    a client adapting its rate to a server's limit (AIMD)\n"
    "  sim fair    one tenant's 10,000 jobs against small tenants' one each: FIFO\n"
    "              against weighted fair queuing\n"
    "  sim adaptive  a slowing backend: a fixed rate limit against an adaptive\n"
    "              concurrency limit\n"
    "  fetch URL   send an HTTP request politely: Retry-After, backoff with jitter,\n"
    "              retry budget, AIMD (sluice fetch --help)\n"
    "  top [URL]   a live view of a sluiced: decisions per second, top rejected\n"
    "              and near-limit keys, store health (sluice top --help)\n"
    "  check-config FILE\n"
    "              check a sluiced config as sluiced --check-config does: exit 0,\n"
    "              or 1 with file:line: message for every error\n"
    "\n"
    "options:\n"
    "  -h, --help     show this help (also: sluice sim --help, sluice sim race --help)\n"
    "  --version      print the version\n"
    "\n"
    "Simulations are deterministic: the same options and --seed print the same bytes.\n"
    "See docs/sim.md.\n";

static const char sim_help[] =
    "usage: sluice sim <race|herd|aimd|fair> [options]\n"
    "\n"
    "  race    every algorithm on one trace (built-in or CSV): allowed, rejected,\n"
    "          busiest interval, queue delays; --log FILE, --svg FILE\n"
    "  herd    --workers sharing one key retry after Retry-After plus --jitter;\n"
    "          sent, served, unserved, last served; --svg FILE\n"
    "  aimd    a client's rate over time: +a per success, x b per 429; --svg FILE\n"
    "  fair    a dump of --jobs against --tenants small ones, FIFO vs weighted\n"
    "          fair queuing: the small tenants' waits; --svg FILE\n"
    "  adaptive  a backend slowing down: a fixed rate limit keeps admitting while\n"
    "          latency explodes, an adaptive concurrency limit sheds\n"
    "\n"
    "Every simulation takes --format table|csv|json and --help.\n";

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("sluice: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

static int is_help(const char *a) {
    return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "help") == 0;
}

/* argv[i] missing: `help` on stderr and *code EXIT_USAGE; argv[i] asks for
 * help: `help` on stdout and *code 0. Returns whether either was the case. */
static bool answered_help(int argc, char **argv, int i, const char *help, int *code) {
    if (argc <= i) {
        fputs(help, stderr);
        *code = EXIT_USAGE;
        return true;
    }
    if (is_help(argv[i])) {
        fputs(help, stdout);
        *code = 0;
        return true;
    }
    return false;
}

static int sim_main(int argc, char **argv) {
    /* argv[0] "sluice", argv[1] "sim" */
    int code;
    if (answered_help(argc, argv, 2, sim_help, &code)) return code;
    const char *sub = argv[2];
    if (strcmp(sub, "race") == 0) return sl__cli_sim_race_main("sluice sim race", argc, argv, 3);
    if (strcmp(sub, "herd") == 0) return sl__cli_sim_herd_main("sluice sim herd", argc, argv, 3);
    if (strcmp(sub, "aimd") == 0) return sl__cli_sim_aimd_main("sluice sim aimd", argc, argv, 3);
    if (strcmp(sub, "fair") == 0) return sl__cli_sim_fair_main("sluice sim fair", argc, argv, 3);
    if (strcmp(sub, "adaptive") == 0)
        return sl__cli_sim_adaptive_main("sluice sim adaptive", argc, argv, 3);
    return usage_error(
        "unknown simulation '%s' (race, herd, aimd, fair or adaptive; see sluice sim --help)", sub);
}

int main(int argc, char **argv) {
    int code;
    if (answered_help(argc, argv, 1, main_help, &code)) return code;
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0) {
        printf("sluice %s\n", SLUICE_VERSION);
        return 0;
    }
    if (strcmp(cmd, "sim") == 0) return sim_main(argc, argv);
    if (strcmp(cmd, "fetch") == 0) return sl__cli_fetch_main("sluice fetch", argc, argv, 2);
    if (strcmp(cmd, "top") == 0) return sl__cli_top_main("sluice top", argc, argv, 2);
    if (strcmp(cmd, "check-config") == 0) {
        /* the same check, output and exit status as sluiced --check-config */
        if (argc == 3 && is_help(argv[2])) {
            fputs("usage: sluice check-config FILE\n"
                  "Checks FILE as sluiced loads it at startup. Prints FILE: ok (N policies)\n"
                  "and exits 0, or prints every error as file:line: message and exits 1.\n"
                  "See docs/configuration.md.\n",
                  stdout);
            return 0;
        }
        if (argc != 3) return usage_error("usage: sluice check-config FILE");
        return sl__config_check_file(argv[2], stdout, stderr);
    }
    return usage_error("unknown command '%s' (see sluice --help)", cmd);
}
