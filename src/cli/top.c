/* top.c: `sluice top` (top.h). Reads URL/v1/stats?top=N with the polite
 * client (libsluice-client, one attempt, a 10 s deadline), keeps the
 * previous document and prints per policy the decisions per second between
 * the two (their now_ms is sluiced's monotonic clock), the totals, and the
 * keys of top_rejected and top_near. The interactive view redraws the whole
 * frame at the top of the screen every --interval; --once prints one frame
 * (after two reads --interval apart, or one read with --interval 0: rates
 * then show as "-") and exits. Key names come from clients: every byte that
 * a terminal could take as a control (C0, DEL, C1 in UTF-8) is written as
 * an escape, never as itself. */
#include "cli/top.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "sluice/client.h"
#include "sluice/error.h"

#define KEY_COLUMNS 40
#define URL_MAX     2048

static const char top_help[] =
    "usage: sluice top [URL] [--once] [--interval DURATION] [--top N]\n"
    "\n"
    "A terminal view of a sluiced's GET /v1/stats: decisions per second per\n"
    "policy (allowed, limited, shadow-limited, shed), the totals, the keys\n"
    "refused most and the keys nearest their limit, the store's health.\n"
    "\n"
    "  URL                  sluiced's HTTP listener (default http://127.0.0.1:8080)\n"
    "  --once               print one frame without escapes and exit (for scripts)\n"
    "  --interval DURATION  between reads: 500ms, 2s, or 0 with --once (one read,\n"
    "                       no rates); default 1s\n"
    "  --top N              keys per list, 1 to 20 (default 5)\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit 0, 1 when sluiced cannot be read, 2 on a usage error. See docs/operations.md.\n";

static volatile sig_atomic_t stop_asked;

static void on_signal(int sig) {
    (void)sig;
    stop_asked = 1;
}

/* "500ms", "2s", "1" (seconds) or "0" into ms; false when malformed or above an hour. */
static bool parse_interval(const char *s, int64_t *ms) {
    int64_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9') return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (*p - '0');
        if (v > 3600000) return false;
    }
    if (strcmp(p, "ms") == 0)
        *ms = v;
    else if (strcmp(p, "s") == 0 || *p == '\0')
        *ms = v * 1000;
    else
        return false;
    return *ms <= 3600000;
}

/* Sleeps ms unless a signal asks to stop. */
static void nap(int64_t ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (!stop_asked && nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* One read of /v1/stats: the parsed document, or NULL with a message on stderr. */
static cJSON *fetch(const char *cmd, sl_client *c, const char *url) {
    sl_response *r = NULL;
    int rc = sl_client_get(c, url, &r);
    if (rc != SL_OK) {
        fprintf(stderr, "%s: %s: %s\n", cmd, url,
                *sl_client_errmsg(c) ? sl_client_errmsg(c) : sl_strerror(rc));
        return NULL;
    }
    size_t len;
    const char *body = sl_response_body(r, &len);
    int status = sl_response_status(r);
    cJSON *doc = status == 200 ? cJSON_ParseWithLength(body, len) : NULL;
    if (status != 200)
        fprintf(stderr, "%s: %s: HTTP %d (is this sluiced 0.1 or later?)\n", cmd, url, status);
    else if (!cJSON_IsObject(doc) || !cJSON_IsArray(cJSON_GetObjectItem(doc, "policies")) ||
             !cJSON_IsNumber(cJSON_GetObjectItem(doc, "now_ms"))) {
        fprintf(stderr, "%s: %s: not a /v1/stats document\n", cmd, url);
        cJSON_Delete(doc);
        doc = NULL;
    }
    sl_response_free(r);
    return doc;
}

/* ---- the frame ---------------------------------------------------------------- */

typedef struct frame {
    char *data;
    size_t len, cap;
} frame;

__attribute__((format(printf, 2, 3))) static void out(frame *f, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n =
            vsnprintf(f->data ? f->data + f->len : NULL, f->data ? f->cap - f->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (f->data && (size_t)n < f->cap - f->len) {
            f->len += (size_t)n;
            return;
        }
        size_t cap = (f->cap ? f->cap * 2 : 4096) + (size_t)n;
        char *p = realloc(f->data, cap);
        if (!p) return;
        f->data = p;
        f->cap = cap;
    }
}

static uint64_t num(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* A key as the terminal may show it: C0, DEL and C1 (U+0080..U+009F, which
 * some terminals obey as controls) and backslash escaped; at most
 * KEY_COLUMNS bytes of output, "..." when cut. */
static void key_text(frame *f, const char *k) {
    char buf[KEY_COLUMNS + 8];
    size_t n = 0;
    const unsigned char *s = (const unsigned char *)k;
    for (; *s && n < KEY_COLUMNS; s++) {
        char e[8] = {0};
        if (*s < 0x20 || *s == 0x7f)
            snprintf(e, sizeof e, "\\x%02x", *s);
        else if (*s == '\\')
            snprintf(e, sizeof e, "\\\\");
        else if (*s == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)
            snprintf(e, sizeof e, "\\u%04x", *++s);
        else
            e[0] = (char)*s;
        size_t el = strlen(e);
        if (n + el > KEY_COLUMNS) break;
        memcpy(buf + n, e, el);
        n += el;
    }
    buf[n] = '\0';
    out(f, "%-*s%s", KEY_COLUMNS, buf, *s ? "..." : "   ");
}

/* Decisions per second of counter `kind` between prev and cur, as "12.3", or "-". */
static void rate_text(char *buf, size_t size, const cJSON *cur, const cJSON *prev, int64_t dt,
                      const char *kind) {
    const cJSON *cd = cJSON_GetObjectItemCaseSensitive(cur, "decisions");
    const cJSON *pd = prev ? cJSON_GetObjectItemCaseSensitive(prev, "decisions") : NULL;
    if (!pd || dt <= 0) {
        snprintf(buf, size, "-");
        return;
    }
    uint64_t a = num(cd, kind), b = num(pd, kind);
    uint64_t tenths = a > b ? (a - b) * 10000 / (uint64_t)dt : 0; /* a reload restarts counters */
    snprintf(buf, size, "%llu.%llu", (unsigned long long)(tenths / 10),
             (unsigned long long)(tenths % 10));
}

static const cJSON *find_policy(const cJSON *doc, const char *name) {
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "policies")) {
        if (strcmp(str(p, "name"), name) == 0) return p;
    }
    return NULL;
}

static void keys_section(frame *f, const cJSON *doc, const char *field, const char *title) {
    out(f, "\n%s\n%-24s %-*s   %12s\n", title, "POLICY", KEY_COLUMNS, "KEY", "COUNT");
    int shown = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "policies")) {
        const cJSON *k;
        cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(p, field)) {
            /* the count: "rejected", or the first number of a near-limit entry */
            uint64_t count = num(k, "rejected");
            const cJSON *m;
            if (!cJSON_GetObjectItemCaseSensitive(k, "rejected")) cJSON_ArrayForEach(m, k) {
                    if (cJSON_IsNumber(m)) {
                        count = num(k, m->string);
                        break;
                    }
                }
            out(f, "%-24s ", str(p, "name"));
            key_text(f, str(k, "key"));
            out(f, "%12llu\n", (unsigned long long)count);
            shown++;
        }
    }
    if (!shown) out(f, "(none)\n");
}

static void render(frame *f, const char *base, const cJSON *doc, const cJSON *prev) {
    const cJSON *store = cJSON_GetObjectItemCaseSensitive(doc, "store");
    bool up = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(store, "up"));
    int64_t dt = prev ? (int64_t)num(doc, "now_ms") - (int64_t)num(prev, "now_ms") : 0;
    out(f, "sluiced %s at %s   up %llu s   store %s: %s, %llu breakers open%s\n",
        str(doc, "version"), base, (unsigned long long)num(doc, "uptime_seconds"),
        str(store, "type"), up ? "up" : "DOWN", (unsigned long long)num(store, "breakers_open"),
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "draining")) ? "   DRAINING" : "");
    out(f, "\n%-24s %-10s %9s %9s %9s %9s %12s %12s %12s %8s\n", "POLICY", "RATE", "ALLOWED/S",
        "LIMITED/S", "SHADOW/S", "SHED/S", "ALLOWED", "LIMITED", "SHADOW", "SHED");
    static const char *const kinds[] = {"allowed", "limited", "shadow_limited", "shed"};
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "policies")) {
        const cJSON *before = prev ? find_policy(prev, str(p, "name")) : NULL;
        char r[4][24];
        for (int i = 0; i < 4; i++) rate_text(r[i], sizeof r[i], p, before, dt, kinds[i]);
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(p, "decisions");
        out(f, "%-24s %-10s %9s %9s %9s %9s %12llu %12llu %12llu %8llu\n", str(p, "name"),
            str(p, "rate"), r[0], r[1], r[2], r[3], (unsigned long long)num(d, "allowed"),
            (unsigned long long)num(d, "limited"), (unsigned long long)num(d, "shadow_limited"),
            (unsigned long long)num(d, "shed"));
    }
    uint64_t total = num(doc, "policies_total");
    int shown = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "policies"));
    if (total > (uint64_t)shown)
        out(f, "(%llu more policies not shown by /v1/stats)\n",
            (unsigned long long)(total - (uint64_t)shown));
    keys_section(f, doc, "top_rejected", "TOP REJECTED KEYS");
    keys_section(f, doc, "top_near", "KEYS NEAR THEIR LIMIT");
}

/* What the command line asked for. */
typedef struct top_args {
    const char *base; /* sluiced's URL */
    bool once;
    int64_t interval; /* ms */
    long top;
} top_args;

/* Reads argv into *t. Returns 0, 1 after printing the help (exit 0), or
 * SL_EINVAL after printing a usage error. */
static int top_parse(const char *cmd, int argc, char **argv, int first, top_args *t) {
    *t = (top_args){.base = "http://127.0.0.1:8080", .once = false, .interval = 1000, .top = 5};
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(top_help, stdout);
            return 1;
        } else if (strcmp(a, "--once") == 0) {
            t->once = true;
        } else if (strcmp(a, "--interval") == 0 && i + 1 < argc) {
            if (!parse_interval(argv[++i], &t->interval)) {
                fprintf(stderr, "%s: --interval: expected a duration such as 500ms or 2s\n", cmd);
                return SL_EINVAL;
            }
        } else if (strcmp(a, "--top") == 0 && i + 1 < argc) {
            char *end;
            t->top = strtol(argv[++i], &end, 10);
            if (*end || t->top < 1 || t->top > 20) {
                fprintf(stderr, "%s: --top: expected 1 to 20\n", cmd);
                return SL_EINVAL;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", cmd, a, cmd);
            return SL_EINVAL;
        } else {
            t->base = a;
        }
    }
    if (t->interval == 0 && !t->once) {
        fprintf(stderr, "%s: --interval 0 needs --once\n", cmd);
        return SL_EINVAL;
    }
    return 0;
}

/* Fetches and draws frames until --once's one, a failed fetch, or SIGINT /
 * SIGTERM. Returns the exit code: 0, or 1 when a fetch failed. */
static int top_loop(const char *cmd, sl_client *c, const char *url, const char *shown_base,
                    const top_args *t) {
    int rc = 0;
    cJSON *prev = fetch(cmd, c, url);
    if (!prev) rc = 1;
    frame f = {0};
    while (!rc && !stop_asked) {
        cJSON *doc = prev;
        if (!t->once || t->interval > 0) {
            nap(t->interval);
            if (stop_asked) break;
            doc = fetch(cmd, c, url);
            if (!doc) {
                rc = 1;
                break;
            }
        }
        f.len = 0;
        if (!t->once) out(&f, "\033[H\033[2J"); /* home, clear: the frame replaces the last */
        render(&f, shown_base, doc, doc == prev ? NULL : prev);
        if (f.data) fwrite(f.data, 1, f.len, stdout);
        fflush(stdout);
        if (doc != prev) cJSON_Delete(prev);
        prev = doc;
        if (t->once) break;
    }
    free(f.data);
    cJSON_Delete(prev);
    return rc;
}

int sl__cli_top_main(const char *cmd, int argc, char **argv, int first) {
    top_args t;
    int prc = top_parse(cmd, argc, argv, first, &t);
    if (prc != 0) return prc > 0 ? 0 : EXIT_USAGE;
    size_t bl = strlen(t.base);
    while (bl && t.base[bl - 1] == '/') bl--;
    if (bl == 0 || bl > URL_MAX - 32) {
        fprintf(stderr, "%s: a URL such as http://127.0.0.1:8080, please\n", cmd);
        return EXIT_USAGE;
    }
    char url[URL_MAX + 32], shown_base[URL_MAX];
    snprintf(shown_base, sizeof shown_base, "%.*s", (int)bl, t.base);
    snprintf(url, sizeof url, "%s/v1/stats?top=%ld", shown_base, t.top);

    sl_client_options o;
    sl_client_options_init(&o);
    o.max_attempts = 1;
    o.timeout = INT64_C(10000000000);
    o.max_body = 8u << 20;
    sl_client *c;
    if (sl_client_create(&o, &c) != SL_OK) {
        fprintf(stderr, "%s: cannot create an HTTP client\n", cmd);
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int rc = top_loop(cmd, c, url, shown_base, &t);
    sl_client_destroy(c);
    return rc;
}
