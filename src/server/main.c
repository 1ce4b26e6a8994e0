/* main.c: the sluiced program: arguments, --check-config, starting the
 * server on the given or the embedded default config, and the signals
 * (SIGTERM/SIGINT drain and exit 0, SIGHUP reloads), and systemd's readiness
 * notifications around them (sd_notify). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#ifdef SLUICE_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "policy/config.h"
#include "policy/config_check.h"
#include "server/server.h"
#include "sluice/sluice.h"
#include "util/log.h"

static sl__server server;

/* ---- systemd readiness (Type=notify; docs/operations.md) -------------------
 * Tells the service manager READY=1 once the listeners are bound, RELOADING=1
 * then READY=1 around a SIGHUP reload, STOPPING=1 when draining. sd_notify
 * does nothing (returns 0) when NOTIFY_SOCKET is unset, i.e. outside systemd;
 * built without libsystemd, this is a no-op. Errors are ignored: readiness
 * is advisory and the server runs either way. */
static void notify(const char *state) {
#ifdef SLUICE_HAVE_SYSTEMD
    (void)sd_notify(0, state);
#else
    (void)state;
#endif
}

static void usage(FILE *f) {
    fprintf(f, "usage: sluiced [-c FILE] [--log-level LEVEL]\n"
               "       sluiced --check-config FILE\n"
               "       sluiced --version | --help\n"
               "\n"
               "options:\n"
               "  -c FILE              run on the config in FILE (default: the embedded one)\n"
               "  --check-config FILE  check FILE and exit: 0 when valid, 1 with one\n"
               "                       file:line: message for every error\n"
               "  --log-level LEVEL    error, warn, info or debug; overrides log_level\n"
               "  --version            print the version and exit\n"
               "  -h, --help           print this help and exit\n"
               "\n"
               "Without -c, sluiced runs on its embedded default config (examples/sluice.yaml):\n"
               "memory store, HTTP on 127.0.0.1:8080, gRPC (Envoy's rate limit service) on\n"
               "127.0.0.1:8081, RESP on 127.0.0.1:6380.\n"
               "SIGHUP (or POST /v1/reload, from loopback unless admin.reload says otherwise)\n"
               "reloads the config; SIGTERM drains and exits 0.\n"
               "Docs: docs/configuration.md, docs/http-api.md, docs/resp.md, docs/envoy.md\n");
}

static void on_signal(uv_signal_t *h, int signum) {
    static bool exiting; /* from the first SIGTERM/SIGINT on, signals change nothing */
    if (exiting) return;
    if (signum == SIGHUP) {
        static sl__reload_result r; /* 2 KiB: not on the stack; this is the main thread */
        notify("RELOADING=1");
        sl__server_reload(&server, &r); /* logged either way */
        notify("READY=1");
        return;
    }
    exiting = true;
    sl__log_info("%s: draining", signum == SIGTERM ? "SIGTERM" : "SIGINT");
    notify("STOPPING=1");
    uv_stop(h->loop);
}

int main(int argc, char **argv) {
    const char *path = NULL, *level = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(argv[i], "--check-config") && i + 1 < argc) {
            return sl__config_check_file(argv[i + 1], stdout, stderr); /* as sluice check-config */
        } else if (!strcmp(argv[i], "--log-level") && i + 1 < argc) {
            level = argv[++i];
        } else if (!strcmp(argv[i], "--version")) {
            printf("sluiced %s\n", SLUICE_VERSION);
            return 0;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--check-config") ||
                   !strcmp(argv[i], "--log-level")) {
            /* the option is known; only its value is missing */
            fprintf(stderr, "sluiced: %s needs %s\n", argv[i],
                    strcmp(argv[i], "--log-level") ? "a file" : "a level");
            usage(stderr);
            return 2;
        } else {
            fprintf(stderr, "sluiced: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);

    sl__config *cfg;
    sl__config_errors errs;
    int rc = path ? sl__config_load(path, &cfg, &errs) : sl__config_load_default(&cfg, &errs);
    if (rc != 0) {
        sl__config_print_errors(&errs, stderr);
        return 1;
    }
    int lv = level ? sl__log_parse_level(level) : (int)cfg->log_level;
    if (lv < 0) {
        fprintf(stderr, "sluiced: unknown log level '%s' (error, warn, info, debug)\n", level);
        sl__config_free(cfg);
        return 2;
    }
    sl__log_set_level((sl__log_level)lv);
    sl__log_info("sluiced %s starting with %s", SLUICE_VERSION,
                 path ? path : "the embedded default config");

    uv_loop_t *loop = uv_default_loop();
    uv_signal_t sigs[3];
    int signums[3] = {SIGTERM, SIGINT, SIGHUP};
    for (int i = 0; i < 3; i++) {
        uv_signal_init(loop, &sigs[i]);
        uv_signal_start(&sigs[i], on_signal, signums[i]);
    }
    if (sl__server_start(&server, cfg, path, loop) != 0) {
        sl__log_error("could not start");
        return 1;
    }
    sl__log_info("ready");
    notify("READY=1");
    uv_run(loop, UV_RUN_DEFAULT);
    /* limits.drain_timeout of the config in force (a reload may have changed it) */
    sl__server_drain_and_stop(&server, server.config->limits.drain_timeout);
    /* A second SIGTERM (or SIGINT, SIGHUP) while we exit, a supervisor's,
     * must not kill us: the signal watchers stay open until the process
     * ends, because libuv gives a signal its default action back when its
     * last watcher closes (closing them here let a SIGTERM kill sluiced
     * between the drain and the exit: lifecycle_test's barrage). Unref'd,
     * they no longer keep the loop alive; the loop is not closed for them. */
    for (int i = 0; i < 3; i++) uv_unref((uv_handle_t *)&sigs[i]);
    uv_run(loop, UV_RUN_DEFAULT);
    sl__log_info("stopped");
    return 0;
}
