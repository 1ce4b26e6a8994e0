/* fetch.c: `sluice fetch`, libsluice-client from the command line. The
 * request is described the way curl's users already know (-X, -H, -d, -o,
 * -v, -m); the politeness knobs map one to one onto sl_client_options.
 * --count N sends the request N times, at most --rate R per second (an
 * sl_limiter of burst 1), or with --aimd at a rate adapted to the host,
 * starting at R and never above --aimd-max. Bodies go to stdout (or -o FILE); -v reports every
 * attempt and wait on stderr, as the seed's example does. */
#include "cli/fetch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/error.h"
#include "sluice/client.h"
#include "sluice/sluice.h"
#include "util/file_read.h"

#define MAX_HEADERS    64
#define MAX_DATA_BYTES ((size_t)64 << 20)
#define MAX_COUNT      INT64_C(1000000000)
#define MILLI_PER_SEC  1000
#define MAX_SECONDS_MS INT64_C(1000000000000) /* 10^9 s: any deadline or wait */
#define SECONDS_TEXT   "seconds from 0.001 (at most 3 decimals)"

static const char fetch_help[] =
    "usage: sluice fetch [options] URL\n"
    "\n"
    "Sends an HTTP request politely: a 429 or 503 answer is retried after its\n"
    "Retry-After (plus up to as much again at random), or after exponential backoff\n"
    "with full jitter (0.4 s, 0.8 s, 1.6 s, ... capped by --max-wait); only requests\n"
    "that are safe to repeat are retried; retries may add at most --budget percent of\n"
    "the requests. The body goes to stdout.\n"
    "\n"
    "the request (as with curl):\n"
    "  -X, --request METHOD    method (default GET, or POST with -d)\n"
    "  -H, --header 'N: v'     add a header field (repeatable)\n"
    "  -d, --data DATA         request body, sent as is; @FILE reads FILE, @- stdin\n"
    "  -o, --output FILE       write the body to FILE instead of stdout\n"
    "  -v, --verbose           print each attempt and its wait on stderr\n"
    "  -m, --max-time S        deadline of each request, retries included (seconds)\n"
    "\n"
    "politeness:\n"
    "  --max-attempts N        attempts per request, 1 to 1000 (default 5)\n"
    "  --max-wait S            longest single wait and cap of the backoff (default 10);\n"
    "                          a Retry-After longer than this is not waited for\n"
    "  --backoff S             first backoff bound, doubling per attempt (default 0.4)\n"
    "  --budget P              retries may add at most P percent of the requests,\n"
    "                          plus a reserve of 10 (default 10); 'off': no budget\n"
    "  --retry-unsafe          also retry POST, PATCH, ... (only if repeating is harmless)\n"
    "  --aimd                  adapt the rate to the host: +0.5/s per success, x0.5 per\n"
    "                          429 or 503, from --rate R (default 1/s) up to --aimd-max,\n"
    "                          never below 1/s (or R if lower)\n"
    "  --aimd-max R            with --aimd, the ceiling of the rate (default: R of --rate,\n"
    "                          else 50)\n"
    "  --pace                  slow down before the wall, from the answers' RateLimit or\n"
    "                          X-RateLimit-* fields\n"
    "  --count N               send the request N times (default 1)\n"
    "  --rate R                at most R requests per second (R or N/P, as 2.5 or 150/m);\n"
    "                          with --aimd the starting rate\n"
    "  --seed N                seed of the jitter (default: random)\n"
    "  -h, --help              show this help\n"
    "\n"
    "Exit status: 0 when every answer was below 400, 1 when one was not (a 429 given\n"
    "up on, a 404, ...) or a transfer failed, 2 on a usage error. See docs/client.md.\n";

enum {
    F_REQUEST,
    F_HEADER,
    F_DATA,
    F_OUTPUT,
    F_VERBOSE,
    F_MAX_TIME,
    F_MAX_ATTEMPTS,
    F_MAX_WAIT,
    F_BACKOFF,
    F_BUDGET,
    F_RETRY_UNSAFE,
    F_AIMD,
    F_PACE,
    F_COUNT,
    F_RATE,
    F_AIMD_MAX,
    F_SEED,
    F_HELP
};

typedef struct fetch_opt {
    char short_name; /* 0: long only */
    sl__cli_opt o;
} fetch_opt;

static const fetch_opt fetch_opts[] = {
    [F_REQUEST] = {'X', {"request", "METHOD"}},
    [F_HEADER] = {'H', {"header", "'Name: value'"}},
    [F_DATA] = {'d', {"data", "DATA"}},
    [F_OUTPUT] = {'o', {"output", "FILE"}},
    [F_VERBOSE] = {'v', {"verbose", NULL}},
    [F_MAX_TIME] = {'m', {"max-time", "S"}},
    [F_MAX_ATTEMPTS] = {0, {"max-attempts", "N"}},
    [F_MAX_WAIT] = {0, {"max-wait", "S"}},
    [F_BACKOFF] = {0, {"backoff", "S"}},
    [F_BUDGET] = {0, {"budget", "P"}},
    [F_RETRY_UNSAFE] = {0, {"retry-unsafe", NULL}},
    [F_AIMD] = {0, {"aimd", NULL}},
    [F_PACE] = {0, {"pace", NULL}},
    [F_COUNT] = {0, {"count", "N"}},
    [F_RATE] = {0, {"rate", "R"}},
    [F_AIMD_MAX] = {0, {"aimd-max", "R"}},
    [F_SEED] = {0, {"seed", "N"}},
    [F_HELP] = {'h', {"help", NULL}},
    {0, {NULL, NULL}},
};

/* Reads the next option or positional argument. Returns 1 (option: *idx,
 * *value), 2 (positional: *value), 0 at the end, SL_EINVAL after printing an
 * error.
 * Short options take their value attached (-XPOST) or as the next argument;
 * "--" ends the options. */
static int next_arg(sl__cli_args *a, bool *only_positional, int *idx, const char **value) {
    a->name[0] = '\0';
    if (a->i >= a->argc) return 0;
    const char *arg = a->argv[a->i++];
    if (*only_positional || arg[0] != '-' || arg[1] == '\0') {
        *value = arg;
        return 2;
    }
    if (strcmp(arg, "--") == 0) {
        *only_positional = true;
        return next_arg(a, only_positional, idx, value);
    }
    const char *attached = NULL;
    int k = -1;
    if (arg[1] == '-') {
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        for (int j = 0; fetch_opts[j].o.name; j++)
            if (strlen(fetch_opts[j].o.name) == nlen &&
                strncmp(fetch_opts[j].o.name, name, nlen) == 0)
                k = j;
        if (k < 0) return sl__cli_args_error(a, "unknown option '%.60s'", arg);
        snprintf(a->name, sizeof a->name, "%s", fetch_opts[k].o.name);
        if (eq) {
            if (!fetch_opts[k].o.metavar) return sl__cli_args_error(a, "takes no value");
            attached = eq + 1;
        }
    } else {
        for (int j = 0; fetch_opts[j].o.name; j++)
            if (fetch_opts[j].short_name == arg[1]) k = j;
        if (k < 0) return sl__cli_args_error(a, "unknown option '%.60s'", arg);
        snprintf(a->name, sizeof a->name, "%s", fetch_opts[k].o.name);
        if (arg[2]) {
            if (!fetch_opts[k].o.metavar)
                return sl__cli_args_error(a, "unknown option '%.60s' (one flag per argument)", arg);
            attached = arg + 2;
        }
    }
    *idx = k;
    *value = NULL;
    if (fetch_opts[k].o.metavar) {
        if (attached) {
            *value = attached;
        } else {
            if (a->i >= a->argc)
                return sl__cli_args_error(a, "needs a value (%s)", fetch_opts[k].o.metavar);
            *value = a->argv[a->i++];
        }
    }
    return 1;
}

/* Reads all of a file (or stdin for "-") into a new buffer (refused from
 * MAX_DATA_BYTES bytes on). Returns 0, or SL_EINVAL (cannot open, too large,
 * read error) or SL_ENOMEM with "-d @path: reason" in err. */
static int read_all(const char *path, char **out, size_t *len, char *err, size_t errlen) {
    int err_no = 0, rc;
    if (strcmp(path, "-") == 0)
        rc = sl__file_read_fd(STDIN_FILENO, MAX_DATA_BYTES - 1, 0, out, len, &err_no);
    else
        rc = sl__file_read(path, MAX_DATA_BYTES - 1, 0, out, len, &err_no);
    switch (rc) {
    case SL__FILE_OK:
        return 0;
    case SL__FILE_EOPEN:
        return sl__cli_fail(SL_EINVAL, err, errlen, "-d @%s: %s", path, strerror(err_no));
    case SL__FILE_ETOOLARGE:
        return sl__cli_fail(SL_EINVAL, err, errlen, "-d @%s: larger than 64 MiB", path);
    case SL__FILE_EIO:
        return sl__cli_fail(SL_EINVAL, err, errlen, "-d @%s: read error", path);
    default:
        return sl__cli_fail(SL_ENOMEM, err, errlen, "-d @%s: out of memory", path);
    }
}

/* "1.484s": ns rounded to the millisecond, as the seed prints waits. */
static char *fmt_wait(int64_t ns, char *buf, size_t size) {
    int64_t ms = (ns + SL_NS_PER_MS / 2) / SL_NS_PER_MS;
    snprintf(buf, size, "%lld.%03llds", (long long)(ms / 1000), (long long)(ms % 1000));
    return buf;
}

/* A rate in milli-requests per second: "2.5/s". */
static char *fmt_rate(int64_t milli, char *buf, size_t size) {
    char n[40];
    snprintf(buf, size, "%s/s", sl__cli_fmt_seconds(milli * 1000000, 0, n, sizeof n));
    return buf;
}

typedef struct run {
    const char *cmd;
    int verbose;
    int64_t count, index;
    FILE *out;
    bool write_failed;
    int64_t max_wait;
    int max_attempts;
    const char *method;
} run;

static void prefix(const run *r) {
    if (r->count > 1) fprintf(stderr, "request %lld: ", (long long)r->index);
}

static void on_event(void *ctx, const sl_client_event *e) {
    run *r = ctx;
    char w[40], h[40], rate[48];
    switch (e->kind) {
    case SL_EVENT_PACE:
        if (!r->verbose) return;
        prefix(r);
        if (e->rate)
            fprintf(stderr, "pacing: waiting %s (host rate %s)\n", fmt_wait(e->wait, w, sizeof w),
                    fmt_rate(e->rate, rate, sizeof rate));
        else
            fprintf(stderr, "pacing: waiting %s (RateLimit)\n", fmt_wait(e->wait, w, sizeof w));
        return;
    case SL_EVENT_RETRY:
        if (!r->verbose) return;
        prefix(r);
        fprintf(stderr, "attempt %d: %d, waiting %s", e->attempt, e->status,
                fmt_wait(e->wait, w, sizeof w));
        if (e->hint >= 0)
            fprintf(stderr, " (Retry-After %ss", sl__cli_fmt_seconds(e->hint, 0, h, sizeof h));
        else
            fprintf(stderr, " (backoff");
        if (e->rate) fprintf(stderr, ", host rate now %s", fmt_rate(e->rate, rate, sizeof rate));
        fprintf(stderr, ")\n");
        return;
    case SL_EVENT_GIVE_UP:
        prefix(r);
        fprintf(stderr, "attempt %d: %d, giving up: ", e->attempt, e->status);
        switch (e->stop) {
        case SL_STOP_ATTEMPTS:
            fprintf(stderr, "no attempts left (--max-attempts %d)\n", r->max_attempts);
            break;
        case SL_STOP_UNSAFE:
            fprintf(stderr,
                    "%s is not safe to repeat (send an Idempotency-Key header, or use "
                    "--retry-unsafe)\n",
                    r->method);
            break;
        case SL_STOP_BUDGET:
            fprintf(stderr, "the retry budget is spent (--budget)\n");
            break;
        case SL_STOP_DEADLINE:
            fprintf(stderr, "the next attempt would start after the deadline (--max-time)\n");
            break;
        case SL_STOP_MAX_WAIT:
            fprintf(stderr, "Retry-After %ss is longer than --max-wait %ss\n",
                    sl__cli_fmt_seconds(e->hint, 0, h, sizeof h),
                    sl__cli_fmt_seconds(r->max_wait, 0, w, sizeof w));
            break;
        case SL_STOP_DONE:
            fprintf(stderr, "done\n");
            break;
        }
        return;
    }
}

static int on_body(void *ctx, const void *data, size_t len) {
    run *r = ctx;
    if (fwrite(data, 1, len, r->out) != len) {
        r->write_failed = true;
        return -1; /* sl_client_request.on_body: nonzero aborts the transfer */
    }
    return 0;
}

/* --rate: "2.5" requests per second (at most 3 decimals) or a rate "150/m". */
static int parse_rate(const sl__cli_args *a, const char *v, sl_rate *out) {
    if (strchr(v, '/')) return sl__cli_args_rate(a, v, out);
    int64_t milli;
    if (sl__cli_args_decimal(a, v, 3, 1, 1000000000,
                             "requests per second from 0.001 (or N/P such as 150/m)", &milli) < 0)
        return SL_EINVAL;
    *out = (sl_rate){milli, MILLI_PER_SEC * SL_NS_PER_SEC};
    return 0;
}

/* The rate as milli-requests per second, rounded down; 0 when below 0.001/s
 * or above 10^6/s. */
static int64_t rate_milli(sl_rate r) {
    __int128 m = (__int128)r.limit * MILLI_PER_SEC * SL_NS_PER_SEC / r.period;
    return m > INT64_C(1000000000) ? 0 : (int64_t)m;
}

typedef struct tally {
    int status[16];
    int64_t n[16];
    int kinds;
    int64_t other;
} tally;

static void tally_add(tally *t, int status) {
    for (int k = 0; k < t->kinds; k++)
        if (t->status[k] == status) {
            t->n[k]++;
            return;
        }
    if (t->kinds < 16) {
        t->status[t->kinds] = status;
        t->n[t->kinds++] = 1;
    } else {
        t->other++;
    }
}

/* What the command line asked for: the request, the client's options, and
 * how often to send it. */
typedef struct fetch_args {
    sl_client_options o;
    const char *url, *method, *output, *data;
    const char *headers[MAX_HEADERS + 1];
    size_t nheaders;
    int verbose;
    int64_t count;
    sl_rate rate, aimd_max;
    bool has_rate, has_aimd_max;
    uint64_t seed;
} fetch_args;

/* --budget: a percentage ("10", "10%", "2.5") or "off". */
static int parse_budget(const sl__cli_args *a, const char *v, sl_client_options *o) {
    if (strcmp(v, "off") == 0) {
        o->flags |= SL_CLIENT_NO_BUDGET;
        return 0;
    }
    size_t n = strlen(v);
    char pct[32];
    if (n > 0 && n < sizeof pct && v[n - 1] == '%') n--; /* "10%" */
    snprintf(pct, sizeof pct, "%.*s", (int)n, v);
    int rc = sl__cli_args_decimal(a, pct, 4, 0, 1000000, "a percentage from 0 to 100, or off",
                                  &o->budget_ppm);
    o->flags &= ~SL_CLIENT_NO_BUDGET;
    return rc;
}

/* The options of the request itself (curl's). Returns 0, SL_EINVAL after
 * printing an error, or 1 when idx is not one of them. */
static int request_option(sl__cli_args *a, fetch_args *f, int idx, const char *v) {
    switch (idx) {
    case F_REQUEST:
        /* sl__cli_args_error returns -1, so every option with a value has v */
        // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
        if (!*v || strpbrk(v, " \t\r\n:/"))
            return sl__cli_args_error(a, "not a method: '%.60s'", v);
        f->method = v;
        return 0;
    case F_HEADER:
        /* as above, v is set */
        // NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker)
        if (!strchr(v, ':') && !strchr(v, ';'))
            return sl__cli_args_error(a, "expected 'Name: value', got '%.60s'", v);
        if (f->nheaders == MAX_HEADERS)
            return sl__cli_args_error(a, "at most %d header fields", MAX_HEADERS);
        f->headers[f->nheaders++] = v;
        return 0;
    case F_DATA:
        f->data = v;
        return 0;
    case F_OUTPUT:
        f->output = v;
        return 0;
    case F_VERBOSE:
        f->verbose = 1;
        return 0;
    case F_MAX_TIME:
        return sl__cli_args_seconds(a, v, 1, MAX_SECONDS_MS, SECONDS_TEXT, &f->o.timeout);
    default:
        return 1;
    }
}

/* The politeness options (everything but the request's and --help).
 * Returns 0 or SL_EINVAL after printing an error. */
static int politeness_option(sl__cli_args *a, fetch_args *f, int idx, const char *v) {
    int rc = 0;
    switch (idx) {
    case F_MAX_ATTEMPTS:
        return sl__cli_args_int32(a, v, 1, 1000, &f->o.max_attempts);
    case F_MAX_WAIT:
        return sl__cli_args_seconds(a, v, 1, MAX_SECONDS_MS, SECONDS_TEXT, &f->o.max_wait);
    case F_BACKOFF:
        return sl__cli_args_seconds(a, v, 1, MAX_SECONDS_MS, SECONDS_TEXT, &f->o.backoff_base);
    case F_BUDGET:
        return parse_budget(a, v, &f->o);
    case F_RETRY_UNSAFE:
        f->o.flags |= SL_CLIENT_RETRY_UNSAFE;
        return 0;
    case F_AIMD:
        f->o.flags |= SL_CLIENT_AIMD;
        return 0;
    case F_PACE:
        f->o.flags |= SL_CLIENT_PACE;
        return 0;
    case F_COUNT:
        return sl__cli_args_int(a, v, 1, MAX_COUNT, &f->count);
    case F_RATE:
        rc = parse_rate(a, v, &f->rate);
        f->has_rate = rc == 0;
        return rc;
    case F_AIMD_MAX:
        rc = parse_rate(a, v, &f->aimd_max);
        f->has_aimd_max = rc == 0;
        return rc;
    case F_SEED:
        return sl__cli_args_u64(a, v, &f->seed);
    default:
        return 0;
    }
}

/* With --aimd: --rate is where AIMD starts, --aimd-max its ceiling (default:
 * the start with --rate, else the library's 50/s). Returns 0 or SL_EINVAL after
 * printing an error. */
static int resolve_aimd(sl__cli_args *a, fetch_args *f) {
    sl_client_options *o = &f->o;
    int64_t start = o->aimd.start, cap = o->aimd.cap;
    if (f->has_rate && (start = rate_milli(f->rate)) <= 0) {
        snprintf(a->name, sizeof a->name, "rate");
        return sl__cli_args_error(a, "with --aimd, from 0.001 to 1000000 per second");
    }
    if (f->has_aimd_max && (cap = rate_milli(f->aimd_max)) <= 0) {
        snprintf(a->name, sizeof a->name, "aimd-max");
        return sl__cli_args_error(a, "from 0.001 to 1000000 per second");
    }
    if (!f->has_aimd_max && f->has_rate) cap = start;
    if (!f->has_rate && start > cap) start = cap; /* a ceiling below the default start */
    if (start > cap) {
        snprintf(a->name, sizeof a->name, f->has_aimd_max ? "aimd-max" : "rate");
        return sl__cli_args_error(a, "the ceiling --aimd-max must be at least the start --rate");
    }
    o->aimd.start = start;
    o->aimd.cap = cap;
    if (o->aimd.floor > start) o->aimd.floor = start;
    return 0;
}

/* Reads argv into *f. Returns 0, 1 after printing the help (exit 0), or
 * SL_EINVAL after printing a usage error. */
static int parse_args(const char *cmd, int argc, char **argv, int first, fetch_args *f) {
    *f = (fetch_args){.count = 1};
    sl_client_options_init(&f->o);
    bool only_positional = false;
    sl__cli_args a;
    sl__cli_args_init(&a, cmd, argc, argv, first);
    int idx = 0, got;
    const char *v = NULL;
    while ((got = next_arg(&a, &only_positional, &idx, &v)) > 0) {
        if (got == 2) {
            if (f->url) {
                a.name[0] = '\0';
                return sl__cli_args_error(&a, "one URL only (got '%.60s' after '%.60s')", v,
                                          f->url);
            }
            f->url = v;
            continue;
        }
        if (idx == F_HELP) return fputs(fetch_help, stdout), 1;
        int rc = request_option(&a, f, idx, v);
        if (rc == 1) rc = politeness_option(&a, f, idx, v);
        if (rc < 0) return rc;
    }
    if (got < 0) return got;
    a.name[0] = '\0';
    if (!f->url) return sl__cli_args_error(&a, "a URL is required");
    if (f->o.backoff_base > f->o.max_wait) f->o.backoff_base = f->o.max_wait;
    if (f->has_aimd_max && !(f->o.flags & SL_CLIENT_AIMD)) {
        snprintf(a.name, sizeof a.name, "aimd-max");
        return sl__cli_args_error(&a, "needs --aimd");
    }
    if ((f->o.flags & SL_CLIENT_AIMD) && resolve_aimd(&a, f) < 0) return SL_EINVAL;
    f->o.seed = f->seed;
    return 0;
}

/* The URL with curl's habit (no scheme: http) in *full_url (NULL when the
 * URL has one), and the body of -d (DATA, or @FILE / @- read whole) in a new
 * *body. Returns 0, or read_all's SL_EINVAL / SL_ENOMEM with the message in
 * err (both freed). */
static int prepare_request(fetch_args *f, char **full_url, char **body, size_t *body_len, char *err,
                           size_t errlen) {
    *full_url = NULL;
    *body = NULL;
    *body_len = 0;
    if (!strstr(f->url, "://")) {
        size_t n = strlen(f->url) + 8;
        if (!(*full_url = malloc(n))) return sl__cli_fail(SL_ENOMEM, err, errlen, "out of memory");
        snprintf(*full_url, n, "http://%s", f->url);
        f->url = *full_url;
    }
    if (f->data) {
        if (f->data[0] == '@') {
            int rc = read_all(f->data + 1, body, body_len, err, errlen);
            if (rc < 0) {
                free(*full_url);
                return rc;
            }
        } else {
            *body_len = strlen(f->data);
            if (!(*body = malloc(*body_len + 1))) {
                free(*full_url);
                return sl__cli_fail(SL_ENOMEM, err, errlen, "out of memory");
            }
            memcpy(*body, f->data, *body_len + 1);
        }
    }
    f->headers[f->nheaders] = NULL;
    return 0;
}

/* -v: one answer's final line. */
static void print_final(const run *r, sl_client *client, const char *url,
                        const sl_response_info *info) {
    char e[40], rt[48];
    prefix(r);
    fprintf(stderr, "final: %d after %s", info->status, fmt_wait(info->elapsed, e, sizeof e));
    if (info->attempts > 1) fprintf(stderr, " (%d attempts)", info->attempts);
    int64_t hr = sl_client_host_rate(client, url);
    if (hr) fprintf(stderr, ", host rate %s", fmt_rate(hr, rt, sizeof rt));
    fputc('\n', stderr);
}

/* -v with --count: the summary of the run. */
static void print_summary(sl_client *client, const tally *t, int64_t started, int64_t errors) {
    sl_client_stats s;
    sl_client_stats_get(client, &s);
    char el[40];
    fprintf(stderr, "sent %llu requests in %s: ", (unsigned long long)s.requests,
            fmt_wait(sl_now_monotonic() - started, el, sizeof el));
    for (int k = 0; k < t->kinds; k++)
        fprintf(stderr, "%s%lld x %d", k ? ", " : "", (long long)t->n[k], t->status[k]);
    if (t->other) fprintf(stderr, ", %lld other", (long long)t->other);
    if (errors) fprintf(stderr, "%s%lld failed", t->kinds ? ", " : "", (long long)errors);
    fprintf(stderr, "; %llu attempt%s, %llu retr%s", (unsigned long long)s.attempts,
            s.attempts == 1 ? "" : "s", (unsigned long long)s.retries,
            s.retries == 1 ? "y" : "ies");
    if (s.budget_refused)
        fprintf(stderr, ", %llu refused by the budget", (unsigned long long)s.budget_refused);
    fputc('\n', stderr);
}

/* Sends the request f->count times (paced by `pacer` if not NULL); stops at
 * the first transfer that fails. Returns the exit code: 0, or 1 when an
 * answer was 400 or more, a transfer failed, or the body could not be
 * written. */
static int send_all(run *r, const fetch_args *f, sl_client *client, sl_limiter *pacer,
                    const sl_client_request *req) {
    int exit_code = 0;
    tally t = {.kinds = 0};
    int64_t started = sl_now_monotonic(), errors = 0;
    for (r->index = 1; r->index <= f->count; r->index++) {
        if (pacer) sl_limiter_wait(pacer, 1, SL_NO_DEADLINE, NULL);
        sl_response *resp;
        int rc = sl_client_do(client, req, &resp);
        if (rc) {
            prefix(r);
            if (r->write_failed)
                fprintf(stderr, "%s: writing the body: %s\n", r->cmd, strerror(errno));
            else
                fprintf(stderr, "%s: %s\n", r->cmd,
                        *sl_client_errmsg(client) ? sl_client_errmsg(client) : sl_strerror(rc));
            exit_code = 1;
            errors++;
            break;
        }
        sl_response_info info;
        sl_response_info_get(resp, &info);
        tally_add(&t, info.status);
        if (info.status >= 400) exit_code = 1;
        if (f->verbose) print_final(r, client, req->url, &info);
        sl_response_free(resp);
    }
    if (fflush(r->out) != 0 && !r->write_failed) {
        fprintf(stderr, "%s: writing the body: %s\n", r->cmd, strerror(errno));
        exit_code = 1;
    }
    if (f->verbose && f->count > 1) print_summary(client, &t, started, errors);
    return exit_code;
}

/* Creates the client (and the pacer of --rate without --aimd) and sends.
 * Returns the exit code. */
static int fetch_run(const char *cmd, fetch_args *f, FILE *out, const char *body, size_t body_len) {
    run r = {.cmd = cmd,
             .verbose = f->verbose,
             .count = f->count,
             .out = out,
             .max_wait = f->o.max_wait,
             .max_attempts = f->o.max_attempts,
             .method = f->method ? f->method : (f->data ? "POST" : "GET")};
    f->o.on_event = on_event;
    f->o.event_ctx = &r;
    int exit_code = 0;
    sl_client *client = NULL;
    sl_limiter *pacer = NULL;
    int rc = sl_client_create(&f->o, &client);
    if (rc) {
        fprintf(stderr, "%s: %s\n", cmd, sl_strerror(rc));
        exit_code = rc == SL_EINVAL || rc == SL_ERATE ? EXIT_USAGE : 1;
        goto out;
    }
    if (f->has_rate && !(f->o.flags & SL_CLIENT_AIMD)) {
        rc = sl_limiter_create(f->rate, 1, 0, sl_now_monotonic(), &pacer);
        if (rc) {
            fprintf(stderr, "%s: --rate: %s\n", cmd, sl_strerror(rc));
            exit_code = EXIT_USAGE;
            goto out;
        }
    }
    sl_client_request req = {
        .method = f->method,
        .url = f->url,
        .headers = f->nheaders ? f->headers : NULL,
        .body = body,
        .body_len = body_len,
        .on_body = on_body,
        .body_ctx = &r,
    };
    exit_code = send_all(&r, f, client, pacer, &req);
out:
    sl_limiter_destroy(pacer);
    sl_client_destroy(client);
    return exit_code;
}

int sl__cli_fetch_main(const char *cmd, int argc, char **argv, int first) {
    fetch_args f;
    int rc = parse_args(cmd, argc, argv, first, &f);
    if (rc != 0) return rc > 0 ? 0 : EXIT_USAGE;
    char *full_url, *body;
    size_t body_len;
    char err[512];
    if (prepare_request(&f, &full_url, &body, &body_len, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return 1;
    }
    FILE *out = stdout;
    if (f.output && strcmp(f.output, "-") != 0 && !(out = fopen(f.output, "wb"))) {
        fprintf(stderr, "%s: -o %s: %s\n", cmd, f.output, strerror(errno));
        free(body);
        free(full_url);
        return 1;
    }
    int exit_code = fetch_run(cmd, &f, out, body, body_len);
    if (out != stdout) fclose(out);
    free(body);
    free(full_url);
    return exit_code;
}
