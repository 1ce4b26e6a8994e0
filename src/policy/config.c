/* config.c: the YAML loader of the sluiced configuration (config.h), and the
 * configuration's defaults and bounds. docs/configuration.md is the user's
 * side of this file: keep them in step.
 *
 * The text is read as a stream of libyaml events and checked against the
 * schema as it goes. No document tree is built: memory is the policies plus
 * a parser whose stacks are bounded by MAX_DEPTH, and the work is linear in
 * the input, whatever the input. Every problem becomes one
 * "file:line: field: message" (the line of the offending node, 1-based) and
 * parsing goes on, so one run reports all of them; only a YAML syntax error,
 * too deep a nesting or an allocation failure stops it.
 *
 * Choices (see docs/configuration.md):
 * - Scalars are typed by this schema, not by YAML 1.1 resolution, so `off`,
 *   `no` and `on` are never booleans by accident: booleans are exactly
 *   `true` / `false`, numbers are unquoted decimal digits.
 * - A key whose value is empty or null (`policies:`) is the same as an
 *   absent key for sections; a scalar field with no value is an error.
 * - Unknown keys, duplicate keys and aliases (*ref) are errors; anchors
 *   without aliases are harmless and ignored.
 * - Keys of features that are not built yet (store.redis, domains) are
 *   checked like the others, then refused with "not supported yet": a config
 *   never silently means less than it says. */
#include "policy/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "sluice/error.h"

#define MAX_DEPTH 32 /* mappings and lists inside each other; the schema needs 4 */
#define SHOW_MAX  40 /* bytes of a user's value quoted in a message */
#define PATH_SIZE 112

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

#define NS_MS  SL_NS_PER_MS
#define NS_SEC SL_NS_PER_SEC
#define NS_DAY (86400 * SL_NS_PER_SEC)

#define DEFAULT_SOURCE "<embedded default>"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the schema ------------------------------------------------------------ */

enum { TOP_LISTEN, TOP_WORKERS, TOP_STORE, TOP_DOMAINS, TOP_POLICIES, TOP_LIMITS, TOP_LOG_LEVEL };
static const char *const top_keys[] = {"listen",   "workers", "store",    "domains",
                                       "policies", "limits",  "log_level"};

enum { LISTEN_HTTP, LISTEN_GRPC, LISTEN_RESP };
static const char *const listen_keys[] = {"http", "grpc", "resp"};

enum { STORE_TYPE, STORE_MAX_MEMORY, STORE_REDIS };
static const char *const store_keys[] = {"type", "max_memory", "redis"};

enum { REDIS_URL, REDIS_CLUSTER, REDIS_TIMEOUT, REDIS_ON_FAILURE, REDIS_INSTANCES, REDIS_SYNC };
static const char *const redis_keys[] = {
    "url", "cluster", "timeout", "on_failure", "expected_instances", "sync"};

enum {
    POL_NAME,
    POL_ALGORITHM,
    POL_RATE,
    POL_BURST,
    POL_COUNT_REJECTED,
    POL_START,
    POL_SHADOW,
    POL_ON_FAILURE,
    POL_NKEYS
};
static const char *const policy_keys[] = {"name",           "algorithm", "rate",   "burst",
                                          "count_rejected", "start",     "shadow", "on_failure"};

enum {
    LIM_HEADER,
    LIM_BODY,
    LIM_RESP_FRAME,
    LIM_CONNECTIONS,
    LIM_IDLE,
    LIM_HEADER_TIMEOUT,
};
static const char *const limits_keys[] = {"max_header_bytes", "max_body_bytes", "max_resp_frame",
                                          "max_connections",  "idle_timeout",   "header_timeout"};

static const char *const algorithm_names[] = {"fixed_window", "sliding_log", "sliding_window",
                                              "token_bucket", "gcra",        "leaky_queue"};
static const char *const store_types[] = {"memory", "redis"};
static const char *const start_names[] = {"full", "empty"};
static const char *const failure_modes[] = {"open", "closed", "local"};
static const char *const sync_modes[] = {"exact", "batched"};
static const char *const log_levels[] = {"error", "warn", "info", "debug"};

/* Where a key that is unknown in one place does belong (for the message). */
static const struct {
    const char *key;
    const char *where;
} key_homes[] = {
    {"http", "under listen"},
    {"grpc", "under listen"},
    {"resp", "under listen"},
    {"type", "under store"},
    {"max_memory", "under store"},
    {"redis", "under store"},
    {"url", "under store.redis"},
    {"cluster", "under store.redis"},
    {"timeout", "under store.redis"},
    {"expected_instances", "under store.redis"},
    {"sync", "under store.redis"},
    {"on_failure", "in a policy or under store.redis"},
    {"name", "in a policy (policies: - name: ...)"},
    {"algorithm", "in a policy (policies: - name: ...)"},
    {"rate", "in a policy (policies: - name: ...)"},
    {"burst", "in a policy (policies: - name: ...)"},
    {"count_rejected", "in a policy (policies: - name: ...)"},
    {"start", "in a policy (policies: - name: ...)"},
    {"shadow", "in a policy (policies: - name: ...)"},
    {"max_header_bytes", "under limits"},
    {"max_body_bytes", "under limits"},
    {"max_resp_frame", "under limits"},
    {"max_connections", "under limits"},
    {"idle_timeout", "under limits"},
    {"header_timeout", "under limits"},
    {"listen", "at the top level"},
    {"workers", "at the top level"},
    {"store", "at the top level"},
    {"domains", "at the top level"},
    {"policies", "at the top level"},
    {"limits", "at the top level"},
    {"log_level", "at the top level"},
};

/* ---- the parser state and error reporting ---------------------------------- */

typedef struct parser {
    yaml_parser_t yp;
    yaml_event_t ev; /* the current event, valid while have_ev */
    bool have_ev;
    bool fatal; /* stop: syntax error, nesting too deep, out of memory */
    int depth;  /* mappings and lists open at the current event */
    const char *text;
    size_t len;
    const char *source;
    sl_config_errors *errs;
    sl_config *cfg;
    size_t policies_cap;
    int listen_line[3];                   /* where each listener was set (0: default) */
    bool listen_bad[3];                   /* its value was refused: no clash check */
    int key_line;                         /* of the key whose value is being read */
    int error_line[SL_CONFIG_MAX_ERRORS]; /* of each stored message, to sort them */
} parser;

static void add_errorv(sl_config_errors *errs, const char *source, int line, const char *field,
                       const char *fmt, va_list ap) {
    size_t i = errs->n++;
    if (i >= SL_CONFIG_MAX_ERRORS) return;
    char *m = errs->msg[i];
    size_t cap = sizeof errs->msg[i];
    int k = line > 0 ? snprintf(m, cap, "%s:%d: ", source, line) : snprintf(m, cap, "%s: ", source);
    if (k < 0 || (size_t)k >= cap) return;
    if (field && *field) {
        int f = snprintf(m + k, cap - (size_t)k, "%s: ", field);
        if (f < 0 || (size_t)f >= cap - (size_t)k) return;
        k += f;
    }
    vsnprintf(m + k, cap - (size_t)k, fmt, ap);
}

__attribute__((format(printf, 4, 5))) static void
file_error(sl_config_errors *errs, const char *source, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add_errorv(errs, source, line, NULL, fmt, ap);
    va_end(ap);
}

/* One error at `line` about `field` (a path such as "policies[1].rate"). */
__attribute__((format(printf, 4, 5))) static void error_at(parser *p, int line, const char *field,
                                                           const char *fmt, ...) {
    if (p->errs->n < SL_CONFIG_MAX_ERRORS) p->error_line[p->errs->n] = line;
    va_list ap;
    va_start(ap, fmt);
    add_errorv(p->errs, p->source, line, field, fmt, ap);
    va_end(ap);
}

/* Orders the stored messages by line (stable), as a compiler would: some
 * are only found after the lines below them (a missing key, a listener
 * clash). */
static void sort_errors(parser *p) {
    size_t n = p->errs->n < SL_CONFIG_MAX_ERRORS ? p->errs->n : SL_CONFIG_MAX_ERRORS;
    char tmp[sizeof p->errs->msg[0]];
    for (size_t i = 1; i < n; i++) {
        int line = p->error_line[i];
        size_t j = i;
        if (p->error_line[j - 1] <= line) continue;
        memcpy(tmp, p->errs->msg[i], sizeof tmp);
        for (; j > 0 && p->error_line[j - 1] > line; j--) {
            memcpy(p->errs->msg[j], p->errs->msg[j - 1], sizeof tmp);
            p->error_line[j] = p->error_line[j - 1];
        }
        memcpy(p->errs->msg[j], tmp, sizeof tmp);
        p->error_line[j] = line;
    }
}

static int cur_line(const parser *p) {
    return (int)p->ev.start_mark.line + 1;
}

static int line_of_offset(const parser *p, size_t off) {
    int line = 1;
    for (size_t i = 0; i < off && i < p->len; i++) line += p->text[i] == '\n';
    return line;
}

static void syntax_error(parser *p) {
    const yaml_parser_t *y = &p->yp;
    const char *problem = y->problem ? y->problem : "malformed YAML";
    switch (y->error) {
    case YAML_MEMORY_ERROR:
        error_at(p, 0, NULL, "out of memory while parsing");
        break;
    case YAML_READER_ERROR:
        if (y->problem_value != -1)
            error_at(p, line_of_offset(p, y->problem_offset), "yaml",
                     "%s (character %#x at byte %zu)", problem, (unsigned)y->problem_value,
                     y->problem_offset);
        else
            error_at(p, line_of_offset(p, y->problem_offset), "yaml", "%s (at offset %zu)", problem,
                     y->problem_offset);
        break;
    default:
        if (y->context)
            error_at(p, (int)y->problem_mark.line + 1, "yaml", "%s at column %d (%s at line %d)",
                     problem, (int)y->problem_mark.column + 1, y->context,
                     (int)y->context_mark.line + 1);
        else
            error_at(p, (int)y->problem_mark.line + 1, "yaml", "%s at column %d", problem,
                     (int)y->problem_mark.column + 1);
        break;
    }
}

/* Advances to the next event. False (with the error reported) when parsing
 * must stop. */
static bool next(parser *p) {
    if (p->fatal) return false;
    if (p->have_ev) {
        yaml_event_delete(&p->ev);
        p->have_ev = false;
    }
    if (!yaml_parser_parse(&p->yp, &p->ev)) {
        syntax_error(p);
        p->fatal = true;
        return false;
    }
    p->have_ev = true;
    switch (p->ev.type) {
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        if (++p->depth > MAX_DEPTH) {
            error_at(p, cur_line(p), NULL, "mappings and lists nested more than %d deep",
                     MAX_DEPTH);
            p->fatal = true;
            return false;
        }
        break;
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        p->depth--;
        break;
    default:
        break;
    }
    return true;
}

/* The current event starts a node: consumes the whole node, so that the
 * current event is its last one. */
static void skip(parser *p) {
    if (p->ev.type != YAML_MAPPING_START_EVENT && p->ev.type != YAML_SEQUENCE_START_EVENT) return;
    int outer = p->depth - 1;
    while (p->depth > outer)
        if (!next(p)) return;
}

/* ---- scalars --------------------------------------------------------------- */

static const char *scalar_text(const parser *p) {
    return (const char *)p->ev.data.scalar.value;
}

static size_t scalar_len(const parser *p) {
    return p->ev.data.scalar.length;
}

/* Plain and untagged: the only form numbers, booleans and nulls take here. */
static bool is_plain(const parser *p) {
    return p->ev.type == YAML_SCALAR_EVENT && p->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           !p->ev.data.scalar.tag;
}

static bool is_null(const parser *p) {
    if (!is_plain(p)) return false;
    const char *s = scalar_text(p);
    return scalar_len(p) == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
           strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

/* `s` as a quoted, escaped, ASCII-only and shortened text for a message. */
static void quote(char *out, size_t size, const char *s, size_t len) {
    size_t o = 0;
    if (size < 16) {
        if (size) out[0] = '\0';
        return;
    }
    out[o++] = '"';
    for (size_t i = 0; i < len; i++) {
        if (i >= SHOW_MAX || o + 10 > size) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = (char)ch;
        } else if (ch < 0x20 || ch >= 0x7f) {
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", ch);
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
}

/* What the current node is, for "expected X, got Y". */
static void describe(const parser *p, char *out, size_t size) {
    switch (p->ev.type) {
    case YAML_SCALAR_EVENT:
        if (is_null(p)) {
            snprintf(out, size, "nothing");
        } else {
            char q[64];
            quote(q, sizeof q, scalar_text(p), scalar_len(p));
            snprintf(out, size, "%s%s", is_plain(p) ? "" : "the quoted string ", q);
        }
        break;
    case YAML_MAPPING_START_EVENT:
        snprintf(out, size, "a mapping");
        break;
    case YAML_SEQUENCE_START_EVENT:
        snprintf(out, size, "a list");
        break;
    case YAML_ALIAS_EVENT:
        snprintf(out, size, "an alias (aliases are not supported)");
        break;
    default:
        snprintf(out, size, "something else");
        break;
    }
}

/* Reports that the current node is not what `path` needs, and skips it. */
static void expected(parser *p, const char *path, const char *what) {
    char got[96];
    describe(p, got, sizeof got);
    error_at(p, cur_line(p), path, "expected %s, got %s", what, got);
    skip(p);
}

/* A non-null scalar without NUL bytes (so C string functions see all of it),
 * or NULL after reporting why not. The text lives until the next event. */
static const char *get_scalar(parser *p, const char *path, const char *what) {
    if (p->ev.type != YAML_SCALAR_EVENT || is_null(p)) {
        expected(p, path, what);
        return NULL;
    }
    if (memchr(scalar_text(p), '\0', scalar_len(p))) {
        error_at(p, cur_line(p), path, "expected %s, got a string with a NUL byte", what);
        return NULL;
    }
    return scalar_text(p);
}

/* Decimal digits only; false on anything else or beyond UINT64_MAX. */
static bool parse_u64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!*s) return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool all_digits(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

/* An unquoted whole number in [min, max]. */
static bool get_uint(parser *p, const char *path, const char *what, uint64_t min, uint64_t max,
                     uint64_t *out) {
    const char *s = get_scalar(p, path, what);
    if (!s) return false;
    char q[64];
    quote(q, sizeof q, s, scalar_len(p));
    uint64_t v;
    if (!is_plain(p)) {
        error_at(p, cur_line(p), path, "expected %s, got the quoted string %s%s", what, q,
                 all_digits(s) ? " (write numbers without quotes)" : "");
        return false;
    }
    if (!parse_u64(s, &v)) {
        if (all_digits(s))
            error_at(p, cur_line(p), path, "%s is too large (at most %llu)", s,
                     (unsigned long long)max);
        else
            error_at(p, cur_line(p), path, "expected %s, got %s", what, q);
        return false;
    }
    if (v < min || v > max) {
        if (max == INT64_MAX)
            error_at(p, cur_line(p), path, "%s is too small (at least %llu)", s,
                     (unsigned long long)min);
        else
            error_at(p, cur_line(p), path, "%s is out of range (%llu to %llu)", s,
                     (unsigned long long)min, (unsigned long long)max);
        return false;
    }
    *out = v;
    return true;
}

static bool get_bool(parser *p, const char *path, bool *out) {
    const char *s = get_scalar(p, path, "true or false");
    if (!s) return false;
    if (is_plain(p) && strcmp(s, "true") == 0) return *out = true, true;
    if (is_plain(p) && strcmp(s, "false") == 0) return *out = false, true;
    char q[64];
    quote(q, sizeof q, s, scalar_len(p));
    bool quoted_bool = !is_plain(p) && (strcmp(s, "true") == 0 || strcmp(s, "false") == 0);
    error_at(p, cur_line(p), path, "expected true or false, got %s%s", q,
             quoted_bool ? " (write booleans without quotes)" : "");
    return false;
}

/* Optimal-string-alignment distance (an adjacent swap costs 1), ignoring
 * case; large for long words, which are never suggested. */
static size_t edit_distance(const char *a, size_t la, const char *b) {
    size_t lb = strlen(b);
    if (la > 32 || lb > 32) return SIZE_MAX;
    size_t d[33][33];
    for (size_t i = 0; i <= la; i++) d[i][0] = i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            size_t best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

/* Whether one of a and b begins with the other (ignoring case), both being
 * at least 3 long: "warning" for warn, "fixed" for fixed_window. */
static bool prefix_of(const char *a, size_t la, const char *b) {
    size_t lb = strlen(b), n = la < lb ? la : lb;
    if (n < 3) return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return false;
    return true;
}

/* The closest of `names` to `word` if it is close enough to be a typo. */
static const char *suggest(const char *word, size_t len, const char *const *names, size_t n) {
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t limit = strlen(names[i]) <= 4 ? 1 : 2;
        size_t d = edit_distance(word, len, names[i]);
        if (d > limit && prefix_of(word, len, names[i])) d = limit;
        if (d <= limit && d < best_d) best = names[i], best_d = d;
    }
    return best;
}

/* "a, b or c" */
static void join_names(char *out, size_t size, const char *const *names, size_t n) {
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && o < size; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int k = snprintf(out + o, size - o, "%s%s", sep, names[i]);
        if (k < 0) break;
        o += (size_t)k;
    }
}

typedef struct alias {
    const char *name, *means;
} alias;

/* What other tools call our algorithms, for "did you mean". */
static const alias algorithm_aliases[] = {
    {"leaky_bucket", "gcra (the leaky bucket as a meter) or leaky_queue (as a queue)"},
    {"sliding_window_log", "sliding_log"},
    {"sliding_window_counter", "sliding_window"},
    {"generic_cell_rate", "gcra"},
    {"cell", "gcra"},
};

/* One of `names` (an index), or -1 after reporting. */
static int get_enum_aliased(parser *p, const char *path, const char *what, const char *const *names,
                            size_t n, const alias *aliases, size_t naliases) {
    char list[160];
    join_names(list, sizeof list, names, n);
    const char *s = get_scalar(p, path, list);
    if (!s) return -1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return (int)i;
    char q[64];
    quote(q, sizeof q, s, scalar_len(p));
    const char *near = suggest(s, scalar_len(p), names, n);
    for (size_t i = 0; i < naliases; i++)
        if (strcmp(s, aliases[i].name) == 0) near = aliases[i].means;
    if (near)
        error_at(p, cur_line(p), path, "unknown %s %s (did you mean %s?)", what, q, near);
    else
        error_at(p, cur_line(p), path, "unknown %s %s (expected %s)", what, q, list);
    return -1;
}

static int get_enum(parser *p, const char *path, const char *what, const char *const *names,
                    size_t n) {
    return get_enum_aliased(p, path, what, names, n, NULL, 0);
}

/* ---- sizes and durations --------------------------------------------------- */

static const struct {
    const char *name;
    uint64_t bytes;
} size_units[] = {{"", 1}, {"B", 1}, {"KiB", KiB}, {"MiB", MiB}, {"GiB", GiB}, {"TiB", TiB}};

/* "1048576", "64KiB", "256 MiB", "1GiB": 1024-based units only, so that a
 * size never means two things (decimal MB is refused with a hint). */
static bool parse_size(const char *s, uint64_t *out, bool *overflow) {
    uint64_t v = 0;
    size_t i = 0;
    *overflow = false;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) *overflow = true;
        if (!*overflow) v = v * 10 + d;
    }
    if (i == 0) return false;
    while (s[i] == ' ') i++;
    for (size_t u = 0; u < COUNT(size_units); u++) {
        if (strcmp(s + i, size_units[u].name) != 0) continue;
        if (*overflow || v > UINT64_MAX / size_units[u].bytes) return *overflow = true, false;
        *out = v * size_units[u].bytes;
        return true;
    }
    return false;
}

/* The shortest exact text of a size: "256MiB", "1500". */
static void format_size(char *out, size_t size, uint64_t v) {
    for (size_t u = COUNT(size_units); u-- > 2;) {
        if (v && v % size_units[u].bytes == 0) {
            snprintf(out, size, "%llu%s", (unsigned long long)(v / size_units[u].bytes),
                     size_units[u].name);
            return;
        }
    }
    snprintf(out, size, "%llu", (unsigned long long)v);
}

static bool get_size(parser *p, const char *path, uint64_t min, uint64_t max, uint64_t *out) {
    const char *what = "a size such as 64KiB, 256MiB, 1GiB or a number of bytes";
    const char *s = get_scalar(p, path, what);
    if (!s) return false;
    char q[64], lo[32], hi[32];
    quote(q, sizeof q, s, scalar_len(p));
    uint64_t v;
    bool overflow;
    if (!parse_size(s, &v, &overflow)) {
        if (overflow)
            error_at(p, cur_line(p), path, "%s is too large", q);
        else
            error_at(p, cur_line(p), path,
                     "cannot parse %s (expected a size such as 64KiB, 256MiB, 1GiB or a number "
                     "of bytes; units are 1024-based: KiB, MiB, GiB, TiB)",
                     q);
        return false;
    }
    if (v < min || v > max) {
        format_size(lo, sizeof lo, min);
        format_size(hi, sizeof hi, max);
        error_at(p, cur_line(p), path, "%s is out of range (%s to %s)", q, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

static void format_duration(char *out, size_t size, int64_t ns) {
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = {{"d", NS_DAY}, {"h", 3600 * NS_SEC}, {"m", 60 * NS_SEC}, {"s", NS_SEC},
                 {"ms", NS_MS}, {"us", 1000},         {"ns", 1}};
    for (size_t u = 0; u < COUNT(units); u++) {
        if (ns % units[u].ns == 0) {
            snprintf(out, size, "%lld%s", (long long)(ns / units[u].ns), units[u].name);
            return;
        }
    }
    snprintf(out, size, "%lldns", (long long)ns);
}

static bool get_duration(parser *p, const char *path, int64_t min, int64_t max, int64_t *out) {
    const char *s = get_scalar(p, path, "a duration such as 10s or 500ms");
    if (!s) return false;
    char q[64], lo[32], hi[32];
    quote(q, sizeof q, s, scalar_len(p));
    int64_t v;
    int rc = sl_duration_parse(s, &v);
    if (rc == SL_EOVERFLOW) {
        error_at(p, cur_line(p), path, "%s is too large", q);
        return false;
    }
    if (rc != SL_OK) {
        error_at(p, cur_line(p), path,
                 "cannot parse %s (expected a number and a unit: ns, us, ms, s, m, h or d, such "
                 "as 10s or 500ms)",
                 q);
        return false;
    }
    if (v < min || v > max) {
        format_duration(lo, sizeof lo, min);
        format_duration(hi, sizeof hi, max);
        error_at(p, cur_line(p), path, "%s is out of range (%s to %s)", q, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

/* ---- listeners ------------------------------------------------------------- */

/* "host:port" or "[v6]:port" with a numeric host, stored canonically.
 * False with the reason in `why`. */
static bool parse_listen(const char *s, sl_listen_config *out, const char **why) {
    char host[80];
    const char *port;
    int family;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':') return *why = "expected [IPv6 address]:port", false;
        size_t n = (size_t)(close - s - 1);
        if (n == 0 || n >= sizeof host) return *why = "expected [IPv6 address]:port", false;
        memcpy(host, s + 1, n);
        host[n] = '\0';
        port = close + 2;
        family = AF_INET6;
    } else {
        const char *colon = strrchr(s, ':');
        if (!colon) return *why = "expected host:port (such as 127.0.0.1:8080) or off", false;
        size_t n = (size_t)(colon - s);
        if (memchr(s, ':', n))
            return *why = "an IPv6 address needs brackets and quotes, such as \"[::1]:8080\"",
                   false;
        if (n == 0) return *why = "the host is missing (0.0.0.0 listens on every interface)", false;
        if (n >= sizeof host) return *why = "the host is too long", false;
        memcpy(host, s, n);
        host[n] = '\0';
        port = colon + 1;
        family = AF_INET;
    }
    unsigned char addr[16];
    if (inet_pton(family, host, addr) != 1)
        return *why = family == AF_INET6
                          ? "not a numeric IPv6 address"
                          : "the host must be a numeric IP address (names such as localhost are "
                            "not resolved: use 127.0.0.1 or \"[::1]\")",
               false;
    uint64_t pv;
    if (!parse_u64(port, &pv) || pv > 65535)
        return *why = "the port must be a number from 0 to 65535 (0: any free port)", false;
    char canon[INET6_ADDRSTRLEN];
    if (!inet_ntop(family, addr, canon, sizeof canon) || strlen(canon) >= sizeof out->host)
        return *why = "the host is too long", false;
    out->enabled = true;
    snprintf(out->host, sizeof out->host, "%s", canon);
    out->port = (uint16_t)pv;
    return true;
}

static bool is_wildcard(const char *host) {
    return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

/* Two enabled listeners on the same port of the same (or every) address
 * would both bind with SO_REUSEPORT and share connections: refuse. */
static void check_listeners(parser *p) {
    const sl_listen_config *l[3] = {&p->cfg->http, &p->cfg->grpc, &p->cfg->resp};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < i; j++) {
            if (!l[i]->enabled || !l[j]->enabled || l[i]->port == 0 || l[i]->port != l[j]->port ||
                p->listen_bad[i] || p->listen_bad[j])
                continue;
            if (strcmp(l[i]->host, l[j]->host) != 0 && !is_wildcard(l[i]->host) &&
                !is_wildcard(l[j]->host))
                continue;
            int line = p->listen_line[i] ? p->listen_line[i] : p->listen_line[j];
            char path[32];
            snprintf(path, sizeof path, "listen.%s", listen_keys[p->listen_line[i] ? i : j]);
            error_at(p, line, path, "port %u is already used by listen.%s", (unsigned)l[i]->port,
                     listen_keys[p->listen_line[i] ? j : i]);
        }
    }
}

/* ---- mappings -------------------------------------------------------------- */

typedef void (*value_fn)(parser *p, void *obj, int key, const char *path);

static void join_path(char *out, const char *parent, const char *key, size_t keylen) {
    char k[SHOW_MAX + 4];
    size_t n = 0;
    for (size_t i = 0; i < keylen && n < SHOW_MAX; i++) {
        unsigned char ch = (unsigned char)key[i];
        k[n++] = ch > 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    if (keylen > SHOW_MAX) memcpy(k + n, "...", 3), n += 3;
    k[n] = '\0';
    snprintf(out, PATH_SIZE, "%s%s%s", parent, *parent ? "." : "", k);
}

static void unknown_key(parser *p, int line, const char *path, const char *key, size_t len,
                        const char *const *keys, size_t nkeys) {
    if (len == 2 && memcmp(key, "<<", 2) == 0) {
        error_at(p, line, path, "YAML merge keys (<<) are not supported");
        return;
    }
    for (size_t i = 0; i < COUNT(key_homes); i++) {
        if (strlen(key_homes[i].key) == len && memcmp(key_homes[i].key, key, len) == 0) {
            error_at(p, line, path, "unknown key here (%s belongs %s)", key_homes[i].key,
                     key_homes[i].where);
            return;
        }
    }
    const char *near = memchr(key, '\0', len) ? NULL : suggest(key, len, keys, nkeys);
    char list[200];
    join_names(list, sizeof list, keys, nkeys);
    if (near)
        error_at(p, line, path, "unknown key (did you mean %s?)", near);
    else
        error_at(p, line, path, "unknown key (expected %s)", list);
}

/* The current event is MAPPING_START: calls fn for each known key with the
 * value as the current event (fn consumes the value node); reports unknown
 * and duplicate keys. seen[i] gets the line of key i (0: absent). */
static void each_key(parser *p, const char *parent, const char *const *keys, size_t nkeys,
                     value_fn fn, void *obj, int *seen) {
    for (;;) {
        if (!next(p) || p->ev.type == YAML_MAPPING_END_EVENT) return;
        int line = cur_line(p);
        char path[PATH_SIZE];
        if (p->ev.type != YAML_SCALAR_EVENT) {
            char got[96];
            describe(p, got, sizeof got);
            error_at(p, line, parent, "a key must be a plain word, got %s", got);
            skip(p);
            if (!next(p)) return;
            skip(p);
            continue;
        }
        char key[SHOW_MAX + 1];
        size_t len = scalar_len(p);
        memcpy(key, scalar_text(p), len < SHOW_MAX ? len : SHOW_MAX);
        key[len < SHOW_MAX ? len : SHOW_MAX] = '\0';
        join_path(path, parent, scalar_text(p), len);
        int idx = -1;
        for (size_t i = 0; i < nkeys; i++)
            if (strlen(keys[i]) == len && memcmp(keys[i], key, len) == 0) idx = (int)i;
        if (!next(p)) return;
        if (idx < 0) {
            unknown_key(p, line, path, key, len > SHOW_MAX ? SHOW_MAX + 1 : len, keys, nkeys);
            skip(p);
        } else if (seen[idx]) {
            error_at(p, line, path, "duplicate key (first at line %d)", seen[idx]);
            skip(p);
        } else {
            seen[idx] = line;
            p->key_line = line;
            fn(p, obj, idx, path);
        }
    }
}

/* A section (a mapping value): absent when null, an error when not a mapping. */
static void section(parser *p, const char *path, const char *const *keys, size_t nkeys, value_fn fn,
                    void *obj, int *seen, const char *what) {
    if (is_null(p)) return;
    if (p->ev.type != YAML_MAPPING_START_EVENT) {
        expected(p, path, what);
        return;
    }
    each_key(p, path, keys, nkeys, fn, obj, seen);
}

/* ---- sections -------------------------------------------------------------- */

static void listen_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    sl_listen_config *l[3] = {&p->cfg->http, &p->cfg->grpc, &p->cfg->resp};
    if (p->ev.type == YAML_SEQUENCE_START_EVENT) {
        expected(p, path, "host:port or off (write an IPv6 listener in quotes: \"[::1]:8080\")");
        return;
    }
    p->listen_bad[key] = true; /* until proven otherwise */
    const char *s = get_scalar(p, path, "host:port (such as 127.0.0.1:8080) or off");
    if (!s) return;
    p->listen_line[key] = cur_line(p);
    if (strcmp(s, "off") == 0) {
        *l[key] = (sl_listen_config){.enabled = false};
        p->listen_bad[key] = false;
        return;
    }
    const char *why = "";
    sl_listen_config v = {0};
    if (!parse_listen(s, &v, &why)) {
        char q[64];
        quote(q, sizeof q, s, scalar_len(p));
        error_at(p, cur_line(p), path, "cannot use %s: %s", q, why);
        return;
    }
    *l[key] = v;
    p->listen_bad[key] = false;
}

static void redis_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    uint64_t u;
    int64_t d;
    switch (key) {
    case REDIS_URL: {
        const char *s = get_scalar(p, path, "a URL such as redis://127.0.0.1:6379/0");
        if (s && strncmp(s, "redis://", 8) != 0 && strncmp(s, "rediss://", 9) != 0 &&
            strncmp(s, "unix://", 7) != 0) {
            char q[64];
            quote(q, sizeof q, s, scalar_len(p));
            error_at(p, cur_line(p), path,
                     "cannot use %s (expected redis://host:port/db, rediss://... or unix://path)",
                     q);
        }
        break;
    }
    case REDIS_CLUSTER:
        if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
            expected(p, path, "a list of host:port");
            break;
        }
        for (size_t i = 0;; i++) {
            if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) break;
            char item[PATH_SIZE];
            snprintf(item, sizeof item, "%s[%zu]", path, i);
            const char *s = get_scalar(p, item, "host:port");
            const char *colon = s ? strrchr(s, ':') : NULL;
            if (s && (!colon || colon == s || !parse_u64(colon + 1, &u) || u == 0 || u > 65535))
                error_at(p, cur_line(p), item, "expected host:port");
        }
        break;
    case REDIS_TIMEOUT:
        get_duration(p, path, NS_MS / 1000, 60 * NS_SEC, &d);
        break;
    case REDIS_ON_FAILURE:
        get_enum(p, path, "failure mode", failure_modes, COUNT(failure_modes));
        break;
    case REDIS_INSTANCES:
        get_uint(p, path, "a number of instances", 1, 1024, &u);
        break;
    case REDIS_SYNC:
        get_enum(p, path, "sync mode", sync_modes, COUNT(sync_modes));
        break;
    }
}

static void store_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    sl_config *c = p->cfg;
    switch (key) {
    case STORE_TYPE: {
        int t = get_enum(p, path, "store type", store_types, COUNT(store_types));
        if (t == 1)
            error_at(p, cur_line(p), path, "redis is not available yet");
        else if (t == 0)
            snprintf(c->store_type, sizeof c->store_type, "%s", store_types[t]);
        break;
    }
    case STORE_MAX_MEMORY: {
        uint64_t v;
        if (get_size(p, path, MiB, TiB, &v)) c->max_memory = (size_t)v;
        break;
    }
    case STORE_REDIS: {
        int line = p->key_line;
        int seen[COUNT(redis_keys)] = {0};
        if (is_null(p)) break;
        section(p, path, redis_keys, COUNT(redis_keys), redis_value, NULL, seen,
                "a mapping (url, timeout, on_failure, ...)");
        if (!p->fatal)
            error_at(p, line, path,
                     "the Redis store is not available yet: remove this section (memory is the "
                     "only store for now)");
        break;
    }
    }
}

static void limits_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    sl_limits_config *l = &p->cfg->limits;
    uint64_t v;
    int64_t d;
    switch (key) {
    case LIM_HEADER:
        if (get_size(p, path, KiB, MiB, &v)) l->max_header_bytes = (size_t)v;
        break;
    case LIM_BODY:
        if (get_size(p, path, KiB, 16 * MiB, &v)) l->max_body_bytes = (size_t)v;
        break;
    case LIM_RESP_FRAME:
        if (get_size(p, path, KiB, 16 * MiB, &v)) l->max_resp_frame = (size_t)v;
        break;
    case LIM_CONNECTIONS:
        if (get_uint(p, path, "a number of connections", 1, 1000000, &v))
            l->max_connections = (unsigned)v;
        break;
    case LIM_IDLE:
        if (get_duration(p, path, NS_MS, NS_DAY, &d)) l->idle_timeout = d;
        break;
    case LIM_HEADER_TIMEOUT:
        if (get_duration(p, path, NS_MS, 3600 * NS_SEC, &d)) l->header_timeout = d;
        break;
    }
}

/* ---- policies -------------------------------------------------------------- */

typedef struct policy_build {
    sl_policy_config *pc;
    size_t index;
    int seen[POL_NKEYS];
    bool have_algorithm;
} policy_build;

static bool is_bucket(sl_algorithm a) {
    return a == SL_TOKEN_BUCKET || a == SL_GCRA || a == SL_LEAKY_QUEUE;
}

static void policy_name(parser *p, policy_build *b, const char *path) {
    const char *s = get_scalar(p, path, "a name such as api ([a-z0-9_.-]+)");
    if (!s) return;
    size_t n = scalar_len(p);
    char q[64];
    quote(q, sizeof q, s, n);
    if (n == 0) {
        error_at(p, cur_line(p), path, "the name is empty");
        return;
    }
    if (n > SL_POLICY_NAME_MAX) {
        error_at(p, cur_line(p), path, "%s is longer than %d characters", q, SL_POLICY_NAME_MAX);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
              ch == '-')) {
            error_at(p, cur_line(p), path,
                     "%s: a name uses only lower-case letters, digits, _ . and -", q);
            return;
        }
    }
    for (size_t i = 0; i < b->index; i++) {
        const sl_policy_config *o = &p->cfg->policies[i];
        if (strcmp(o->name, s) == 0) {
            error_at(p, cur_line(p), path, "duplicate policy name %s (first at line %d)", q,
                     o->line);
            return;
        }
    }
    memcpy(b->pc->name, s, n + 1);
}

static void policy_value(parser *p, void *obj, int key, const char *path) {
    policy_build *b = obj;
    sl_policy_config *pc = b->pc;
    uint64_t u;
    bool flag;
    int i;
    switch (key) {
    case POL_NAME:
        policy_name(p, b, path);
        break;
    case POL_ALGORITHM:
        i = get_enum_aliased(p, path, "algorithm", algorithm_names, COUNT(algorithm_names),
                             algorithm_aliases, COUNT(algorithm_aliases));
        if (i >= 0 && sl_algorithm_parse(algorithm_names[i], &pc->params.algorithm) == SL_OK)
            b->have_algorithm = true;
        break;
    case POL_RATE: {
        const char *s = get_scalar(p, path, "a rate such as 5/s");
        if (!s) break;
        char q[64];
        quote(q, sizeof q, s, scalar_len(p));
        int rc = sl_rate_parse(s, &pc->params.rate);
        if (rc == SL_EPARSE)
            error_at(p, cur_line(p), path,
                     "cannot parse %s (expected N/s, N/m, N/h, N/d or N/<duration> such as "
                     "100/10s)",
                     q);
        else if (rc == SL_EOVERFLOW)
            error_at(p, cur_line(p), path, "%s: a number is too large", q);
        else if (rc != SL_OK)
            error_at(p, cur_line(p), path, "%s: %s", q, sl_strerror(rc));
        break;
    }
    case POL_BURST:
        if (get_uint(p, path, "a whole number of requests", 1, INT64_MAX, &u))
            pc->params.burst = (int64_t)u;
        break;
    case POL_COUNT_REJECTED:
        if (get_bool(p, path, &flag) && flag) pc->params.flags |= SL_COUNT_REJECTED;
        break;
    case POL_START:
        if (get_enum(p, path, "start", start_names, COUNT(start_names)) == 1)
            pc->params.flags |= SL_START_EMPTY; /* origin: set by the server at load */
        break;
    case POL_SHADOW:
        if (get_bool(p, path, &flag)) pc->shadow = flag;
        break;
    case POL_ON_FAILURE:
        i = get_enum(p, path, "failure mode", failure_modes, COUNT(failure_modes));
        if (i >= 0) snprintf(pc->on_failure, sizeof pc->on_failure, "%s", failure_modes[i]);
        break;
    }
}

/* Checks a parsed policy as a whole (required fields, sl_params_validate). */
static void policy_finish(parser *p, policy_build *b, const char *path, int line,
                          size_t errors_before) {
    sl_policy_config *pc = b->pc;
    char field[PATH_SIZE + 32];
    static const struct {
        int key;
        const char *why;
    } required[] = {{POL_NAME, "every policy needs a name"},
                    {POL_ALGORITHM, "every policy needs an algorithm"},
                    {POL_RATE, "every policy needs a rate such as 5/s"}};
    for (size_t i = 0; i < COUNT(required); i++) {
        if (b->seen[required[i].key]) continue;
        snprintf(field, sizeof field, "%s.%s", path, policy_keys[required[i].key]);
        error_at(p, line, field, "missing (%s)", required[i].why);
    }
    if (b->have_algorithm && is_bucket(pc->params.algorithm) && !b->seen[POL_BURST]) {
        snprintf(field, sizeof field, "%s.burst", path);
        error_at(p, line, field, "missing (%s needs a burst: %s)",
                 sl_algorithm_name(pc->params.algorithm),
                 pc->params.algorithm == SL_LEAKY_QUEUE ? "how many requests may wait"
                                                        : "the bucket size");
    }
    if (b->have_algorithm && !is_bucket(pc->params.algorithm)) pc->params.burst = 0;
    if (p->errs->n != errors_before) return; /* nothing to validate, or cascades */

    int rc = sl_params_validate(&pc->params);
    if (rc == SL_OK) return;
    /* Blame the burst only if the rate alone is fine. */
    sl_params alone = pc->params;
    if (is_bucket(alone.algorithm)) alone.burst = 1;
    int key = rc == SL_EBURST || sl_params_validate(&alone) == SL_OK ? POL_BURST : POL_RATE;
    snprintf(field, sizeof field, "%s.%s", path, policy_keys[key]);
    char rate[48];
    sl_rate_format(pc->params.rate, rate, sizeof rate);
    int at = b->seen[key] ? b->seen[key] : line;
    if (rc == SL_EINVAL && pc->params.algorithm == SL_SLIDING_LOG)
        error_at(p, at, field,
                 "%s: a sliding_log keeps every request of its period, at most %d (use "
                 "sliding_window for larger limits)",
                 rate, SL_SLIDING_LOG_MAX);
    else if (rc == SL_EOVERFLOW && key == POL_BURST)
        error_at(p, at, field,
                 "%lld with rate %s: %s (use a smaller burst, or a period that shares factors "
                 "with the limit)",
                 (long long)pc->params.burst, rate, sl_strerror(rc));
    else if (rc == SL_EOVERFLOW)
        error_at(p, at, field, "%s: %s (at most 2^61 per period of at most 36600d)", rate,
                 sl_strerror(rc));
    else
        error_at(p, at, field, "%s", sl_strerror(rc));
}

static sl_policy_config *new_policy(parser *p) {
    sl_config *c = p->cfg;
    if (c->npolicies == p->policies_cap) {
        size_t cap = p->policies_cap ? 2 * p->policies_cap : 8;
        if (cap > SL_CONFIG_MAX_POLICIES) cap = SL_CONFIG_MAX_POLICIES;
        sl_policy_config *np = realloc(c->policies, cap * sizeof *np);
        if (!np) return NULL;
        c->policies = np;
        p->policies_cap = cap;
    }
    sl_policy_config *pc = &c->policies[c->npolicies++];
    memset(pc, 0, sizeof *pc);
    return pc;
}

static void parse_policies(parser *p, const char *path) {
    if (is_null(p)) return;
    if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
        expected(p, path, "a list of policies (- name: ...)");
        return;
    }
    for (size_t i = 0;; i++) {
        if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) return;
        char item[PATH_SIZE];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        if (i >= SL_CONFIG_MAX_POLICIES) {
            if (i == SL_CONFIG_MAX_POLICIES)
                error_at(p, cur_line(p), item, "too many policies (at most %d)",
                         SL_CONFIG_MAX_POLICIES);
            skip(p);
            continue;
        }
        if (p->ev.type != YAML_MAPPING_START_EVENT) {
            expected(p, item, "a policy (a mapping of name, algorithm, rate, ...)");
            continue;
        }
        int line = cur_line(p);
        size_t errors_before = p->errs->n;
        policy_build b = {.index = p->cfg->npolicies};
        b.pc = new_policy(p);
        if (!b.pc) {
            error_at(p, line, item, "out of memory");
            p->fatal = true;
            return;
        }
        b.pc->line = line;
        each_key(p, item, policy_keys, COUNT(policy_keys), policy_value, &b, b.seen);
        if (p->fatal) return;
        policy_finish(p, &b, item, line, errors_before);
    }
}

/* ---- the document ---------------------------------------------------------- */

static void top_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    sl_config *c = p->cfg;
    int listen_seen[COUNT(listen_keys)] = {0};
    int store_seen[COUNT(store_keys)] = {0};
    int limits_seen[COUNT(limits_keys)] = {0};
    uint64_t u;
    int i;
    switch (key) {
    case TOP_LISTEN:
        section(p, path, listen_keys, COUNT(listen_keys), listen_value, NULL, listen_seen,
                "a mapping of http, grpc and resp");
        break;
    case TOP_WORKERS:
        if (p->ev.type == YAML_SCALAR_EVENT && strcmp(scalar_text(p), "auto") == 0)
            c->workers = 0;
        else if (get_uint(p, path, "auto or a number from 1 to 256", 1, 256, &u))
            c->workers = (unsigned)u;
        break;
    case TOP_STORE:
        section(p, path, store_keys, COUNT(store_keys), store_value, NULL, store_seen,
                "a mapping of type, max_memory, ...");
        break;
    case TOP_DOMAINS: {
        int line = p->key_line;
        if (get_scalar(p, path, "a directory or file of rule files"))
            error_at(p, line, path,
                     "envoyproxy/ratelimit rule files are not supported yet: remove this key");
        break;
    }
    case TOP_POLICIES:
        parse_policies(p, path);
        break;
    case TOP_LIMITS:
        section(p, path, limits_keys, COUNT(limits_keys), limits_value, NULL, limits_seen,
                "a mapping of max_header_bytes, idle_timeout, ...");
        break;
    case TOP_LOG_LEVEL:
        i = get_enum(p, path, "log level", log_levels, COUNT(log_levels));
        if (i >= 0) snprintf(c->log_level, sizeof c->log_level, "%s", log_levels[i]);
        break;
    }
}

static void parse_stream(parser *p) {
    if (!next(p) || !next(p)) return; /* STREAM_START, then DOCUMENT_START or STREAM_END */
    const char *empty = "the config is empty (expected a mapping of listen, store, policies, ...)";
    if (p->ev.type == YAML_STREAM_END_EVENT) {
        error_at(p, 1, NULL, "%s", empty);
        return;
    }
    if (!next(p)) return;
    if (is_null(p)) {
        error_at(p, 1, NULL, "%s", empty);
    } else if (p->ev.type != YAML_MAPPING_START_EVENT) {
        char got[96];
        describe(p, got, sizeof got);
        error_at(p, cur_line(p), NULL,
                 "expected a mapping of listen, store, policies, ... at the top, got %s", got);
        skip(p);
    } else {
        int seen[COUNT(top_keys)] = {0};
        each_key(p, "", top_keys, COUNT(top_keys), top_value, NULL, seen);
    }
    if (!next(p) || !next(p)) return; /* DOCUMENT_END, then STREAM_END */
    if (p->ev.type == YAML_DOCUMENT_START_EVENT)
        error_at(p, cur_line(p), NULL, "only one YAML document is allowed (remove the second ---)");
}

static void set_defaults(sl_config *c, const char *source) {
    snprintf(c->source, sizeof c->source, "%s", source);
    c->http = (sl_listen_config){.enabled = true, .host = "127.0.0.1", .port = 8080};
    c->grpc = (sl_listen_config){.enabled = true, .host = "127.0.0.1", .port = 8081};
    c->resp = (sl_listen_config){.enabled = true, .host = "127.0.0.1", .port = 6380};
    c->workers = 0;
    snprintf(c->store_type, sizeof c->store_type, "memory");
    c->max_memory = (size_t)(256 * MiB);
    c->limits = (sl_limits_config){
        .max_header_bytes = 8 * KiB,
        .max_body_bytes = 64 * KiB,
        .max_resp_frame = 64 * KiB,
        .max_connections = 10000,
        .idle_timeout = 60 * NS_SEC,
        .header_timeout = 10 * NS_SEC,
    };
    snprintf(c->log_level, sizeof c->log_level, "info");
}

/* ---- the interface ---------------------------------------------------------- */

int sl__config_parse(const char *text, size_t len, const char *source, sl_config **out,
                     sl_config_errors *errs) {
    sl_config_errors scratch;
    if (!errs) errs = &scratch;
    errs->n = 0;
    if (!source) source = "<config>";
    if (!out) {
        file_error(errs, source, 0, "no place for the result");
        return -1;
    }
    *out = NULL;
    if (!text) {
        file_error(errs, source, 0, "no text");
        return -1;
    }
    if (len > SL_CONFIG_MAX_BYTES) {
        file_error(errs, source, 0, "larger than %u bytes: refused", SL_CONFIG_MAX_BYTES);
        return -1;
    }
    sl_config *c = calloc(1, sizeof *c);
    if (!c) {
        file_error(errs, source, 0, "out of memory");
        return -1;
    }
    set_defaults(c, source);

    parser p = {.text = text, .len = len, .source = source, .errs = errs, .cfg = c};
    if (!yaml_parser_initialize(&p.yp)) {
        file_error(errs, source, 0, "out of memory");
        free(c);
        return -1;
    }
    yaml_parser_set_input_string(&p.yp, (const unsigned char *)text, len);
    parse_stream(&p);
    if (p.have_ev) yaml_event_delete(&p.ev);
    yaml_parser_delete(&p.yp);
    if (!p.fatal) check_listeners(&p);
    sort_errors(&p);

    if (errs->n) {
        sl__config_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

int sl__config_load(const char *path, sl_config **out, sl_config_errors *errs) {
    sl_config_errors scratch;
    if (!errs) errs = &scratch;
    errs->n = 0;
    if (out) *out = NULL;
    if (!path) {
        file_error(errs, "<config>", 0, "no file name");
        return -1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        file_error(errs, path, 0, "cannot open: %s", strerror(errno));
        return -1;
    }
    /* Read at most one byte more than allowed: works for pipes and
     * /dev/stdin too, and never trusts a size reported in advance. */
    size_t cap = 64 * 1024, len = 0;
    char *buf = malloc(cap);
    int rc = -1;
    if (!buf) {
        file_error(errs, path, 0, "out of memory");
        goto done;
    }
    for (;;) {
        if (len == cap) {
            if (cap > SL_CONFIG_MAX_BYTES) break;
            size_t ncap = 2 * cap > (size_t)SL_CONFIG_MAX_BYTES + 1
                              ? (size_t)SL_CONFIG_MAX_BYTES + 1
                              : 2 * cap;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                file_error(errs, path, 0, "out of memory");
                goto done;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            file_error(errs, path, 0, "cannot read: %s", strerror(errno));
            goto done;
        }
        if (n == 0) break;
        len += (size_t)n;
    }
    if (len > SL_CONFIG_MAX_BYTES) {
        file_error(errs, path, 0, "larger than %u bytes: refused", SL_CONFIG_MAX_BYTES);
        goto done;
    }
    rc = sl__config_parse(buf, len, path, out, errs);
done:
    free(buf);
    close(fd);
    return rc;
}

int sl__config_load_default(sl_config **out, sl_config_errors *errs) {
    return sl__config_parse(sl__default_config_text, strlen(sl__default_config_text),
                            DEFAULT_SOURCE, out, errs);
}

void sl__config_free(sl_config *c) {
    if (!c) return;
    free(c->policies);
    free(c);
}

const sl_policy_config *sl__config_policy(const sl_config *c, const char *name, size_t len) {
    if (!c || !name || len > SL_POLICY_NAME_MAX) return NULL;
    for (size_t i = 0; i < c->npolicies; i++) {
        const sl_policy_config *pc = &c->policies[i];
        if (strlen(pc->name) == len && memcmp(pc->name, name, len) == 0) return pc;
    }
    return NULL;
}
