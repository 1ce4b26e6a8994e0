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
 * - Keys of features that are not built yet (store.redis) are checked like
 *   the others, then refused with "not supported yet": a config never
 *   silently means less than it says.
 * - `domains:` names envoyproxy/ratelimit rule files; they are loaded and
 *   checked with the config (policy/domains.c), each of their errors
 *   reported at the domains: line as "rule-file:line: field: message", and
 *   the config owns them. */
#include "policy/config.h"
#include "store/redis_script.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#include "policy/domains.h"
#include "policy/apikeys.h"
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

enum {
    TOP_LISTEN,
    TOP_WORKERS,
    TOP_STORE,
    TOP_DOMAINS,
    TOP_POLICIES,
    TOP_LIMITS,
    TOP_LOG_LEVEL,
    /* who is counted (docs/identity.md) */
    TOP_IDENTITY,
    TOP_TIERS,
    TOP_QUOTAS,
    TOP_COSTS,
    TOP_EXEMPT,
    TOP_RULES,
    TOP_SHADOW,
    TOP_ADMIN
};
static const char *const top_keys[] = {"listen", "workers",   "store",    "domains", "policies",
                                       "limits", "log_level", "identity", "tiers",   "quotas",
                                       "costs",  "exempt",    "rules",    "shadow",  "admin"};

/* who may use the admin endpoints (docs/configuration.md, `admin`) */
enum { ADMIN_RELOAD, ADMIN_RELOAD_TOKEN };
static const char *const admin_keys[] = {"reload", "reload_token"};
static const char *const reload_modes[] = {"loopback", "off", "token"}; /* = SL_RELOAD_* */

enum { LISTEN_HTTP, LISTEN_GRPC, LISTEN_RESP };
static const char *const listen_keys[] = {"http", "grpc", "resp"};

enum { STORE_TYPE, STORE_MAX_MEMORY, STORE_REDIS };
static const char *const store_keys[] = {"type", "max_memory", "redis"};

enum {
    REDIS_URL,
    REDIS_CLUSTER,
    REDIS_TIMEOUT,
    REDIS_ON_FAILURE,
    REDIS_INSTANCES,
    REDIS_SYNC,
    REDIS_SYNC_INTERVAL,
    REDIS_PREFIX,
    REDIS_BREAKER_FAILURES,
    REDIS_BREAKER_COOLDOWN,
    REDIS_DENY_CACHE,
    REDIS_BREAKER_WINDOW
};
static const char *const redis_keys[] = {
    "url",        "cluster",       "timeout", "on_failure",       "expected_instances",
    "sync",       "sync_interval", "prefix",  "breaker_failures", "breaker_cooldown",
    "deny_cache", "breaker_window"};

enum {
    POL_NAME,
    POL_ALGORITHM,
    POL_RATE,
    POL_BURST,
    POL_COUNT_REJECTED,
    POL_START,
    POL_SHADOW,
    POL_ON_FAILURE,
    POL_DELAY_AFTER,
    POL_NKEYS
};
static const char *const policy_keys[] = {"name",   "algorithm",      "rate",
                                          "burst",  "count_rejected", "start",
                                          "shadow", "on_failure",     "delay_after"};

enum {
    LIM_HEADER,
    LIM_BODY,
    LIM_RESP_FRAME,
    LIM_CONNECTIONS,
    LIM_IDLE,
    LIM_HEADER_TIMEOUT,
    LIM_COMMAND_TIMEOUT,
    LIM_OUTPUT,
    LIM_OUTPUT_TOTAL,
};
static const char *const limits_keys[] = {
    "max_header_bytes", "max_body_bytes",     "max_resp_frame",
    "max_connections",  "idle_timeout",       "header_timeout",
    "command_timeout",  "max_pending_output", "max_pending_output_total"};

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
    {"sync_interval", "under store.redis"},
    {"prefix", "under store.redis"},
    {"breaker_failures", "under store.redis"},
    {"breaker_cooldown", "under store.redis"},
    {"breaker_window", "under store.redis"},
    {"deny_cache", "under store.redis"},
    {"on_failure", "in a policy or under store.redis"},
    {"name", "in a policy (policies: - name: ...)"},
    {"algorithm", "in a policy (policies: - name: ...)"},
    {"rate", "in a policy (policies: - name: ...)"},
    {"burst", "in a policy (policies: - name: ...)"},
    {"count_rejected", "in a policy (policies: - name: ...)"},
    {"start", "in a policy (policies: - name: ...)"},
    {"shadow", "in a policy (policies: - name: ...)"},
    {"delay_after", "in a leaky_queue policy (policies: - name: ...)"},
    {"max_header_bytes", "under limits"},
    {"max_body_bytes", "under limits"},
    {"max_resp_frame", "under limits"},
    {"max_connections", "under limits"},
    {"idle_timeout", "under limits"},
    {"header_timeout", "under limits"},
    {"command_timeout", "under limits"},
    {"max_pending_output", "under limits"},
    {"max_pending_output_total", "under limits"},
    {"listen", "at the top level"},
    {"workers", "at the top level"},
    {"store", "at the top level"},
    {"domains", "at the top level"},
    {"policies", "at the top level"},
    {"limits", "at the top level"},
    {"log_level", "at the top level"},
    {"trusted_proxies", "under identity"},
    {"forwarded_header", "under identity"},
    {"ipv4_prefix", "under identity"},
    {"ipv6_prefix", "under identity"},
    {"client_ip_header", "under identity"},
    {"method_header", "under identity"},
    {"uri_header", "under identity"},
    {"api_keys", "under identity"},
    {"file", "under identity.api_keys"},
    {"bearer", "under identity.api_keys"},
    {"required", "under identity.api_keys"},
    {"limit", "in a quota (quotas: - name: ...) or a tier"},
    {"per", "in a quota (quotas: - name: ...)"},
    {"cidrs", "under exempt"},
    {"paths", "under exempt"},
    {"by", "in a rule's limit (rules: - limits: - policy: ...)"},
    {"policy", "in a rule's limit (rules: - limits: - policy: ...)"},
    {"identity", "at the top level"},
    {"tiers", "at the top level"},
    {"quotas", "at the top level"},
    {"costs", "at the top level"},
    {"exempt", "at the top level"},
    {"rules", "at the top level"},
    {"admin", "at the top level"},
    {"reload", "under admin"},
    {"reload_token", "under admin"},
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
    int store_type_line, redis_line;      /* of store.type and store.redis (0: not given) */
    int admin_line, reload_token_line;    /* of admin: and admin.reload_token (0: not given) */
    int error_line[SL_CONFIG_MAX_ERRORS]; /* of each stored message, to sort them */
    struct ident_parse *ident;            /* identity sections (see there) */
} parser;

__attribute__((format(printf, 5, 0))) static void add_errorv(sl_config_errors *errs,
                                                             const char *source, int line,
                                                             const char *field, const char *fmt,
                                                             va_list ap) {
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

/* "host:port" (the port required unless def_port) or "[v6]:port" into a. */
static bool parse_host_port(const char *s, size_t len, uint16_t def_port, sl_redis_addr *a) {
    const char *end = s + len, *hs = s, *he, *colon = NULL;
    if (len && *s == '[') {
        hs = s + 1;
        he = memchr(hs, ']', (size_t)(end - hs));
        if (!he) return false;
        if (he + 1 < end) {
            if (he[1] != ':') return false;
            colon = he + 1;
        }
    } else {
        colon = memrchr(s, ':', len);
        he = colon ? colon : end;
        if (colon && memchr(s, ':', (size_t)(colon - s))) return false; /* v6 needs brackets */
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0 || hl > SL_REDIS_HOST_MAX) return false;
    uint64_t port = def_port;
    if (colon) {
        char num[8];
        size_t nl = (size_t)(end - colon - 1);
        if (nl == 0 || nl >= sizeof num) return false;
        memcpy(num, colon + 1, nl);
        num[nl] = '\0';
        if (!parse_u64(num, &port)) return false;
    }
    if (port == 0 || port > 65535) return false;
    memcpy(a->host, hs, hl);
    a->host[hl] = '\0';
    a->port = (uint16_t)port;
    return true;
}

/* redis://[[user]:password@]host[:port][/db] or unix://path. */
static bool parse_redis_url(const char *s, sl_redis_config *r, const char **why) {
    if (strncmp(s, "rediss://", 9) == 0) {
        *why = "TLS (rediss://) is not supported: hiredis 0.14's async API has no TLS; use a "
               "local TLS tunnel and redis://";
        return false;
    }
    if (strncmp(s, "unix://", 7) == 0) {
        size_t n = strlen(s + 7);
        if (n == 0 || n >= sizeof r->unix_path) return (*why = "bad socket path"), false;
        memcpy(r->unix_path, s + 7, n + 1);
        r->addr.host[0] = '\0';
        return true;
    }
    if (strncmp(s, "redis://", 8) != 0) {
        *why = "expected redis://host:port/db or unix://path";
        return false;
    }
    const char *p = s + 8;
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (!colon) return (*why = "credentials must be user:password or :password"), false;
        size_t ul = (size_t)(colon - p), pl = (size_t)(at - colon - 1);
        if (ul >= sizeof r->user || pl >= sizeof r->password || pl == 0)
            return (*why = "credentials too long or empty password"), false;
        memcpy(r->user, p, ul);
        r->user[ul] = '\0';
        memcpy(r->password, colon + 1, pl);
        r->password[pl] = '\0';
        p = at + 1;
    }
    const char *slash = strchr(p, '/');
    size_t hl = slash ? (size_t)(slash - p) : strlen(p);
    if (!parse_host_port(p, hl, 6379, &r->addr)) return (*why = "bad host:port"), false;
    r->db = 0;
    if (slash && slash[1]) {
        uint64_t db;
        if (!parse_u64(slash + 1, &db) || db > 65535) return (*why = "bad database number"), false;
        r->db = (unsigned)db;
    }
    r->unix_path[0] = '\0';
    return true;
}

static void redis_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    sl_redis_config *r = &p->cfg->redis;
    uint64_t u;
    int64_t d;
    switch (key) {
    case REDIS_URL: {
        const char *s = get_scalar(p, path, "a URL such as redis://127.0.0.1:6379/0");
        const char *why = "";
        if (s && !parse_redis_url(s, r, &why)) {
            char q[64];
            quote(q, sizeof q, s, scalar_len(p));
            error_at(p, cur_line(p), path, "cannot use %s: %s", q, why);
        }
        break;
    }
    case REDIS_CLUSTER:
        if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
            expected(p, path, "a list of host:port");
            break;
        }
        r->cluster = true;
        r->nseeds = 0;
        for (size_t i = 0;; i++) {
            if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) break;
            char item[PATH_SIZE];
            snprintf(item, sizeof item, "%s[%zu]", path, i);
            const char *s = get_scalar(p, item, "host:port");
            if (!s) continue;
            if (r->nseeds == SL_REDIS_MAX_SEEDS) {
                error_at(p, cur_line(p), item, "at most %d seed nodes", SL_REDIS_MAX_SEEDS);
                continue;
            }
            if (!parse_host_port(s, strlen(s), 0, &r->seeds[r->nseeds]))
                error_at(p, cur_line(p), item, "expected host:port");
            else
                r->nseeds++;
        }
        break;
    case REDIS_TIMEOUT:
        if (get_duration(p, path, NS_MS / 1000, 60 * NS_SEC, &d)) r->timeout = d;
        break;
    case REDIS_ON_FAILURE: {
        int i = get_enum(p, path, "failure mode", failure_modes, COUNT(failure_modes));
        if (i >= 0) r->on_failure = (sl_fail_mode)i;
        break;
    }
    case REDIS_INSTANCES:
        if (get_uint(p, path, "a number of instances", 1, 1024, &u))
            r->expected_instances = (unsigned)u;
        break;
    case REDIS_SYNC: {
        int i = get_enum(p, path, "sync mode", sync_modes, COUNT(sync_modes));
        if (i >= 0) r->batched = i == 1;
        break;
    }
    case REDIS_SYNC_INTERVAL:
        if (get_duration(p, path, NS_MS, 60 * NS_SEC, &d)) r->sync_interval = d;
        break;
    case REDIS_PREFIX: {
        const char *s = get_scalar(p, path, "a key prefix such as \"sluice:\"");
        if (s && strlen(s) >= sizeof r->prefix)
            error_at(p, cur_line(p), path, "at most %zu bytes", sizeof r->prefix - 1);
        else if (s && (strchr(s, '{') || strchr(s, '}')))
            error_at(p, cur_line(p), path,
                     "must not contain { or } (the key's hash tag follows it)");
        else if (s)
            snprintf(r->prefix, sizeof r->prefix, "%s", s);
        break;
    }
    case REDIS_BREAKER_FAILURES:
        if (get_uint(p, path, "a number of failures", 1, 1000000, &u))
            r->breaker_failures = (unsigned)u;
        break;
    case REDIS_BREAKER_COOLDOWN:
        if (get_duration(p, path, NS_MS, 3600 * NS_SEC, &d)) r->breaker_cooldown = d;
        break;
    case REDIS_BREAKER_WINDOW:
        if (get_duration(p, path, 0, 3600 * NS_SEC, &d)) r->breaker_window = d;
        break;
    case REDIS_DENY_CACHE:
        if (get_uint(p, path, "a number of entries (0 = off)", 0, 1u << 24, &u))
            r->deny_cache = (size_t)u;
        break;
    }
}

static void store_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    sl_config *c = p->cfg;
    switch (key) {
    case STORE_TYPE: {
        int t = get_enum(p, path, "store type", store_types, COUNT(store_types));
        if (t >= 0) {
            snprintf(c->store_type, sizeof c->store_type, "%s", store_types[t]);
            p->store_type_line = cur_line(p);
        }
        break;
    }
    case STORE_MAX_MEMORY: {
        uint64_t v;
        if (get_size(p, path, MiB, TiB, &v)) c->max_memory = (size_t)v;
        break;
    }
    case STORE_REDIS: {
        int seen[COUNT(redis_keys)] = {0};
        if (is_null(p)) break;
        p->redis_line = p->key_line;
        section(p, path, redis_keys, COUNT(redis_keys), redis_value, NULL, seen,
                "a mapping (url, timeout, on_failure, ...)");
        if (seen[REDIS_URL] && seen[REDIS_CLUSTER])
            error_at(p, p->redis_line, path,
                     "give either url (one Redis) or cluster (seed nodes), not both");
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
    case LIM_COMMAND_TIMEOUT:
        if (get_duration(p, path, NS_MS, 3600 * NS_SEC, &d)) l->command_timeout = d;
        break;
    case LIM_OUTPUT:
        if (get_size(p, path, 4 * KiB, GiB, &v)) l->max_pending_output = (size_t)v;
        break;
    case LIM_OUTPUT_TOTAL:
        if (get_size(p, path, MiB, TiB, &v)) l->max_pending_output_total = (uint64_t)v;
        break;
    }
}

/* ---- admin ----------------------------------------------------------------- */

static void admin_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    sl_admin_config *a = &p->cfg->admin;
    int i;
    switch (key) {
    case ADMIN_RELOAD:
        i = get_enum(p, path, "reload mode", reload_modes, COUNT(reload_modes));
        if (i >= 0) a->reload = (uint8_t)i;
        break;
    case ADMIN_RELOAD_TOKEN: {
        /* a bearer token: printable ASCII without spaces, long enough not to
           be guessed, bounded so that comparing it costs nothing */
        const char *s = get_scalar(p, path, "a token of 16 to 256 printable characters");
        if (!s) break;
        size_t n = scalar_len(p);
        bool printable = true;
        for (size_t k = 0; k < n; k++)
            if (s[k] < 0x21 || s[k] > 0x7e) printable = false;
        if (n < 16 || n > SL_ADMIN_TOKEN_MAX || !printable) {
            error_at(p, cur_line(p), path,
                     "expected a token of 16 to %d printable characters without spaces, got "
                     "%zu bytes%s",
                     SL_ADMIN_TOKEN_MAX, n, printable ? "" : " with a space or control byte");
            break;
        }
        memcpy(a->reload_token, s, n);
        a->reload_token[n] = '\0';
        p->reload_token_line = cur_line(p);
        break;
    }
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
    case POL_DELAY_AFTER:
        if (get_uint(p, path, "a whole number of requests", 0, INT64_MAX, &u))
            pc->params.delay_after = (int64_t)u;
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
    if (b->seen[POL_DELAY_AFTER] && pc->params.delay_after != 0 &&
        (pc->params.algorithm != SL_LEAKY_QUEUE || pc->params.delay_after >= pc->params.burst)) {
        snprintf(field, sizeof field, "%s.delay_after", path);
        if (pc->params.algorithm != SL_LEAKY_QUEUE)
            error_at(p, b->seen[POL_DELAY_AFTER], field,
                     "only a leaky_queue delays requests (nginx's delay=D is leaky_queue, "
                     "burst B+1, delay_after D)");
        else
            error_at(p, b->seen[POL_DELAY_AFTER], field,
                     "%lld: must be below the burst (%lld; burst - 1 delays nothing)",
                     (long long)pc->params.delay_after, (long long)pc->params.burst);
        return;
    }

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
    else if (rc == SL_EOVERFLOW && is_bucket(pc->params.algorithm) &&
             pc->params.rate.limit <= (INT64_C(1) << 61) &&
             pc->params.rate.period <= 36600 * NS_DAY)
        /* a period the rate allows, too long for a bucket even at burst 1 */
        error_at(p, at, field,
                 "%s: %s (for a bucket, burst x period / gcd(N, period) is at most 2^61 ns: at "
                 "burst 1, a period of at most 26687d; windows take up to 36600d)",
                 rate, sl_strerror(rc));
    else if (rc == SL_EOVERFLOW)
        error_at(p, at, field, "%s: %s (at most 2^61 per period of at most 36600d)", rate,
                 sl_strerror(rc));
    else
        error_at(p, at, field, "%s", sl_strerror(rc));
}

/* Makes room for one more element in a growing array `arr` of n elements
 * (the capacity doubles from `first`) and returns the array, moved or not.
 * On failure reports "out of memory" at line/field, marks the parse fatal
 * and returns NULL (arr is then unchanged and still owned by the caller). */
static void *grow_array(parser *p, void *arr, size_t *cap, size_t n, size_t elem, size_t first,
                        int line, const char *field) {
    if (n < *cap) return arr;
    size_t ncap = *cap ? 2 * *cap : first;
    void *na = realloc(arr, ncap * elem);
    if (!na) {
        error_at(p, line, field, "out of memory");
        p->fatal = true;
        return NULL;
    }
    *cap = ncap;
    return na;
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

/* ---- identity, tiers, quotas, costs, exemptions, rules (docs/identity.md) ---- */

enum {
    ID_TRUSTED,
    ID_FORWARDED,
    ID_V4,
    ID_V6,
    ID_CLIENT_IP_HEADER,
    ID_METHOD_HEADER,
    ID_URI_HEADER,
    ID_API_KEYS
};
static const char *const identity_keys[] = {"trusted_proxies", "forwarded_header", "ipv4_prefix",
                                            "ipv6_prefix",     "client_ip_header", "method_header",
                                            "uri_header",      "api_keys"};

enum { AK_FILE, AK_HEADER, AK_BEARER, AK_QUERY, AK_REQUIRED };
static const char *const api_keys_keys[] = {"file", "header", "bearer", "query", "required"};

enum { QU_NAME, QU_LIMIT, QU_PER, QU_SHADOW, QU_NKEYS };
static const char *const quota_keys[] = {"name", "limit", "per", "shadow"};
static const char *const quota_periods[] = {"day", "month"};

enum { CO_METHOD, CO_PATH, CO_COST };
static const char *const cost_keys[] = {"method", "path", "cost"};

enum { EX_PATHS, EX_CIDRS, EX_TIERS };
static const char *const exempt_keys[] = {"paths", "cidrs", "tiers"};

enum { RU_NAME, RU_METHOD, RU_PATH, RU_SHADOW, RU_LIMITS, RU_NKEYS };
static const char *const rule_keys[] = {"name", "method", "path", "shadow", "limits"};

enum { LI_POLICY, LI_BY, LI_COST, LI_NKEYS };
static const char *const limit_keys[] = {"policy", "by", "cost"};

enum { TO_RATE, TO_BURST, TO_LIMIT };
static const char *const override_keys[] = {"rate", "burst", "limit"};

static const char *const method_names[] = {"GET",   "HEAD",   "POST",   "PUT",
                                           "PATCH", "DELETE", "OPTIONS"};
static const char *const source_names[] = {"api_key", "org", "ip", "route", "global"};
static const uint8_t source_values[] = {SL_SRC_API_KEY, SL_SRC_ORG, SL_SRC_IP, SL_SRC_ROUTE,
                                        SL_SRC_GLOBAL};

#define COST_MAX      INT64_C(1000000000000) /* as /v1/check's cost */
#define QUOTA_MAX     (INT64_C(1) << 61)
#define MONTH_PERIOD  (31 * NS_DAY) /* a calendar quota's table period, see policy.c */
#define MAX_TIER_REFS SL_CONFIG_MAX_TIERS

/* What the identity sections keep until the whole file is read: exempt.tiers
 * names can only be resolved once tiers: is known, wherever it is. */
typedef struct ident_parse {
    char tier_names[MAX_TIER_REFS][SL_POLICY_NAME_MAX + 1];
    int tier_lines[MAX_TIER_REFS];
    size_t ntier_names;
    size_t rules_cap, costs_cap, tiers_cap;
    int required_line;
} ident_parse;

static bool name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
           ch == '-';
}

/* A name as policies have them: [a-z0-9_.-], 1 to 63 bytes. False after
 * reporting. */
static bool check_name(parser *p, int line, const char *path, const char *s, size_t n) {
    char q[64];
    quote(q, sizeof q, s, n);
    if (n == 0) return error_at(p, line, path, "the name is empty"), false;
    if (n > SL_POLICY_NAME_MAX)
        return error_at(p, line, path, "%s is longer than %d characters", q, SL_POLICY_NAME_MAX),
               false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]))
            return error_at(p, line, path,
                            "%s: a name uses only lower-case letters, digits, _ . and -", q),
                   false;
    return true;
}

/* A header field name (RFC 9110 token), into out. */
static void get_header_name(parser *p, const char *path, char *out, bool may_be_off) {
    const char *s = get_scalar(p, path,
                               may_be_off ? "a header name such as X-API-Key, or off"
                                          : "a header name such as X-Real-IP");
    if (!s) return;
    size_t n = scalar_len(p);
    if (may_be_off && strcmp(s, "off") == 0) {
        out[0] = '\0';
        return;
    }
    char q[64];
    quote(q, sizeof q, s, n);
    bool ok = n > 0 && n <= SL_HEADER_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             strchr("!#$%&'*+-.^_`|~", c) != NULL;
    }
    if (!ok) {
        error_at(p, cur_line(p), path, "%s is not a header name (1 to %d letters, digits or - _ .)",
                 q, SL_HEADER_NAME_MAX);
        return;
    }
    memcpy(out, s, n + 1);
}

/* A list of CIDR blocks, appended to *arr. */
static void cidr_list(parser *p, const char *path, sl_cidr **arr, size_t *n) {
    if (is_null(p)) return;
    if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
        expected(p, path, "a list of CIDR blocks such as [10.0.0.0/8, \"2001:db8::/32\"]");
        return;
    }
    size_t cap = *n;
    for (size_t i = 0;; i++) {
        if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) return;
        char item[PATH_SIZE];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        if (i >= SL_CONFIG_MAX_CIDRS) {
            if (i == SL_CONFIG_MAX_CIDRS)
                error_at(p, cur_line(p), item, "too many blocks (at most %d)", SL_CONFIG_MAX_CIDRS);
            skip(p);
            continue;
        }
        const char *s = get_scalar(p, item, "a CIDR block such as 10.0.0.0/8");
        if (!s) continue;
        sl_cidr c;
        const char *why = "";
        if (sl__cidr_parse(s, scalar_len(p), &c, &why) != 0) {
            char q[64];
            quote(q, sizeof q, s, scalar_len(p));
            error_at(p, cur_line(p), item, "cannot use %s: %s", q, why);
            continue;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            sl_cidr *na = realloc(*arr, cap * sizeof *na);
            if (!na) {
                error_at(p, cur_line(p), item, "out of memory");
                p->fatal = true;
                return;
            }
            *arr = na;
        }
        (*arr)[(*n)++] = c;
    }
}

/* A method or a list of methods, as a mask. */
static void get_methods(parser *p, const char *path, unsigned *mask) {
    char list[96];
    join_names(list, sizeof list, method_names, COUNT(method_names));
    bool seq = p->ev.type == YAML_SEQUENCE_START_EVENT;
    for (size_t i = 0;; i++) {
        char item[PATH_SIZE];
        if (seq) {
            if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) return;
            snprintf(item, sizeof item, "%s[%zu]", path, i);
        } else {
            snprintf(item, sizeof item, "%s", path);
        }
        const char *s = get_scalar(p, item, list);
        if (s) {
            size_t k = 0;
            while (k < COUNT(method_names) && strcmp(s, method_names[k]) != 0) k++;
            if (k < COUNT(method_names)) {
                *mask |= 1u << k;
            } else {
                char q[64];
                quote(q, sizeof q, s, scalar_len(p));
                const char *near = suggest(s, scalar_len(p), method_names, COUNT(method_names));
                if (near)
                    error_at(p, cur_line(p), item, "unknown method %s (did you mean %s?)", q, near);
                else
                    error_at(p, cur_line(p), item, "unknown method %s (expected %s)", q, list);
            }
        }
        if (!seq) return;
    }
}

/* A path pattern: a star (any), "/exact", a subtree "/tree/" + star, or a
 * prefix "/prefix" + star (docs/identity.md). */
static void get_pattern(parser *p, const char *path, char *out) {
    const char *s = get_scalar(p, path, "a path such as /login, /api/* or *");
    if (!s) return;
    size_t n = scalar_len(p);
    char q[64];
    quote(q, sizeof q, s, n);
    if (n == 1 && s[0] == '*') {
        out[0] = '\0';
        return;
    }
    const char *why = NULL;
    if (n == 0 || s[0] != '/')
        why = "a path starts with / (or is * for every path)";
    else if (n > SL_PATTERN_MAX)
        why = "longer than 255 bytes";
    for (size_t i = 0; !why && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#')
            why = "a path has no spaces, control characters, ? or #";
        else if (c == '*' && i + 1 != n)
            why = "* may only end a path (/api/* or /api*)";
    }
    if (why) {
        error_at(p, cur_line(p), path, "cannot use %s: %s", q, why);
        return;
    }
    memcpy(out, s, n + 1);
}

static void api_keys_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    sl_identity_config *id = &p->cfg->identity;
    bool flag;
    switch (key) {
    case AK_FILE: {
        const char *s = get_scalar(p, path, "the path of a key file");
        if (!s) break;
        if (scalar_len(p) >= sizeof id->key_file) {
            error_at(p, cur_line(p), path, "the path is longer than %zu bytes",
                     sizeof id->key_file - 1);
            break;
        }
        memcpy(id->key_file, s, scalar_len(p) + 1);
        id->key_file_line = cur_line(p);
        break;
    }
    case AK_HEADER:
        get_header_name(p, path, id->key_header, true);
        break;
    case AK_BEARER:
        if (get_bool(p, path, &flag)) id->key_bearer = flag;
        break;
    case AK_QUERY: {
        const char *s = get_scalar(p, path, "a query parameter name such as api_key, or off");
        if (!s) break;
        size_t n = scalar_len(p);
        bool ok = n > 0 && n <= SL_HEADER_NAME_MAX;
        for (size_t i = 0; ok && i < n; i++)
            ok = name_char((char)(s[i] | ((s[i] >= 'A' && s[i] <= 'Z') ? 0x20 : 0)));
        if (strcmp(s, "off") == 0) {
            id->key_query[0] = '\0';
        } else if (!ok) {
            char q[64];
            quote(q, sizeof q, s, n);
            error_at(p, cur_line(p), path,
                     "%s is not a parameter name (1 to %d letters, digits or _ . -)", q,
                     SL_HEADER_NAME_MAX);
        } else {
            memcpy(id->key_query, s, n + 1);
        }
        break;
    }
    case AK_REQUIRED:
        if (get_bool(p, path, &flag)) id->key_required = flag;
        p->ident->required_line = p->key_line;
        break;
    }
}

static void identity_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    sl_identity_config *id = &p->cfg->identity;
    uint64_t u;
    switch (key) {
    case ID_TRUSTED:
        cidr_list(p, path, &id->trusted, &id->ntrusted);
        break;
    case ID_FORWARDED: {
        const char *s = get_scalar(p, path, "X-Forwarded-For or Forwarded");
        if (!s) break;
        if (strcasecmp(s, "x-forwarded-for") == 0) {
            id->forwarded = SL_FWD_XFF;
        } else if (strcasecmp(s, "forwarded") == 0) {
            id->forwarded = SL_FWD_FORWARDED;
        } else {
            char q[64];
            quote(q, sizeof q, s, scalar_len(p));
            error_at(p, cur_line(p), path,
                     "unknown header %s (expected X-Forwarded-For or Forwarded, RFC 7239)", q);
        }
        break;
    }
    case ID_V4:
        if (get_uint(p, path, "a prefix length from 1 to 32", 1, 32, &u))
            id->ipv4_prefix = (unsigned)u;
        break;
    case ID_V6:
        if (get_uint(p, path, "a prefix length from 1 to 128", 1, 128, &u))
            id->ipv6_prefix = (unsigned)u;
        break;
    case ID_CLIENT_IP_HEADER:
        get_header_name(p, path, id->client_ip_header, false);
        break;
    case ID_METHOD_HEADER:
        get_header_name(p, path, id->method_header, false);
        break;
    case ID_URI_HEADER:
        get_header_name(p, path, id->uri_header, false);
        break;
    case ID_API_KEYS: {
        int seen[COUNT(api_keys_keys)] = {0};
        section(p, path, api_keys_keys, COUNT(api_keys_keys), api_keys_value, NULL, seen,
                "a mapping of file, header, bearer, query, required");
        break;
    }
    }
}

/* ---- tiers ---- */

typedef void (*named_fn)(parser *p, void *obj, const char *key, size_t len, int line,
                         const char *path);

/* A mapping whose keys are names the user chose (tiers, policies in a tier):
 * calls fn for each with the value as the current event. */
static void each_named(parser *p, const char *parent, named_fn fn, void *obj) {
    for (;;) {
        if (!next(p) || p->ev.type == YAML_MAPPING_END_EVENT) return;
        int line = cur_line(p);
        if (p->ev.type != YAML_SCALAR_EVENT) {
            char got[96];
            describe(p, got, sizeof got);
            error_at(p, line, parent, "a key must be a plain word, got %s", got);
            skip(p);
            if (!next(p)) return;
            skip(p);
            continue;
        }
        char key[SL_POLICY_NAME_MAX + 2];
        size_t len = scalar_len(p);
        size_t keep = len < sizeof key - 1 ? len : sizeof key - 1;
        memcpy(key, scalar_text(p), keep);
        key[keep] = '\0';
        char path[PATH_SIZE];
        join_path(path, parent, scalar_text(p), len);
        if (memchr(scalar_text(p), '\0', len)) len = SL_POLICY_NAME_MAX + 1; /* refused below */
        if (!next(p)) return;
        fn(p, obj, key, len, line, path);
    }
}

static void override_value(parser *p, void *obj, int key, const char *path) {
    sl_tier_override *o = obj;
    uint64_t u;
    switch (key) {
    case TO_RATE: {
        const char *s = get_scalar(p, path, "a rate such as 50/s");
        if (!s) break;
        int rc = sl_rate_parse(s, &o->rate);
        if (rc != SL_OK) {
            char q[64];
            quote(q, sizeof q, s, scalar_len(p));
            error_at(p, cur_line(p), path,
                     "cannot parse %s (expected N/s, N/m, N/h, N/d or N/<duration> such as "
                     "100/10s)",
                     q);
        } else {
            o->have_rate = true;
        }
        break;
    }
    case TO_BURST:
        if (get_uint(p, path, "a whole number of requests", 1, INT64_MAX, &u)) {
            o->burst = (int64_t)u;
            o->have_burst = true;
        }
        break;
    case TO_LIMIT:
        if (get_uint(p, path, "a whole number of requests", 1, (uint64_t)QUOTA_MAX, &u)) {
            o->limit = (int64_t)u;
            o->have_limit = true;
        }
        break;
    }
}

static void tier_policy(parser *p, void *obj, const char *key, size_t len, int line,
                        const char *path) {
    sl_tier_config *t = obj;
    if (!check_name(p, line, path, key, len)) {
        skip(p);
        return;
    }
    for (size_t i = 0; i < t->noverrides; i++) {
        if (strcmp(t->overrides[i].policy, key) == 0) {
            error_at(p, line, path, "duplicate key (first at line %d)", t->overrides[i].line);
            skip(p);
            return;
        }
    }
    if (p->ev.type != YAML_MAPPING_START_EVENT) {
        expected(p, path, "a mapping of rate and burst (a policy) or limit (a quota)");
        return;
    }
    sl_tier_override *no = realloc(t->overrides, (t->noverrides + 1) * sizeof *no);
    if (!no) {
        error_at(p, line, path, "out of memory");
        p->fatal = true;
        return;
    }
    t->overrides = no;
    sl_tier_override *o = &t->overrides[t->noverrides++];
    memset(o, 0, sizeof *o);
    memcpy(o->policy, key, len + 1);
    o->line = line;
    int seen[COUNT(override_keys)] = {0};
    each_key(p, path, override_keys, COUNT(override_keys), override_value, o, seen);
}

static void tier_entry(parser *p, void *obj, const char *key, size_t len, int line,
                       const char *path) {
    ident_parse *ip = obj;
    sl_config *c = p->cfg;
    if (!check_name(p, line, path, key, len)) {
        skip(p);
        return;
    }
    for (size_t i = 0; i < c->ntiers; i++) {
        if (strcmp(c->tiers[i].name, key) == 0) {
            error_at(p, line, path, "duplicate tier (first at line %d)", c->tiers[i].line);
            skip(p);
            return;
        }
    }
    if (c->ntiers == SL_CONFIG_MAX_TIERS) {
        error_at(p, line, path, "too many tiers (at most %d)", SL_CONFIG_MAX_TIERS);
        skip(p);
        return;
    }
    sl_tier_config *tiers =
        grow_array(p, c->tiers, &ip->tiers_cap, c->ntiers, sizeof *c->tiers, 4, line, path);
    if (!tiers) return;
    c->tiers = tiers;
    sl_tier_config *t = &c->tiers[c->ntiers++];
    memset(t, 0, sizeof *t);
    memcpy(t->name, key, len + 1);
    t->line = line;
    if (is_null(p)) return; /* a tier without overrides (admin: ~) */
    if (p->ev.type != YAML_MAPPING_START_EVENT) {
        expected(p, path, "a mapping of policy names to their rate, burst or limit");
        return;
    }
    each_named(p, path, tier_policy, t);
}

static void parse_tiers(parser *p, const char *path) {
    if (is_null(p)) return;
    if (p->ev.type != YAML_MAPPING_START_EVENT) {
        expected(p, path, "a mapping of tier names (free: {api: {rate: 5/s}}, ...)");
        return;
    }
    each_named(p, path, tier_entry, p->ident);
}

/* ---- quotas ---- */

typedef struct quota_build {
    policy_build b;
    int seen[QU_NKEYS];
    int per;
    int64_t limit;
} quota_build;

static void quota_value(parser *p, void *obj, int key, const char *path) {
    quota_build *q = obj;
    uint64_t u;
    bool flag;
    switch (key) {
    case QU_NAME:
        policy_name(p, &q->b, path);
        break;
    case QU_LIMIT:
        if (get_uint(p, path, "a whole number of requests", 1, (uint64_t)QUOTA_MAX, &u))
            q->limit = (int64_t)u;
        break;
    case QU_PER:
        q->per = get_enum(p, path, "quota period", quota_periods, COUNT(quota_periods));
        break;
    case QU_SHADOW:
        if (get_bool(p, path, &flag)) q->b.pc->shadow = flag;
        break;
    }
}

static void parse_quotas(parser *p, const char *path) {
    if (is_null(p)) return;
    if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
        expected(p, path, "a list of quotas (- name: ..., limit: ..., per: month)");
        return;
    }
    for (size_t i = 0;; i++) {
        if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) return;
        char item[PATH_SIZE];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        if (p->cfg->npolicies >= SL_CONFIG_MAX_POLICIES) {
            error_at(p, cur_line(p), item, "too many policies and quotas (at most %d)",
                     SL_CONFIG_MAX_POLICIES);
            skip(p);
            continue;
        }
        if (p->ev.type != YAML_MAPPING_START_EVENT) {
            expected(p, item, "a quota (a mapping of name, limit and per)");
            continue;
        }
        int line = cur_line(p);
        quota_build q = {.b = {.index = p->cfg->npolicies}, .per = -1};
        q.b.pc = new_policy(p);
        if (!q.b.pc) {
            error_at(p, line, item, "out of memory");
            p->fatal = true;
            return;
        }
        q.b.pc->line = line;
        q.b.pc->quota = true;
        each_key(p, item, quota_keys, COUNT(quota_keys), quota_value, &q, q.seen);
        if (p->fatal) return;
        static const struct {
            int key;
            const char *why;
        } required[] = {{QU_NAME, "every quota needs a name"},
                        {QU_LIMIT, "every quota needs a limit"},
                        {QU_PER, "every quota needs a period: per: day or per: month"}};
        for (size_t k = 0; k < COUNT(required); k++) {
            if (q.seen[required[k].key]) continue;
            char field[PATH_SIZE + 16];
            snprintf(field, sizeof field, "%s.%s", item, quota_keys[required[k].key]);
            error_at(p, line, field, "missing (%s)", required[k].why);
        }
        sl_policy_config *pc = q.b.pc;
        pc->params.algorithm = SL_FIXED_WINDOW;
        pc->params.rate.limit = q.limit > 0 ? q.limit : 1;
        /* A day is a fixed window aligned to the Unix epoch: midnight UTC. A
         * month is a window on a calendar clock (policy.c) of 31 days. */
        pc->params.rate.period = q.per == 1 ? MONTH_PERIOD : NS_DAY;
        pc->calendar = q.per == 1 ? SL_CALENDAR_MONTH : SL_CALENDAR_NONE;
    }
}

/* ---- costs ---- */

static void cost_value(parser *p, void *obj, int key, const char *path) {
    sl_cost_config *c = obj;
    uint64_t u;
    switch (key) {
    case CO_METHOD:
        get_methods(p, path, &c->match.methods);
        break;
    case CO_PATH:
        get_pattern(p, path, c->match.path);
        break;
    case CO_COST:
        if (get_uint(p, path, "a cost from 0 to 10^12", 0, (uint64_t)COST_MAX, &u))
            c->cost = (int64_t)u;
        break;
    }
}

static void parse_costs(parser *p, const char *path) {
    sl_config *cfg = p->cfg;
    if (is_null(p)) return;
    if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
        expected(p, path, "a list of costs (- {method: POST, path: /exports, cost: 50})");
        return;
    }
    for (size_t i = 0;; i++) {
        if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) return;
        char item[PATH_SIZE];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        if (i >= SL_CONFIG_MAX_COSTS) {
            if (i == SL_CONFIG_MAX_COSTS)
                error_at(p, cur_line(p), item, "too many costs (at most %d)", SL_CONFIG_MAX_COSTS);
            skip(p);
            continue;
        }
        if (p->ev.type != YAML_MAPPING_START_EVENT) {
            expected(p, item, "a cost (a mapping of method, path and cost)");
            continue;
        }
        sl_cost_config *costs = grow_array(p, cfg->costs, &p->ident->costs_cap, cfg->ncosts,
                                           sizeof *cfg->costs, 8, cur_line(p), item);
        if (!costs) return;
        cfg->costs = costs;
        int line = cur_line(p);
        sl_cost_config *c = &cfg->costs[cfg->ncosts++];
        memset(c, 0, sizeof *c);
        c->line = line;
        int seen[COUNT(cost_keys)] = {0};
        each_key(p, item, cost_keys, COUNT(cost_keys), cost_value, c, seen);
        if (!seen[CO_COST]) {
            char field[PATH_SIZE + 8];
            snprintf(field, sizeof field, "%s.cost", item);
            error_at(p, line, field, "missing (what a matching request costs)");
        }
    }
}

/* ---- exemptions ---- */

static void exempt_value(parser *p, void *obj, int key, const char *path) {
    (void)obj;
    sl_exempt_config *ex = &p->cfg->exempt;
    ident_parse *ip = p->ident;
    if (key == EX_CIDRS) {
        cidr_list(p, path, &ex->cidrs, &ex->ncidrs);
        return;
    }
    if (is_null(p)) return;
    if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
        expected(p, path,
                 key == EX_PATHS ? "a list of paths such as [/healthz, /readyz]"
                                 : "a list of tier names such as [admin]");
        return;
    }
    for (size_t i = 0;; i++) {
        if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) return;
        char item[PATH_SIZE];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        size_t max = key == EX_PATHS ? SL_CONFIG_MAX_EXEMPT : MAX_TIER_REFS;
        if (i >= max) {
            if (i == max) error_at(p, cur_line(p), item, "too many entries (at most %zu)", max);
            skip(p);
            continue;
        }
        if (key == EX_PATHS) {
            sl_route_match *m = &ex->paths[ex->npaths];
            memset(m, 0, sizeof *m);
            m->path[0] = '\x01'; /* unset until get_pattern succeeds */
            get_pattern(p, item, m->path);
            if (m->path[0] != '\x01') ex->npaths++;
        } else {
            const char *s = get_scalar(p, item, "a tier name");
            if (!s || !check_name(p, cur_line(p), item, s, scalar_len(p))) continue;
            memcpy(ip->tier_names[ip->ntier_names], s, scalar_len(p) + 1);
            ip->tier_lines[ip->ntier_names++] = cur_line(p);
        }
    }
}

/* ---- rules ---- */

typedef struct rule_build {
    sl_rule_config *r;
    size_t index;
} rule_build;

static void limit_by(parser *p, sl_limit_config *l, const char *path) {
    bool seq = p->ev.type == YAML_SEQUENCE_START_EVENT;
    const char *list = "api_key, org, ip, route, header:NAME or global";
    for (size_t i = 0;; i++) {
        char item[PATH_SIZE];
        if (seq) {
            if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) break;
            snprintf(item, sizeof item, "%s[%zu]", path, i);
        } else {
            snprintf(item, sizeof item, "%s", path);
        }
        const char *s = get_scalar(p, item, list);
        if (s) {
            size_t n = scalar_len(p);
            char q[64];
            quote(q, sizeof q, s, n);
            uint8_t src = 0;
            for (size_t k = 0; k < COUNT(source_names); k++)
                if (strcmp(s, source_names[k]) == 0) src = source_values[k];
            if (!src && strncmp(s, "header:", 7) == 0) {
                const char *h = s + 7;
                size_t hn = n - 7;
                bool ok = hn > 0 && hn <= SL_HEADER_NAME_MAX;
                for (size_t k = 0; ok && k < hn; k++) {
                    unsigned char c = (unsigned char)h[k];
                    ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c) != NULL;
                }
                if (!ok) {
                    error_at(p, cur_line(p), item, "%s: expected header:NAME with a header name",
                             q);
                } else if (l->header[0]) {
                    error_at(p, cur_line(p), item, "%s: one header per limit", q);
                } else {
                    memcpy(l->header, h, hn + 1);
                    src = SL_SRC_HEADER;
                }
                if (!src) goto next_item;
            }
            if (!src) {
                const char *near = suggest(s, n, source_names, COUNT(source_names));
                if (near)
                    error_at(p, cur_line(p), item, "unknown key source %s (did you mean %s?)", q,
                             near);
                else
                    error_at(p, cur_line(p), item, "unknown key source %s (expected %s)", q, list);
            } else if (l->nby == SL_LIMIT_MAX_SOURCES) {
                error_at(p, cur_line(p), item, "at most %d key sources per limit",
                         SL_LIMIT_MAX_SOURCES);
            } else {
                bool dup = false;
                for (unsigned k = 0; k < l->nby; k++) dup |= l->by[k] == src;
                if (dup && src != SL_SRC_HEADER)
                    error_at(p, cur_line(p), item, "%s is listed twice", q);
                else
                    l->by[l->nby++] = src;
            }
        }
    next_item:
        if (!seq) break;
    }
    if (l->nby == 0 && !p->fatal) return;
    /* global with anything else is the other thing alone: refuse the confusion */
    for (unsigned k = 0; k < l->nby; k++)
        if (l->by[k] == SL_SRC_GLOBAL && l->nby > 1)
            error_at(p, p->key_line, path, "global is one key for everyone: use it alone");
}

static void limit_value(parser *p, void *obj, int key, const char *path) {
    sl_limit_config *l = obj;
    uint64_t u;
    switch (key) {
    case LI_POLICY: {
        const char *s = get_scalar(p, path, "the name of a policy or quota");
        if (s && check_name(p, cur_line(p), path, s, scalar_len(p)))
            memcpy(l->policy, s, scalar_len(p) + 1);
        break;
    }
    case LI_BY:
        limit_by(p, l, path);
        break;
    case LI_COST:
        if (get_uint(p, path, "a cost from 0 to 10^12", 0, (uint64_t)COST_MAX, &u))
            l->cost = (int64_t)u;
        break;
    }
}

static void rule_limits(parser *p, sl_rule_config *r, const char *path) {
    if (is_null(p)) return;
    if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
        expected(p, path, "a list of limits (- {policy: api, by: api_key})");
        return;
    }
    for (size_t i = 0;; i++) {
        if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) return;
        char item[PATH_SIZE];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        if (i >= SL_RULE_MAX_LIMITS) {
            if (i == SL_RULE_MAX_LIMITS)
                error_at(p, cur_line(p), item,
                         "too many limits (at most %d: one request checks at most that many)",
                         SL_RULE_MAX_LIMITS);
            skip(p);
            continue;
        }
        if (p->ev.type != YAML_MAPPING_START_EVENT) {
            expected(p, item, "a limit (a mapping of policy, by and cost)");
            continue;
        }
        int line = cur_line(p);
        sl_limit_config *l = &r->limits[r->nlimits++];
        memset(l, 0, sizeof *l);
        l->line = line;
        l->cost = -1;
        int seen[LI_NKEYS] = {0};
        each_key(p, item, limit_keys, COUNT(limit_keys), limit_value, l, seen);
        if (p->fatal) return;
        static const struct {
            int key;
            const char *why;
        } required[] = {{LI_POLICY, "the policy or quota this limit checks"},
                        {LI_BY, "what the limit counts by: api_key, org, ip, route, "
                                "header:NAME or global"}};
        for (size_t k = 0; k < COUNT(required); k++) {
            if (seen[required[k].key]) continue;
            char field[PATH_SIZE + 16];
            snprintf(field, sizeof field, "%s.%s", item, limit_keys[required[k].key]);
            error_at(p, line, field, "missing (%s)", required[k].why);
        }
    }
}

static void rule_value(parser *p, void *obj, int key, const char *path) {
    rule_build *b = obj;
    sl_rule_config *r = b->r;
    bool flag;
    switch (key) {
    case RU_NAME: {
        const char *s = get_scalar(p, path, "a name such as api ([a-z0-9_.-]+)");
        if (!s || !check_name(p, cur_line(p), path, s, scalar_len(p))) break;
        for (size_t i = 0; i < b->index; i++) {
            if (strcmp(p->cfg->rules[i].name, s) == 0) {
                char q[64];
                quote(q, sizeof q, s, scalar_len(p));
                error_at(p, cur_line(p), path, "duplicate rule name %s (first at line %d)", q,
                         p->cfg->rules[i].line);
                return;
            }
        }
        memcpy(r->name, s, scalar_len(p) + 1);
        break;
    }
    case RU_METHOD:
        get_methods(p, path, &r->match.methods);
        break;
    case RU_PATH:
        get_pattern(p, path, r->match.path);
        break;
    case RU_SHADOW:
        if (get_bool(p, path, &flag)) r->shadow = flag;
        break;
    case RU_LIMITS:
        rule_limits(p, r, path);
        break;
    }
}

static void parse_rules(parser *p, const char *path) {
    sl_config *cfg = p->cfg;
    if (is_null(p)) return;
    if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
        expected(p, path, "a list of rules (- name: ..., path: ..., limits: [...])");
        return;
    }
    for (size_t i = 0;; i++) {
        if (!next(p) || p->ev.type == YAML_SEQUENCE_END_EVENT) return;
        char item[PATH_SIZE];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        if (i >= SL_CONFIG_MAX_RULES) {
            if (i == SL_CONFIG_MAX_RULES)
                error_at(p, cur_line(p), item, "too many rules (at most %d)", SL_CONFIG_MAX_RULES);
            skip(p);
            continue;
        }
        if (p->ev.type != YAML_MAPPING_START_EVENT) {
            expected(p, item, "a rule (a mapping of name, method, path, limits, shadow)");
            continue;
        }
        sl_rule_config *rules = grow_array(p, cfg->rules, &p->ident->rules_cap, cfg->nrules,
                                           sizeof *cfg->rules, 4, cur_line(p), item);
        if (!rules) return;
        cfg->rules = rules;
        int line = cur_line(p);
        rule_build b = {.r = &cfg->rules[cfg->nrules], .index = cfg->nrules};
        cfg->nrules++;
        memset(b.r, 0, sizeof *b.r);
        b.r->line = line;
        int seen[RU_NKEYS] = {0};
        each_key(p, item, rule_keys, COUNT(rule_keys), rule_value, &b, seen);
        if (p->fatal) return;
        if (!seen[RU_NAME]) {
            char field[PATH_SIZE + 8];
            snprintf(field, sizeof field, "%s.name", item);
            error_at(p, line, field, "missing (every rule needs a name)");
        }
        if (!seen[RU_LIMITS]) {
            char field[PATH_SIZE + 8];
            snprintf(field, sizeof field, "%s.limits", item);
            error_at(p, line, field, "missing (the limits a matching request must pass)");
        }
    }
}

/* ---- checks across sections, and the key file ---- */

int sl__config_tier(const sl_config *c, const char *name, size_t len) {
    for (size_t i = 0; c && i < c->ntiers; i++)
        if (strlen(c->tiers[i].name) == len && memcmp(c->tiers[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

typedef struct keyfile_ctx {
    parser *p;
    char names[200];
} keyfile_ctx;

static int keyfile_tier(void *ctx, const char *name, size_t len, const char **names) {
    keyfile_ctx *k = ctx;
    *names = k->names;
    return sl__config_tier(k->p->cfg, name, len);
}

static void keyfile_error(void *ctx, int line, const char *msg) {
    keyfile_ctx *k = ctx;
    parser *p = k->p;
    const char *file = p->cfg->identity.key_file;
    if (line > 0)
        error_at(p, p->cfg->identity.key_file_line, "identity.api_keys.file", "%s:%d: %s", file,
                 line, msg);
    else
        error_at(p, p->cfg->identity.key_file_line, "identity.api_keys.file", "%s: %s", file, msg);
}

static void load_key_file(parser *p) {
    sl_identity_config *id = &p->cfg->identity;
    char path[1024];
    const char *slash = strrchr(p->source, '/');
    if (id->key_file[0] == '/' || !slash)
        snprintf(path, sizeof path, "%s", id->key_file);
    else
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - p->source), p->source, id->key_file);
    keyfile_ctx k = {.p = p};
    const char *names[SL_CONFIG_MAX_TIERS];
    for (size_t i = 0; i < p->cfg->ntiers; i++) names[i] = p->cfg->tiers[i].name;
    join_names(k.names, sizeof k.names, names, p->cfg->ntiers);
    sl__apikeys_load(path, keyfile_tier, &k, keyfile_error, &k, &id->keys);
}

static const sl_policy_config *find_policy(const sl_config *c, const char *name) {
    return sl__config_policy(c, name, strlen(name));
}

static void check_identity(parser *p) {
    sl_config *c = p->cfg;
    char field[PATH_SIZE + 64];
    for (size_t i = 0; i < c->nrules; i++) {
        const sl_rule_config *r = &c->rules[i];
        for (unsigned j = 0; j < r->nlimits; j++) {
            const sl_limit_config *l = &r->limits[j];
            snprintf(field, sizeof field, "rules[%zu].limits[%u].policy", i, j);
            if (l->policy[0] && !find_policy(c, l->policy))
                error_at(p, l->line, field, "no policy or quota named \"%s\"", l->policy);
            for (unsigned k = 0; k < l->nby; k++) {
                if ((l->by[k] == SL_SRC_API_KEY || l->by[k] == SL_SRC_ORG) &&
                    !c->identity.key_file[0]) {
                    snprintf(field, sizeof field, "rules[%zu].limits[%u].by", i, j);
                    error_at(p, l->line, field, "%s needs API keys: set identity.api_keys.file",
                             l->by[k] == SL_SRC_API_KEY ? "api_key" : "org");
                    break;
                }
            }
        }
    }
    for (size_t i = 0; i < c->ntiers; i++) {
        const sl_tier_config *t = &c->tiers[i];
        for (size_t j = 0; j < t->noverrides; j++) {
            const sl_tier_override *o = &t->overrides[j];
            snprintf(field, sizeof field, "tiers.%s.%s", t->name, o->policy);
            const sl_policy_config *pc = find_policy(c, o->policy);
            if (!pc) {
                error_at(p, o->line, field, "no policy or quota named \"%s\"", o->policy);
                continue;
            }
            if (strlen(pc->name) + 1 + strlen(t->name) > SL_POLICY_NAME_MAX) {
                error_at(p, o->line, field,
                         "%s:%s is longer than %d characters (its table's name): use a shorter "
                         "tier or policy name",
                         pc->name, t->name, SL_POLICY_NAME_MAX);
                continue;
            }
            if (pc->quota && (o->have_rate || o->have_burst)) {
                error_at(p, o->line, field, "%s is a quota: a tier sets its limit", pc->name);
                continue;
            }
            if (!pc->quota && o->have_limit) {
                error_at(p, o->line, field, "%s is a policy: a tier sets its rate and burst",
                         pc->name);
                continue;
            }
            if (!o->have_rate && !o->have_burst && !o->have_limit) {
                error_at(p, o->line, field, "empty: set %s", pc->quota ? "limit" : "rate or burst");
                continue;
            }
            sl_params pp = pc->params;
            if (o->have_rate) pp.rate = o->rate;
            if (o->have_burst) pp.burst = is_bucket(pp.algorithm) ? o->burst : 0;
            if (o->have_limit) pp.rate.limit = o->limit;
            int rc = sl_params_validate(&pp);
            if (rc != SL_OK) error_at(p, o->line, field, "%s", sl_strerror(rc));
        }
    }
    ident_parse *ip = p->ident;
    for (size_t i = 0; i < ip->ntier_names; i++) {
        int t = sl__config_tier(c, ip->tier_names[i], strlen(ip->tier_names[i]));
        snprintf(field, sizeof field, "exempt.tiers[%zu]", i);
        if (t < 0)
            error_at(p, ip->tier_lines[i], field, "no tier named \"%s\" (declare it under tiers:)",
                     ip->tier_names[i]);
        else
            c->exempt.tiers |= UINT64_C(1) << t;
    }
    if (c->identity.key_required && !c->identity.key_file[0])
        error_at(p, p->ident->required_line, "identity.api_keys.required",
                 "every key would be unknown: set identity.api_keys.file");
    if (c->identity.key_file[0] && p->errs->n == 0) load_key_file(p);
}

static void free_identity(sl_config *c) {
    free(c->identity.trusted);
    sl__apikeys_release(c->identity.keys);
    for (size_t i = 0; i < c->ntiers; i++) free(c->tiers[i].overrides);
    free(c->tiers);
    free(c->rules);
    free(c->costs);
    free(c->exempt.cidrs);
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
        if (p->fatal) break;
        if (c->redis.cluster && c->redis.nseeds == 0)
            error_at(p, p->redis_line, "store.redis.cluster", "give at least one seed node");
        if (strcmp(c->store_type, "redis") == 0 && c->redis.cluster && c->redis.db != 0)
            error_at(p, p->redis_line, "store.redis", "Redis Cluster has only database 0");
        break;
    case TOP_DOMAINS: {
        /* envoyproxy/ratelimit rule files: loaded and checked at the end of
         * the parse (sl__domain_rules_load). A relative path is relative to
         * the config file's directory. */
        const char *s = get_scalar(p, path, "a directory or file of rule files");
        if (!s) break;
        c->domains_line = p->key_line;
        const char *slash = strrchr(p->source, '/');
        int dir = s[0] != '/' && p->source[0] != '<' && slash ? (int)(slash - p->source + 1) : 0;
        if ((size_t)snprintf(c->domains, sizeof c->domains, "%.*s%s", dir, p->source, s) >=
            sizeof c->domains) {
            error_at(p, cur_line(p), path, "the path is too long (at most %zu bytes)",
                     sizeof c->domains - 1);
            c->domains[0] = '\0';
        }
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
    case TOP_IDENTITY: {
        int seen[COUNT(identity_keys)] = {0};
        section(p, path, identity_keys, COUNT(identity_keys), identity_value, NULL, seen,
                "a mapping of trusted_proxies, api_keys, ...");
        break;
    }
    case TOP_TIERS:
        parse_tiers(p, path);
        break;
    case TOP_QUOTAS:
        parse_quotas(p, path);
        break;
    case TOP_COSTS:
        parse_costs(p, path);
        break;
    case TOP_EXEMPT: {
        int seen[COUNT(exempt_keys)] = {0};
        section(p, path, exempt_keys, COUNT(exempt_keys), exempt_value, NULL, seen,
                "a mapping of paths, cidrs and tiers");
        break;
    }
    case TOP_RULES:
        parse_rules(p, path);
        break;
    case TOP_SHADOW: {
        bool flag;
        if (get_bool(p, path, &flag)) c->shadow = flag;
        break;
    }
    case TOP_ADMIN: {
        int seen[COUNT(admin_keys)] = {0};
        p->admin_line = p->key_line;
        section(p, path, admin_keys, COUNT(admin_keys), admin_value, NULL, seen,
                "a mapping of reload and reload_token");
        if (p->fatal) break;
        if (c->admin.reload == SL_RELOAD_TOKEN && !c->admin.reload_token[0] && !seen[1])
            error_at(p, seen[0] ? seen[0] : p->admin_line, "admin.reload",
                     "reload: token needs admin.reload_token (the bearer token to ask for)");
        else if (c->admin.reload != SL_RELOAD_TOKEN && c->admin.reload_token[0])
            error_at(p, p->reload_token_line, "admin.reload_token",
                     "only used with reload: token (set admin.reload: token, or remove it)");
        break;
    }
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
    c->redis = (sl_redis_config){.addr = {.host = "127.0.0.1", .port = 6379},
                                 .timeout = 250 * NS_MS,
                                 .on_failure = SL_FAIL_LOCAL,
                                 .expected_instances = 1,
                                 .sync_interval = 100 * NS_MS,
                                 .prefix = "sluice:",
                                 .breaker_failures = 5,
                                 .breaker_cooldown = NS_SEC,
                                 .breaker_window = 500 * NS_MS,
                                 .deny_cache = 65536};
    c->limits = (sl_limits_config){
        .max_header_bytes = 8 * KiB,
        .max_body_bytes = 64 * KiB,
        .max_resp_frame = 64 * KiB,
        .max_connections = 10000,
        .idle_timeout = 60 * NS_SEC,
        .header_timeout = 10 * NS_SEC,
        .command_timeout = 10 * NS_SEC,
        .max_pending_output = MiB,
        .max_pending_output_total = 64 * MiB,
    };
    snprintf(c->log_level, sizeof c->log_level, "info");
    c->identity = (sl_identity_config){
        .forwarded = SL_FWD_XFF,
        .ipv4_prefix = 32,
        .ipv6_prefix = 64,
        .client_ip_header = "X-Real-IP",
        .method_header = "X-Original-Method",
        .uri_header = "X-Original-URI",
        .key_header = "X-API-Key",
        .key_bearer = true,
    };
}

/* The rule files named by domains: (policy/domains.c), loaded with the
 * config. Their errors are reported at the domains: line, each naming its
 * rule file and line: "sluice.yaml:9: domains: rules/a.yaml:4: field: ...". */
static void load_domain_rules(parser *p) {
    sl_config *c = p->cfg;
    sl_config_errors *rerrs = malloc(sizeof *rerrs);
    if (!rerrs) {
        error_at(p, c->domains_line, "domains", "out of memory");
        return;
    }
    rerrs->n = 0;
    if (sl__domain_rules_load(c->domains, &c->domain_rules, rerrs) != 0) {
        size_t stored = rerrs->n < SL_CONFIG_MAX_ERRORS ? rerrs->n : SL_CONFIG_MAX_ERRORS;
        for (size_t i = 0; i < stored; i++)
            error_at(p, c->domains_line, "domains", "%s", rerrs->msg[i]);
        if (rerrs->n > stored) p->errs->n += rerrs->n - stored;
    }
    free(rerrs);
}

/* Errors of the store check (sl__config_check_store), with their lines for
 * sort_errors when error_line is given. */
__attribute__((format(printf, 5, 6))) static void store_error(sl_config_errors *errs,
                                                              int *error_line, const char *source,
                                                              int line, const char *fmt, ...) {
    if (error_line && errs->n < SL_CONFIG_MAX_ERRORS) error_line[errs->n] = line;
    va_list ap;
    va_start(ap, fmt);
    add_errorv(errs, source, line, NULL, fmt, ap);
    va_end(ap);
}

static const char *redis_limit_problem(const sl_policy_config *pc) {
    if (pc->params.delay_after != 0)
        return "delay_after is decided by the memory store only (not yet by the Redis store)";
    int rc = sl__redis_script_check(&pc->params, pc->calendar == SL_CALENDAR_MONTH);
    if (rc == SL_OK) return NULL;
    return rc == SL_EOVERFLOW ? "too large for the Redis store (the limit, or burst x period in "
                                "microseconds, must stay below 2^52)"
                              : "the Redis store decides in whole microseconds: the period must "
                                "be a whole number of microseconds";
}

/* With the Redis store, every policy and every tier variant must be a
 * limit the script decides exactly (whole microseconds; doubles exact to
 * 2^52: redis_script.h). The one place this is checked. */
static size_t store_errors(const sl_config *c, sl_config_errors *errs, int *error_line) {
    size_t before = errs->n;
    if (strcmp(c->store_type, "redis") != 0) return 0;
    for (size_t i = 0; i < c->npolicies; i++) {
        const sl_policy_config *pc = &c->policies[i];
        const char *why = redis_limit_problem(pc);
        if (why)
            store_error(errs, error_line, c->source, pc->line, "%s %s: %s",
                        pc->quota ? "quota" : "policy", pc->name, why);
    }
    for (size_t t = 0; t < c->ntiers; t++) {
        const sl_tier_config *tc = &c->tiers[t];
        for (size_t j = 0; j < tc->noverrides; j++) {
            sl_policy_config v;
            if (sl__config_tier_variant(c, tc, &tc->overrides[j], &v) != 0) continue;
            const char *why = redis_limit_problem(&v);
            if (why)
                store_error(errs, error_line, c->source, v.line, "tiers.%s.%s (policy %s): %s",
                            tc->name, tc->overrides[j].policy, v.name, why);
        }
    }
    return errs->n - before;
}

static void check_redis_limits(parser *p) {
    store_errors(p->cfg, p->errs, p->error_line);
}

int sl__config_check_store(const sl_config *c, sl_config_errors *errs) {
    return store_errors(c, errs, NULL) ? -1 : 0;
}

int sl__config_tier_variant(const sl_config *c, const sl_tier_config *t, const sl_tier_override *o,
                            sl_policy_config *out) {
    const sl_policy_config *base = sl__config_policy(c, o->policy, strlen(o->policy));
    if (!base) return -1;
    size_t bl = strlen(base->name), tl = strlen(t->name);
    if (bl + 1 + tl > SL_POLICY_NAME_MAX) return -1; /* the loader refuses these */
    *out = *base;
    memcpy(out->name, base->name, bl);
    out->name[bl] = ':';
    memcpy(out->name + bl + 1, t->name, tl + 1);
    if (o->have_rate) out->params.rate = o->rate;
    if (o->have_burst && out->params.burst > 0) out->params.burst = o->burst;
    if (o->have_limit) out->params.rate.limit = o->limit;
    out->line = o->line;
    return 0;
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

    ident_parse ident = {0};
    parser p = {
        .text = text, .len = len, .source = source, .errs = errs, .cfg = c, .ident = &ident};
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
    if (!p.fatal) check_identity(&p);
    if (!p.fatal && c->domains[0]) load_domain_rules(&p);
    if (!p.fatal) check_redis_limits(&p);
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
    sl__domain_rules_free(c->domain_rules);
    free(c->policies);
    free_identity(c);
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
