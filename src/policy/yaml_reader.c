/* yaml_reader.c: the YAML reading layer of the config loader (yaml_reader.h).
 * libyaml's events are read one at a time; the only state is the current
 * event and the nesting depth, bounded by SL__YAML_MAX_DEPTH. Messages
 * quote a user's text through sl__yaml_quote: escaped, ASCII only, at most
 * SL__YAML_SHOW_MAX bytes of it. */
#include "policy/yaml_reader.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"
#include "sluice/limit.h"

#define NITEMS(a)      (sizeof(a) / sizeof((a)[0]))
#define ERROR_FULL_MAX 4096 /* a message before it is fitted into its slot */
#define ERROR_HEAD     48   /* of a message too long for its slot: its start kept, then "..." */

/* ---- the error list and the cursor ---------------------------------------- */

__attribute__((format(printf, 5, 0))) void sl__errors_addv(sl__config_errors *errs,
                                                           const char *source, int line,
                                                           const char *field, const char *fmt,
                                                           va_list ap) {
    size_t i = errs->n++;
    if (i >= SL__CONFIG_MAX_ERRORS) return;
    /* written whole first: a message longer than its slot loses its middle
       (a long path), never its end (what is wrong) */
    char full[ERROR_FULL_MAX];
    size_t cap = sizeof full;
    int k = line > 0 ? snprintf(full, cap, "%s:%d: ", source, line)
                     : snprintf(full, cap, "%s: ", source);
    if (k < 0 || (size_t)k >= cap) k = 0;
    if (field && *field) {
        int f = snprintf(full + k, cap - (size_t)k, "%s: ", field);
        if (f > 0 && (size_t)f < cap - (size_t)k) k += f;
    }
    vsnprintf(full + k, cap - (size_t)k, fmt, ap);
    char *m = errs->msg[i];
    size_t slot = sizeof errs->msg[i], len = strlen(full);
    if (len < slot) {
        memcpy(m, full, len + 1);
        return;
    }
    size_t tail = slot - 1 - ERROR_HEAD - 3; /* head + "..." + tail fill the slot */
    /* the tail copied below ends with the NUL */
    // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
    memcpy(m, full, ERROR_HEAD);
    // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
    memcpy(m + ERROR_HEAD, "...", 3);
    memcpy(m + ERROR_HEAD + 3, full + len - tail, tail + 1);
}

__attribute__((format(printf, 5, 6))) void sl__errors_add(sl__config_errors *errs,
                                                          const char *source, int line,
                                                          const char *field, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sl__errors_addv(errs, source, line, field, fmt, ap);
    va_end(ap);
}

/* One error at `line` about `field` (a path such as "policies[1].rate"). */
__attribute__((format(printf, 4, 5))) void sl__yaml_error(sl__yaml *y, int line, const char *field,
                                                          const char *fmt, ...) {
    if (y->errs->n < SL__CONFIG_MAX_ERRORS) y->error_line[y->errs->n] = line;
    va_list ap;
    va_start(ap, fmt);
    sl__errors_addv(y->errs, y->source, line, field, fmt, ap);
    va_end(ap);
}

/* Orders the stored messages by line (stable), as a compiler would: some
 * are only found after the lines below them (a missing key, a listener
 * clash). */
void sl__yaml_sort_errors(sl__yaml *y) {
    size_t n = y->errs->n < SL__CONFIG_MAX_ERRORS ? y->errs->n : SL__CONFIG_MAX_ERRORS;
    char tmp[sizeof y->errs->msg[0]];
    for (size_t i = 1; i < n; i++) {
        int line = y->error_line[i];
        size_t j = i;
        if (y->error_line[j - 1] <= line) continue;
        memcpy(tmp, y->errs->msg[i], sizeof tmp);
        for (; j > 0 && y->error_line[j - 1] > line; j--) {
            memcpy(y->errs->msg[j], y->errs->msg[j - 1], sizeof tmp);
            y->error_line[j] = y->error_line[j - 1];
        }
        memcpy(y->errs->msg[j], tmp, sizeof tmp);
        y->error_line[j] = line;
    }
}

int sl__yaml_line(const sl__yaml *y) {
    return (int)y->ev.start_mark.line + 1;
}

static int line_of_offset(const sl__yaml *y, size_t off) {
    int line = 1;
    for (size_t i = 0; i < off && i < y->len; i++) line += y->text[i] == '\n';
    return line;
}

static void syntax_error(sl__yaml *y) {
    const yaml_parser_t *yp = &y->yp;
    const char *problem = yp->problem ? yp->problem : "malformed YAML";
    switch (yp->error) {
    case YAML_MEMORY_ERROR:
        sl__yaml_error(y, 0, NULL, "out of memory while parsing");
        break;
    case YAML_READER_ERROR:
        if (yp->problem_value != -1)
            sl__yaml_error(y, line_of_offset(y, yp->problem_offset), "yaml",
                           "%s (character %#x at byte %zu)", problem, (unsigned)yp->problem_value,
                           yp->problem_offset);
        else
            sl__yaml_error(y, line_of_offset(y, yp->problem_offset), "yaml", "%s (at offset %zu)",
                           problem, yp->problem_offset);
        break;
    default:
        if (yp->context)
            sl__yaml_error(y, (int)yp->problem_mark.line + 1, "yaml",
                           "%s at column %d (%s at line %d)", problem,
                           (int)yp->problem_mark.column + 1, yp->context,
                           (int)yp->context_mark.line + 1);
        else
            sl__yaml_error(y, (int)yp->problem_mark.line + 1, "yaml", "%s at column %d", problem,
                           (int)yp->problem_mark.column + 1);
        break;
    }
}

/* Advances to the next event. False (with the error reported) when parsing
 * must stop. */
bool sl__yaml_next(sl__yaml *y) {
    if (y->fatal) return false;
    if (y->have_ev) {
        yaml_event_delete(&y->ev);
        y->have_ev = false;
    }
    if (!yaml_parser_parse(&y->yp, &y->ev)) {
        syntax_error(y);
        y->fatal = true;
        return false;
    }
    y->have_ev = true;
    switch (y->ev.type) {
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        if (++y->depth > SL__YAML_MAX_DEPTH) {
            sl__yaml_error(y, sl__yaml_line(y), NULL, "mappings and lists nested more than %d deep",
                           SL__YAML_MAX_DEPTH);
            y->fatal = true;
            return false;
        }
        break;
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        y->depth--;
        break;
    default:
        break;
    }
    return true;
}

/* The current event starts a node: consumes the whole node, so that the
 * current event is its last one. */
void sl__yaml_skip(sl__yaml *y) {
    if (y->ev.type != YAML_MAPPING_START_EVENT && y->ev.type != YAML_SEQUENCE_START_EVENT) return;
    int outer = y->depth - 1;
    while (y->depth > outer)
        if (!sl__yaml_next(y)) return;
}

int sl__yaml_open(sl__yaml *y, const char *text, size_t len, const char *source,
                  sl__config_errors *errs) {
    memset(y, 0, sizeof *y);
    y->text = text;
    y->len = len;
    y->source = source;
    y->errs = errs;
    if (!yaml_parser_initialize(&y->yp)) return SL_ENOMEM;
    yaml_parser_set_input_string(&y->yp, (const unsigned char *)text, len);
    return SL_OK;
}

void sl__yaml_close(sl__yaml *y) {
    if (y->have_ev) yaml_event_delete(&y->ev);
    y->have_ev = false;
    yaml_parser_delete(&y->yp);
}

bool sl__yaml_next_item(sl__yaml *y) {
    return sl__yaml_next(y) && y->ev.type != YAML_SEQUENCE_END_EVENT;
}

/* ---- the current node, scalars ------------------------------------------ */

bool sl__yaml_is_map(const sl__yaml *y) {
    return y->ev.type == YAML_MAPPING_START_EVENT;
}

bool sl__yaml_is_seq(const sl__yaml *y) {
    return y->ev.type == YAML_SEQUENCE_START_EVENT;
}

bool sl__yaml_is_scalar(const sl__yaml *y) {
    return y->ev.type == YAML_SCALAR_EVENT;
}

const char *sl__yaml_text(const sl__yaml *y) {
    return (const char *)y->ev.data.scalar.value;
}

size_t sl__yaml_len(const sl__yaml *y) {
    return y->ev.data.scalar.length;
}

/* Plain and untagged: the only form numbers, booleans and nulls take here. */
bool sl__yaml_is_plain(const sl__yaml *y) {
    return y->ev.type == YAML_SCALAR_EVENT && y->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           !y->ev.data.scalar.tag;
}

bool sl__yaml_is_null(const sl__yaml *y) {
    if (!sl__yaml_is_plain(y)) return false;
    const char *s = sl__yaml_text(y);
    return sl__yaml_len(y) == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
           strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

/* `s` as a quoted, escaped, ASCII-only and shortened text for a message. */
void sl__yaml_quote(char *out, size_t size, const char *s, size_t len) {
    size_t o = 0;
    if (size < 16) {
        if (size) out[0] = '\0';
        return;
    }
    out[o++] = '"';
    for (size_t i = 0; i < len; i++) {
        if (i >= SL__YAML_SHOW_MAX || o + 10 > size) {
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
void sl__yaml_describe(const sl__yaml *y, char *out, size_t size) {
    switch (y->ev.type) {
    case YAML_SCALAR_EVENT:
        if (sl__yaml_is_null(y)) {
            snprintf(out, size, "nothing");
        } else {
            char q[64];
            sl__yaml_quote(q, sizeof q, sl__yaml_text(y), sl__yaml_len(y));
            snprintf(out, size, "%s%s", sl__yaml_is_plain(y) ? "" : "the quoted string ", q);
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
void sl__yaml_expected(sl__yaml *y, const char *path, const char *what) {
    char got[96];
    sl__yaml_describe(y, got, sizeof got);
    sl__yaml_error(y, sl__yaml_line(y), path, "expected %s, got %s", what, got);
    sl__yaml_skip(y);
}

/* A non-null scalar without NUL bytes (so C string functions see all of it),
 * or NULL after reporting why not. The text lives until the next event. */
const char *sl__yaml_scalar(sl__yaml *y, const char *path, const char *what) {
    if (y->ev.type != YAML_SCALAR_EVENT || sl__yaml_is_null(y)) {
        sl__yaml_expected(y, path, what);
        return NULL;
    }
    if (memchr(sl__yaml_text(y), '\0', sl__yaml_len(y))) {
        sl__yaml_error(y, sl__yaml_line(y), path, "expected %s, got a string with a NUL byte",
                       what);
        return NULL;
    }
    return sl__yaml_text(y);
}

/* Decimal digits only; false on anything else or beyond UINT64_MAX. */
bool sl__yaml_parse_u64(const char *s, uint64_t *out) {
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
bool sl__yaml_uint(sl__yaml *y, const char *path, const char *what, uint64_t min, uint64_t max,
                   uint64_t *out) {
    const char *s = sl__yaml_scalar(y, path, what);
    if (!s) return false;
    char q[64];
    sl__yaml_quote(q, sizeof q, s, sl__yaml_len(y));
    uint64_t v;
    if (!sl__yaml_is_plain(y)) {
        sl__yaml_error(y, sl__yaml_line(y), path, "expected %s, got the quoted string %s%s", what,
                       q, all_digits(s) ? " (write numbers without quotes)" : "");
        return false;
    }
    if (!sl__yaml_parse_u64(s, &v)) {
        if (all_digits(s))
            sl__yaml_error(y, sl__yaml_line(y), path, "%s is too large (at most %llu)", s,
                           (unsigned long long)max);
        else
            sl__yaml_error(y, sl__yaml_line(y), path, "expected %s, got %s", what, q);
        return false;
    }
    if (v < min || v > max) {
        if (max == INT64_MAX)
            sl__yaml_error(y, sl__yaml_line(y), path, "%s is too small (at least %llu)", s,
                           (unsigned long long)min);
        else
            sl__yaml_error(y, sl__yaml_line(y), path, "%s is out of range (%llu to %llu)", s,
                           (unsigned long long)min, (unsigned long long)max);
        return false;
    }
    *out = v;
    return true;
}

bool sl__yaml_bool(sl__yaml *y, const char *path, bool *out) {
    const char *s = sl__yaml_scalar(y, path, "true or false");
    if (!s) return false;
    if (sl__yaml_is_plain(y) && strcmp(s, "true") == 0) return *out = true, true;
    if (sl__yaml_is_plain(y) && strcmp(s, "false") == 0) return *out = false, true;
    char q[64];
    sl__yaml_quote(q, sizeof q, s, sl__yaml_len(y));
    bool quoted_bool = !sl__yaml_is_plain(y) && (strcmp(s, "true") == 0 || strcmp(s, "false") == 0);
    sl__yaml_error(y, sl__yaml_line(y), path, "expected true or false, got %s%s", q,
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
const char *sl__yaml_suggest(const char *word, size_t len, const char *const *names, size_t n) {
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
void sl__yaml_join_names(char *out, size_t size, const char *const *names, size_t n) {
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && o < size; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int k = snprintf(out + o, size - o, "%s%s", sep, names[i]);
        if (k < 0) break;
        o += (size_t)k;
    }
}

/* One of `names` (an index), or SL_EINVAL after reporting. */
int sl__yaml_enum_aliased(sl__yaml *y, const char *path, const char *what, const char *const *names,
                          size_t n, const sl__yaml_alias *aliases, size_t naliases) {
    char list[160];
    sl__yaml_join_names(list, sizeof list, names, n);
    const char *s = sl__yaml_scalar(y, path, list);
    if (!s) return SL_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return (int)i;
    char q[64];
    sl__yaml_quote(q, sizeof q, s, sl__yaml_len(y));
    const char *near = sl__yaml_suggest(s, sl__yaml_len(y), names, n);
    for (size_t i = 0; i < naliases; i++)
        if (strcmp(s, aliases[i].name) == 0) near = aliases[i].means;
    if (near)
        sl__yaml_error(y, sl__yaml_line(y), path, "unknown %s %s (did you mean %s?)", what, q,
                       near);
    else
        sl__yaml_error(y, sl__yaml_line(y), path, "unknown %s %s (expected %s)", what, q, list);
    return SL_EINVAL;
}

int sl__yaml_enum(sl__yaml *y, const char *path, const char *what, const char *const *names,
                  size_t n) {
    return sl__yaml_enum_aliased(y, path, what, names, n, NULL, 0);
}

/* ---- sizes and durations --------------------------------------------------- */

static const struct {
    const char *name;
    uint64_t bytes;
} size_units[] = {{"", 1},
                  {"B", 1},
                  {"KiB", UINT64_C(1) << 10},
                  {"MiB", UINT64_C(1) << 20},
                  {"GiB", UINT64_C(1) << 30},
                  {"TiB", UINT64_C(1) << 40}};

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
    for (size_t u = 0; u < NITEMS(size_units); u++) {
        if (strcmp(s + i, size_units[u].name) != 0) continue;
        if (*overflow || v > UINT64_MAX / size_units[u].bytes) return *overflow = true, false;
        *out = v * size_units[u].bytes;
        return true;
    }
    return false;
}

/* The shortest exact text of a size: "256MiB", "1500". */
static void format_size(char *out, size_t size, uint64_t v) {
    for (size_t u = NITEMS(size_units); u-- > 2;) {
        if (v && v % size_units[u].bytes == 0) {
            snprintf(out, size, "%llu%s", (unsigned long long)(v / size_units[u].bytes),
                     size_units[u].name);
            return;
        }
    }
    snprintf(out, size, "%llu", (unsigned long long)v);
}

/* How a size or a duration parsed. */
typedef enum { PARSED, NOT_PARSED, TOO_LARGE } parsed;

/* The end of sl__yaml_size and sl__yaml_duration: false after reporting a
 * value (quoted q) that did not parse (`expected` says what would have), is
 * too large, or is not in range (from lo to hi). */
static bool value_ok(sl__yaml *y, const char *path, const char *q, parsed r, const char *expected,
                     bool in_range, const char *lo, const char *hi) {
    if (r == TOO_LARGE)
        sl__yaml_error(y, sl__yaml_line(y), path, "%s is too large", q);
    else if (r == NOT_PARSED)
        sl__yaml_error(y, sl__yaml_line(y), path, "cannot parse %s (%s)", q, expected);
    else if (!in_range)
        sl__yaml_error(y, sl__yaml_line(y), path, "%s is out of range (%s to %s)", q, lo, hi);
    return r == PARSED && in_range;
}

bool sl__yaml_size(sl__yaml *y, const char *path, uint64_t min, uint64_t max, uint64_t *out) {
    const char *s =
        sl__yaml_scalar(y, path, "a size such as 64KiB, 256MiB, 1GiB or a number of bytes");
    if (!s) return false;
    char q[64], lo[32], hi[32];
    sl__yaml_quote(q, sizeof q, s, sl__yaml_len(y));
    format_size(lo, sizeof lo, min);
    format_size(hi, sizeof hi, max);
    uint64_t v = 0;
    bool overflow;
    parsed r = parse_size(s, &v, &overflow) ? PARSED : overflow ? TOO_LARGE : NOT_PARSED;
    if (!value_ok(y, path, q, r,
                  "expected a size such as 64KiB, 256MiB, 1GiB or a number of bytes; units are "
                  "1024-based: KiB, MiB, GiB, TiB",
                  v >= min && v <= max, lo, hi))
        return false;
    *out = v;
    return true;
}

static void format_duration(char *out, size_t size, int64_t ns) {
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = {{"d", 86400 * SL_NS_PER_SEC},
                 {"h", 3600 * SL_NS_PER_SEC},
                 {"m", 60 * SL_NS_PER_SEC},
                 {"s", SL_NS_PER_SEC},
                 {"ms", SL_NS_PER_MS},
                 {"us", 1000},
                 {"ns", 1}};
    for (size_t u = 0; u < NITEMS(units); u++) {
        if (ns % units[u].ns == 0) {
            snprintf(out, size, "%lld%s", (long long)(ns / units[u].ns), units[u].name);
            return;
        }
    }
    snprintf(out, size, "%lldns", (long long)ns);
}

bool sl__yaml_duration(sl__yaml *y, const char *path, int64_t min, int64_t max, int64_t *out) {
    const char *s = sl__yaml_scalar(y, path, "a duration such as 10s or 500ms");
    if (!s) return false;
    char q[64], lo[32], hi[32];
    sl__yaml_quote(q, sizeof q, s, sl__yaml_len(y));
    format_duration(lo, sizeof lo, min);
    format_duration(hi, sizeof hi, max);
    int64_t v = 0;
    int rc = sl_duration_parse(s, &v);
    parsed r = rc == SL_OK ? PARSED : rc == SL_EOVERFLOW ? TOO_LARGE : NOT_PARSED;
    if (!value_ok(y, path, q, r,
                  "expected a number and a unit: ns, us, ms, s, m, h or d, such as 10s or 500ms",
                  v >= min && v <= max, lo, hi))
        return false;
    *out = v;
    return true;
}

/* ---- mappings and lists -------------------------------------------------- */

static void join_path(char *out, const char *parent, const char *key, size_t keylen) {
    char k[SL__YAML_SHOW_MAX + 4];
    size_t n = 0;
    for (size_t i = 0; i < keylen && n < SL__YAML_SHOW_MAX; i++) {
        unsigned char ch = (unsigned char)key[i];
        k[n++] = (char)(ch > 0x20 && ch < 0x7f ? ch : '?');
    }
    if (keylen > SL__YAML_SHOW_MAX) memcpy(k + n, "...", 3), n += 3;
    k[n] = '\0';
    snprintf(out, SL__YAML_PATH_SIZE, "%s%s%s", parent, *parent ? "." : "", k);
}

static void unknown_key(sl__yaml *y, int line, const char *path, const char *key, size_t len,
                        const char *const *keys, size_t nkeys) {
    if (len == 2 && memcmp(key, "<<", 2) == 0) {
        sl__yaml_error(y, line, path, "YAML merge keys (<<) are not supported");
        return;
    }
    for (size_t i = 0; i < y->nhomes; i++) {
        if (strlen(y->homes[i].key) == len && memcmp(y->homes[i].key, key, len) == 0) {
            sl__yaml_error(y, line, path, "unknown key here (%s belongs %s)", y->homes[i].key,
                           y->homes[i].where);
            return;
        }
    }
    const char *near = memchr(key, '\0', len) ? NULL : sl__yaml_suggest(key, len, keys, nkeys);
    char list[200];
    sl__yaml_join_names(list, sizeof list, keys, nkeys);
    if (near)
        sl__yaml_error(y, line, path, "unknown key (did you mean %s?)", near);
    else
        sl__yaml_error(y, line, path, "unknown key (expected %s)", list);
}

/* Inside a mapping: advances to the next key. True when it is a scalar
 * (the current event); a key of another kind is reported and skipped with
 * its value. False at the mapping's end or when reading must stop. */
static bool next_key(sl__yaml *y, const char *parent) {
    for (;;) {
        if (!sl__yaml_next(y) || y->ev.type == YAML_MAPPING_END_EVENT) return false;
        if (y->ev.type == YAML_SCALAR_EVENT) return true;
        char got[96];
        sl__yaml_describe(y, got, sizeof got);
        sl__yaml_error(y, sl__yaml_line(y), parent, "a key must be a plain word, got %s", got);
        sl__yaml_skip(y);
        if (!sl__yaml_next(y)) return false;
        sl__yaml_skip(y);
    }
}

/* The current event is MAPPING_START: calls fn for each known key with the
 * value as the current event (fn consumes the value node); reports unknown
 * and duplicate keys. seen[i] gets the line of key i (0: absent). */
void sl__yaml_each_key(sl__yaml *y, const char *parent, const char *const *keys, size_t nkeys,
                       sl__yaml_value_fn fn, void *obj, int *seen) {
    while (next_key(y, parent)) {
        int line = sl__yaml_line(y);
        char path[SL__YAML_PATH_SIZE];
        char key[SL__YAML_SHOW_MAX + 1];
        size_t len = sl__yaml_len(y);
        memcpy(key, sl__yaml_text(y), len < SL__YAML_SHOW_MAX ? len : SL__YAML_SHOW_MAX);
        key[len < SL__YAML_SHOW_MAX ? len : SL__YAML_SHOW_MAX] = '\0';
        join_path(path, parent, sl__yaml_text(y), len);
        int idx = -1;
        for (size_t i = 0; i < nkeys; i++)
            if (strlen(keys[i]) == len && memcmp(keys[i], key, len) == 0) idx = (int)i;
        if (!sl__yaml_next(y)) return;
        if (idx < 0) {
            unknown_key(y, line, path, key, len > SL__YAML_SHOW_MAX ? SL__YAML_SHOW_MAX + 1 : len,
                        keys, nkeys);
            sl__yaml_skip(y);
        } else if (seen[idx]) {
            sl__yaml_error(y, line, path, "duplicate key (first at line %d)", seen[idx]);
            sl__yaml_skip(y);
        } else {
            seen[idx] = line;
            y->key_line = line;
            fn(y, obj, idx, path);
        }
    }
}

/* A section (a mapping value): absent when null, an error when not a mapping. */
void sl__yaml_section(sl__yaml *y, const char *path, const char *const *keys, size_t nkeys,
                      sl__yaml_value_fn fn, void *obj, int *seen, const char *what) {
    if (sl__yaml_is_null(y)) return;
    if (y->ev.type != YAML_MAPPING_START_EVENT) {
        sl__yaml_expected(y, path, what);
        return;
    }
    sl__yaml_each_key(y, path, keys, nkeys, fn, obj, seen);
}

/* A mapping whose keys are names the user chose (tiers, policies in a tier):
 * calls fn for each with the value as the current event. */
void sl__yaml_each_named(sl__yaml *y, const char *parent, sl__yaml_named_fn fn, void *obj) {
    while (next_key(y, parent)) {
        int line = sl__yaml_line(y);
        char key[SL__POLICY_NAME_MAX + 2];
        size_t len = sl__yaml_len(y);
        size_t keep = len < sizeof key - 1 ? len : sizeof key - 1;
        memcpy(key, sl__yaml_text(y), keep);
        key[keep] = '\0';
        char path[SL__YAML_PATH_SIZE];
        join_path(path, parent, sl__yaml_text(y), len);
        if (memchr(sl__yaml_text(y), '\0', len)) len = SL__POLICY_NAME_MAX + 1; /* refused below */
        if (!sl__yaml_next(y)) return;
        fn(y, obj, key, len, line, path);
    }
}

void sl__yaml_each_item(sl__yaml *y, const char *path, const sl__yaml_list *l, sl__yaml_item_fn fn,
                        void *obj) {
    if (sl__yaml_is_null(y)) return;
    if (!sl__yaml_is_seq(y)) {
        sl__yaml_expected(y, path, l->what);
        return;
    }
    for (size_t i = 0;; i++) {
        if (!sl__yaml_next_item(y)) return;
        char item[SL__YAML_PATH_SIZE];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        if (i >= l->max) {
            if (i == l->max)
                sl__yaml_error(y, sl__yaml_line(y), item, "too many %s (at most %zu%s)", l->many,
                               l->max, l->why ? l->why : "");
            sl__yaml_skip(y);
            continue;
        }
        if (l->item && !sl__yaml_is_map(y)) {
            sl__yaml_expected(y, item, l->item);
            continue;
        }
        fn(y, obj, i, item);
        if (y->fatal) return;
    }
}

void sl__yaml_missing(sl__yaml *y, int line, const char *path, const char *const *keys,
                      const int *seen, const sl__yaml_required *req, size_t nreq) {
    for (size_t i = 0; i < nreq; i++) {
        if (seen[req[i].key]) continue;
        char field[SL__YAML_PATH_SIZE + 32];
        snprintf(field, sizeof field, "%s.%s", path, keys[req[i].key]);
        sl__yaml_error(y, line, field, "missing (%s)", req[i].why);
    }
}

/* Makes room for one more element in a growing array `arr` of n elements
 * (the capacity doubles from `first`) and returns the array, moved or not.
 * On failure reports "out of memory" at line/field, marks the parse fatal
 * and returns NULL (arr is then unchanged and still owned by the caller). */
void *sl__yaml_grow(sl__yaml *y, void *arr, size_t *cap, size_t n, size_t elem, size_t first,
                    int line, const char *field) {
    if (n < *cap) return arr;
    size_t ncap = *cap ? 2 * *cap : first;
    void *na = realloc(arr, ncap * elem);
    if (!na) {
        sl__yaml_error(y, line, field, "out of memory");
        y->fatal = true;
        return NULL;
    }
    *cap = ncap;
    return na;
}

void *sl__yaml_push(sl__yaml *y, void *arrp, size_t *cap, size_t *n, size_t elem, size_t first,
                    int line, const char *field) {
    void *arr;
    memcpy(&arr, arrp, sizeof arr);
    size_t none = 0; /* no capacity kept: grow to n + 1 */
    void *na =
        sl__yaml_grow(y, arr, cap ? cap : &none, *n, elem, cap ? first : *n + 1, line, field);
    if (!na) return NULL;
    memcpy(arrp, &na, sizeof na);
    void *e = (char *)na + *n * elem;
    memset(e, 0, elem);
    (*n)++;
    return e;
}

void sl__yaml_each_scalar(sl__yaml *y, const char *path, sl__yaml_scalar_fn fn, void *obj) {
    if (!sl__yaml_is_seq(y)) {
        fn(y, obj, path);
        return;
    }
    for (size_t i = 0; sl__yaml_next_item(y); i++) {
        char item[SL__YAML_PATH_SIZE];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        fn(y, obj, item);
    }
}
