/* trace.c: built-in traces and CSV trace files (format in trace.h). The
 * parser is bounded everywhere (file size, line length, requests, keys, key
 * length, time, cost) and exact: times are read into integer nanoseconds. */
#include "cli/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/error.h"
#include "client/prng.h"
#include "util/file_read.h"

/* A file can hold at most this many bytes: TRACE_MAX_REQUESTS lines of a
 * typical length, plus comments. */
#define TRACE_MAX_FILE (INT64_C(64) << 20)

#define KEY_SLOTS 32768 /* open-addressing index of keys: > 2 * TRACE_MAX_KEYS */

typedef struct builder {
    sl__cli_trace *t;
    size_t cap;
    uint32_t *slots; /* key index + 1, 0 = empty */
} builder;

static uint64_t hash_key(const char *s, size_t len) {
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * UINT64_C(0x100000001b3);
    return h;
}

static int builder_init(builder *b, sl__cli_trace *t) {
    memset(t, 0, sizeof *t);
    b->t = t;
    b->cap = 0;
    b->slots = calloc(KEY_SLOTS, sizeof *b->slots);
    return b->slots ? 0 : SL_ENOMEM;
}

static void builder_done(builder *b) {
    free(b->slots);
    b->slots = NULL;
}

/* Returns the key's index (adding it), SL_ETOOMANY when there are too many
 * keys, SL_ENOMEM when out of memory. */
static int64_t builder_key(builder *b, const char *key, size_t len) {
    sl__cli_trace *t = b->t;
    size_t i = hash_key(key, len) & (KEY_SLOTS - 1);
    for (; b->slots[i]; i = (i + 1) & (KEY_SLOTS - 1)) {
        const char *k = t->keys[b->slots[i] - 1];
        if (strlen(k) == len && memcmp(k, key, len) == 0) return b->slots[i] - 1;
    }
    if (t->nkeys >= TRACE_MAX_KEYS) return SL_ETOOMANY;
    if (t->nkeys % 64 == 0) {
        char **nk = realloc(t->keys, (t->nkeys + 64) * sizeof *nk);
        if (!nk) return SL_ENOMEM;
        t->keys = nk;
    }
    char *copy = malloc(len + 1);
    if (!copy) return SL_ENOMEM;
    memcpy(copy, key, len);
    copy[len] = '\0';
    t->keys[t->nkeys] = copy;
    b->slots[i] = (uint32_t)(t->nkeys + 1);
    return (int64_t)t->nkeys++;
}

/* Returns 0, SL_ETOOMANY when there are too many requests, SL_ENOMEM when
 * out of memory. */
static int builder_add(builder *b, int64_t t_ns, uint32_t key, int64_t cost, uint32_t line,
                       const char *text) {
    sl__cli_trace *t = b->t;
    if (t->n >= TRACE_MAX_REQUESTS) return SL_ETOOMANY;
    if (t->n == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 256;
        sl__cli_trace_req *nr = realloc(t->reqs, ncap * sizeof *nr);
        if (!nr) return SL_ENOMEM;
        t->reqs = nr;
        b->cap = ncap;
    }
    t->reqs[t->n++] =
        (sl__cli_trace_req){.t = t_ns, .cost = cost, .key = key, .line = line, .text = text};
    return 0;
}

/* Stable merge sort by time: equal times keep their order. */
static void sort_by_time(sl__cli_trace_req *a, sl__cli_trace_req *tmp, size_t n) {
    if (n < 2) return;
    size_t h = n / 2;
    sort_by_time(a, tmp, h);
    sort_by_time(a + h, tmp, n - h);
    if (a[h - 1].t <= a[h].t) return; /* already in order */
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = a[j].t < a[i].t ? a[j++] : a[i++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

/* Returns 0 or SL_ENOMEM. */
static int finish_sort(sl__cli_trace *t) {
    if (t->n < 2) return 0;
    sl__cli_trace_req *tmp = malloc(t->n * sizeof *tmp);
    if (!tmp) return SL_ENOMEM;
    sort_by_time(t->reqs, tmp, t->n);
    free(tmp);
    return 0;
}

void sl__cli_trace_free(sl__cli_trace *t) {
    if (!t) return;
    for (size_t i = 0; i < t->nkeys; i++) free(t->keys[i]);
    free(t->keys);
    free(t->reqs);
    free(t->arena);
    memset(t, 0, sizeof *t);
}

/* ---- built-in traces ------------------------------------------------------ */

static const char *const builtin_names[] = {"bursty", "edge", "steady", "poisson"};

sl__cli_trace_builtin sl__cli_trace_builtin_find(const char *name) {
    for (int i = 0; i < TRACE_NONE; i++)
        if (strcmp(name, builtin_names[i]) == 0) return (sl__cli_trace_builtin)i;
    return TRACE_NONE;
}

/* A run of `count` requests from start_ms, step_ms apart. */
typedef struct segment {
    int start_ms, count, step_ms;
} segment;

/* The seed's bursty mix at 5/s, 63 requests in 10 s: a page load of 6 at
 * 0.1 s; three requests in the last 0.3 s before the 2 s edge, then a burst
 * of 14 after it (the sliding counter assumes the three were spread over the
 * whole second, forgets them too fast and lets 7 through in one second);
 * quiet spells; a burst of 12 straddling the 5 s edge (the fixed window's
 * boundary burst: 9 in one second); a burst of 12 at 7.5 s; a trickle. */
static const segment bursty[] = {
    {100, 6, 60}, {800, 1, 0},  {1750, 3, 100}, {2000, 13, 50}, {2700, 1, 0}, {3000, 1, 0},
    {3500, 1, 0}, {4100, 1, 0}, {4700, 12, 60}, {5800, 1, 0},   {6000, 1, 0}, {6300, 1, 0},
    {6600, 1, 0}, {7000, 1, 0}, {7500, 12, 40}, {8200, 1, 0},   {8500, 1, 0}, {8900, 1, 0},
    {9200, 1, 0}, {9400, 1, 0}, {9600, 1, 0},   {9800, 1, 0},
};

/* Two bursts of 10 around the 5 s window edge (seed section 02). */
static const segment edge[] = {{4800, 10, 20}, {5000, 10, 20}};

/* 8 per second for 10 s. */
static const segment steady[] = {{0, 80, 125}};

/* Returns 0, or SL_ENOMEM / SL_ETOOMANY (builder_add). */
static int add_segments(builder *b, const segment *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < s[i].count; k++) {
            int64_t ms = s[i].start_ms + (int64_t)k * s[i].step_ms;
            int rc = builder_add(b, ms * 1000000, 0, 1, 0, NULL);
            if (rc < 0) return rc;
        }
    return 0;
}

int sl__cli_trace_builtin_make(sl__cli_trace_builtin which, int64_t mean_rate_milli, uint64_t seed,
                               sl__cli_trace *out, char *err, size_t errlen) {
    builder b;
    if (builder_init(&b, out) < 0) return sl__cli_fail(SL_ENOMEM, err, errlen, "out of memory");
    snprintf(out->name, sizeof out->name, "%s", builtin_names[which]);
    int64_t key = builder_key(&b, "k", 1);
    int rc = key < 0 ? (int)key : 0;
    switch (which) {
    case TRACE_BURSTY:
        rc = rc ? rc : add_segments(&b, bursty, sizeof bursty / sizeof *bursty);
        break;
    case TRACE_EDGE:
        rc = rc ? rc : add_segments(&b, edge, sizeof edge / sizeof *edge);
        break;
    case TRACE_STEADY:
        rc = rc ? rc : add_segments(&b, steady, sizeof steady / sizeof *steady);
        break;
    case TRACE_POISSON: {
        /* Arrivals at ms resolution: each ms of the 10 s holds a request with
         * probability mean_rate / 1000 (a Bernoulli process, the integer
         * stand-in for Poisson arrivals). */
        sl__prng r;
        sl__prng_seed(&r, seed);
        for (int64_t ms = 0; ms < 10000 && rc == 0; ms++)
            if ((int64_t)sl__prng_upto(&r, 999999) < mean_rate_milli)
                rc = builder_add(&b, ms * 1000000, 0, 1, 0, NULL);
        break;
    }
    default:
        rc = SL_EINVAL;
        break;
    }
    builder_done(&b);
    if (rc == 0) rc = finish_sort(out);
    if (rc < 0) {
        sl__cli_trace_free(out);
        return sl__cli_fail(rc, err, errlen, "out of memory");
    }
    return 0;
}

/* ---- CSV ------------------------------------------------------------------ */

static bool is_blank(char c) {
    return c == ' ' || c == '\t';
}

/* Trims blanks at both ends of [*s, *s + *len). */
static void trim(const char **s, size_t *len) {
    while (*len && is_blank(**s)) (*s)++, (*len)--;
    while (*len && is_blank((*s)[*len - 1])) (*len)--;
}

static bool field_is(const char *s, size_t len, const char *word) {
    return strlen(word) == len && memcmp(s, word, len) == 0;
}

/* A key: visible ASCII except ',' and '"', so logs need no quoting. */
static const char *check_key(const char *s, size_t len) {
    if (len > TRACE_MAX_KEY_LEN) return "key longer than 256 bytes";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e || c == '"')
            return "key may only hold visible ASCII characters other than '\"' and ','";
    }
    return NULL;
}

/* Splits s into at most three comma-separated fields, each trimmed.
 * Returns the number of fields, or 4 when there are more than three. */
static int split_fields(const char *s, size_t slen, const char *f[3], size_t fl[3]) {
    int nf = 0;
    const char *p = s;
    size_t rest = slen;
    for (;;) {
        const char *comma = memchr(p, ',', rest);
        size_t l = comma ? (size_t)(comma - p) : rest;
        if (nf == 3) return 4;
        f[nf] = p;
        fl[nf] = l;
        trim(&f[nf], &fl[nf]);
        nf++;
        if (!comma) return nf;
        p = comma + 1;
        rest -= l + 1;
    }
}

/* One data line's fields (time[,key[,cost]]) into a request of b. Returns
 * 0, or SL_EPARSE (a bad field), SL_ETOOMANY (keys, requests) or SL_ENOMEM
 * with "name:line: message" in err. */
static int parse_request(builder *b, const char *name, uint32_t lineno, const char *f[3],
                         const size_t fl[3], int nf, char *err, size_t errlen) {
    const char *why;
    int64_t t_ns, cost = 1;
    if (sl__cli_parse_decimal(f[0], fl[0], 9, TRACE_MAX_TIME, &t_ns, &why) < 0) {
        if (strcmp(why, "too large") == 0) why = "beyond 1000000 s";
        return sl__cli_fail(SL_EPARSE, err, errlen,
                            "%s:%u: time '%.*s': %s (expected seconds such as 0.250)", name, lineno,
                            (int)(fl[0] > 40 ? 40 : fl[0]), f[0], why);
    }
    const char *key = "k";
    size_t klen = 1;
    if (nf >= 2 && fl[1] > 0) {
        key = f[1];
        klen = fl[1];
        const char *kwhy = check_key(key, klen);
        if (kwhy) return sl__cli_fail(SL_EPARSE, err, errlen, "%s:%u: %s", name, lineno, kwhy);
    }
    if (nf == 3 && sl__cli_parse_decimal(f[2], fl[2], 0, TRACE_MAX_COST, &cost, &why) < 0) {
        if (strcmp(why, "too large") == 0) why = "above 1000000000";
        return sl__cli_fail(SL_EPARSE, err, errlen,
                            "%s:%u: cost '%.*s': %s (expected a whole number)", name, lineno,
                            (int)(fl[2] > 40 ? 40 : fl[2]), f[2], why);
    }
    int64_t k = builder_key(b, key, klen);
    if (k == SL_ETOOMANY)
        return sl__cli_fail(SL_ETOOMANY, err, errlen, "%s:%u: more than %d distinct keys", name,
                            lineno, TRACE_MAX_KEYS);
    if (k < 0) return sl__cli_fail(SL_ENOMEM, err, errlen, "%s: out of memory", name);
    /* the time text stays in the arena: terminate it in place */
    ((char *)f[0])[fl[0]] = '\0';
    int ra = builder_add(b, t_ns, (uint32_t)k, cost, lineno, f[0]);
    if (ra == SL_ETOOMANY)
        return sl__cli_fail(SL_ETOOMANY, err, errlen, "%s:%u: more than %d requests", name, lineno,
                            TRACE_MAX_REQUESTS);
    if (ra < 0) return sl__cli_fail(SL_ENOMEM, err, errlen, "%s: out of memory", name);
    return 0;
}

/* One line (without its newline) of the file: a comment, a blank line, the
 * header (if no data came before: *seen_data) or a request. Returns 0, or
 * a negative SL_E* code (SL_EPARSE for a line that is not time[,key[,cost]],
 * or parse_request's) with the message in err. */
static int parse_line(builder *b, const char *name, uint32_t lineno, const char *line, size_t llen,
                      bool *seen_data, char *err, size_t errlen) {
    if (llen && line[llen - 1] == '\r') llen--;
    if (llen > TRACE_MAX_LINE)
        return sl__cli_fail(SL_EPARSE, err, errlen, "%s:%u: line longer than %d bytes", name,
                            lineno, TRACE_MAX_LINE);
    if (memchr(line, '\0', llen))
        return sl__cli_fail(SL_EPARSE, err, errlen, "%s:%u: NUL byte in line", name, lineno);
    const char *s = line;
    size_t slen = llen;
    trim(&s, &slen);
    if (slen == 0 || s[0] == '#') return 0;
    const char *f[3];
    size_t fl[3];
    int nf = split_fields(s, slen, f, fl);
    if (nf > 3)
        return sl__cli_fail(SL_EPARSE, err, errlen,
                            "%s:%u: too many fields (expected time[,key[,cost]])", name, lineno);
    if (!*seen_data && field_is(f[0], fl[0], "time") && (nf < 2 || field_is(f[1], fl[1], "key")) &&
        (nf < 3 || field_is(f[2], fl[2], "cost"))) {
        *seen_data = true; /* the header */
        return 0;
    }
    *seen_data = true;
    return parse_request(b, name, lineno, f, fl, nf, err, errlen);
}

int sl__cli_trace_parse(const char *name, const char *text, size_t len, sl__cli_trace *out,
                        char *err, size_t errlen) {
    builder b;
    if (builder_init(&b, out) < 0)
        return sl__cli_fail(SL_ENOMEM, err, errlen, "%s: out of memory", name);
    const char *base = strrchr(name, '/');
    snprintf(out->name, sizeof out->name, "%s", base ? base + 1 : name);
    out->arena = malloc(len + 1);
    if (!out->arena) {
        builder_done(&b);
        sl__cli_trace_free(out);
        return sl__cli_fail(SL_ENOMEM, err, errlen, "%s: out of memory", name);
    }
    memcpy(out->arena, text, len);
    out->arena[len] = '\0';

    int rc = 0;
    bool seen_data = false;
    uint32_t lineno = 0;
    size_t pos = 0;
    while (pos < len && rc == 0) {
        lineno++;
        const char *line = out->arena + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t llen = nl ? (size_t)(nl - line) : len - pos;
        pos += llen + (nl ? 1 : 0);
        rc = parse_line(&b, name, lineno, line, llen, &seen_data, err, errlen);
    }
    builder_done(&b);
    if (rc == 0 && out->n == 0)
        rc = sl__cli_fail(SL_EINVAL, err, errlen, "%s: no requests in the trace", name);
    if (rc == 0 && finish_sort(out) < 0)
        rc = sl__cli_fail(SL_ENOMEM, err, errlen, "%s: out of memory", name);
    if (rc < 0) sl__cli_trace_free(out);
    return rc;
}

int sl__cli_trace_load_file(const char *path, sl__cli_trace *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    char *buf;
    size_t len;
    int err_no = 0;
    /* a trace is refused from TRACE_MAX_FILE bytes on */
    int rc = sl__file_read(path, (size_t)TRACE_MAX_FILE - 1, 0, &buf, &len, &err_no);
    switch (rc) {
    case SL__FILE_OK:
        break;
    case SL__FILE_EOPEN:
        return sl__cli_fail(SL_EINVAL, err, errlen, "%s: cannot open: %s", path, strerror(err_no));
    case SL__FILE_ETOOLARGE:
        return sl__cli_fail(SL_EINVAL, err, errlen, "%s: larger than %lld MiB", path,
                            (long long)(TRACE_MAX_FILE >> 20));
    case SL__FILE_EIO:
        return sl__cli_fail(SL_EINVAL, err, errlen, "%s: read error: %s", path, strerror(err_no));
    default:
        return sl__cli_fail(SL_ENOMEM, err, errlen, "%s: out of memory", path);
    }
    rc = sl__cli_trace_parse(path, buf, len, out, err, errlen);
    free(buf);
    return rc;
}

const char *sl__cli_trace_time_text(const sl__cli_trace_req *r, char *buf, size_t size) {
    if (r->text) return r->text;
    return sl__cli_fmt_seconds(r->t, 3, buf, size);
}
