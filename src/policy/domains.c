/* domains.c: envoyproxy/ratelimit rule files (domains.h): reading and
 * checking them, compiling them into a lookup structure, and deciding
 * ShouldRateLimit requests against it.
 *
 * Reading. A file is parsed by libyaml into a small node tree (bounded: 4 MiB
 * per file, SL_DOMAINS_MAX_RULES descriptors, nesting), then walked against
 * the schema of envoyproxy/ratelimit's YamlRoot / YamlDescriptor /
 * YamlRateLimit. Every problem becomes "file:line: field: message"; the
 * messages of upstream checks keep upstream's words ("descriptor has empty
 * key", "duplicate descriptor composite key '...'", ...). Upstream's YAML is
 * gopkg.in/yaml.v2, so booleans are YAML 1.1 (true/yes/on, ...) and any
 * scalar may be a string. Unknown keys are errors, as upstream; a key in the
 * wrong block is an error here too (upstream silently ignores it).
 *
 * Matching is upstream's GetLimit: at each level of nested descriptors the
 * request entry is looked up as key+value, then against the wildcard values
 * (a value with '*' anywhere, each '*' any run of bytes, the whole value
 * matched; in file order), then as key only; a rule applies when its depth
 * equals the descriptor's length. Lookups are hash tables (exact and
 * key-only) plus a list of wildcards per level. Matching is on (key, value)
 * pairs: upstream compares joined "key_value" strings, which differs only
 * for keys that themselves contain '_' or '*' around a wildcard. A
 * descriptor's quota_mode and metadata are kept on its limit
 * (sl__domain_set_match reports them); deciding does not use them yet.
 *
 * Deciding: every rule limit has one sl_table (created on first use; a
 * reload keeps the table of a rule whose domain, path and limit did not
 * change). All the limits of one request are decided at once with
 * sl_table_check_all: if one enforced limit refuses, nothing is consumed.
 * Shadow-mode limits take part like enforced ones, but a shadow limit that
 * would refuse is taken out and the rest decided again, so it never blocks
 * the request nor makes others consume. The config's top-level `shadow:
 * true` makes every limit of the set a shadow limit (a view of the set, not
 * state: a reload that turns it off keeps the tables).
 *
 * Accounting: every limit counts its outcomes (allowed, limited,
 * shadow_limited) for /metrics, by domain and rule; each domain has one
 * heavy-hitters sketch of the descriptors refused (shadow refusals included)
 * for /v1/top?domain=, shared with the next set while the domain remains;
 * and a shadow refusal is logged through the process-wide budget of
 * sl__log_limited, so a flood cannot fill the disk. */
#include "policy/domains.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "core/hash.h"
#include "core/topk.h"
#include "policy/decide.h"
#include "sluice/error.h"
#include "sluice/table.h"
#include "util/log.h"

#define COUNT(a)        (sizeof(a) / sizeof((a)[0]))
#define YAML_MAX_DEPTH  (2 * SL_DOMAINS_MAX_DEPTH + 8)
#define YAML_MAX_NODES  (1u << 21) /* nodes of one file */
#define FIELD_MAX       160
#define SHOW_MAX        40
#define NS_SEC          SL_NS_PER_SEC
#define KEY_STACK_BYTES 4096
#define TOP_CAPACITY    64     /* counters of a domain's refused-descriptors sketch */
#define TOP_SEP         '\x1f' /* between the rule and the descriptor in a sketch key */

/* ---- errors -------------------------------------------------------------- */

__attribute__((format(printf, 5, 6))) static void add_error(sl_config_errors *errs,
                                                            const char *source, int line,
                                                            const char *field, const char *fmt,
                                                            ...) {
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
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m + k, cap - (size_t)k, fmt, ap);
    va_end(ap);
}

/* `s` quoted for a message: escaped, ASCII only, shortened. */
static void quote(char *out, size_t size, const char *s, size_t len) {
    size_t o = 0;
    out[o++] = '\'';
    for (size_t i = 0; i < len && o + 8 < size; i++) {
        if (i >= SHOW_MAX) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\')
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    out[o++] = '\'';
    out[o] = '\0';
}

/* ---- the YAML node tree -------------------------------------------------- */

enum { Y_SCALAR, Y_MAP, Y_SEQ };

typedef struct ynode {
    int type, line;
    bool plain; /* plain style, no tag: the only form booleans and numbers take */
    bool null;  /* plain "", "~", "null" */
    char *text; /* scalar bytes, NUL-terminated */
    size_t len;
    struct ynode **kids; /* mapping: key, value, key, value, ... */
    size_t n, cap;
} ynode;

static void ynode_free(ynode *n) {
    if (!n) return;
    for (size_t i = 0; i < n->n; i++) ynode_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

static bool ynode_add(ynode *parent, ynode *kid) {
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? 2 * parent->cap : 4;
        ynode **k = realloc(parent->kids, cap * sizeof *k);
        if (!k) return false;
        parent->kids = k;
        parent->cap = cap;
    }
    parent->kids[parent->n++] = kid;
    return true;
}

static int line_of_offset(const char *text, size_t len, size_t off) {
    int line = 1;
    for (size_t i = 0; i < off && i < len; i++) line += text[i] == '\n';
    return line;
}

static void yaml_syntax_error(const yaml_parser_t *y, const char *text, size_t len,
                              const char *source, sl_config_errors *errs) {
    const char *problem = y->problem ? y->problem : "malformed YAML";
    if (y->error == YAML_MEMORY_ERROR)
        add_error(errs, source, 0, NULL, "out of memory while parsing");
    else if (y->error == YAML_READER_ERROR)
        add_error(errs, source, line_of_offset(text, len, y->problem_offset), "yaml",
                  "%s (at offset %zu)", problem, y->problem_offset);
    else if (y->context)
        add_error(errs, source, (int)y->problem_mark.line + 1, "yaml",
                  "%s at column %d (%s at line %d)", problem, (int)y->problem_mark.column + 1,
                  y->context, (int)y->context_mark.line + 1);
    else
        add_error(errs, source, (int)y->problem_mark.line + 1, "yaml", "%s at column %d", problem,
                  (int)y->problem_mark.column + 1);
}

/* Parses one YAML document into a tree. NULL after reporting (an empty
 * file is reported too). */
static ynode *yaml_tree(const char *text, size_t len, const char *source, sl_config_errors *errs) {
    yaml_parser_t yp;
    if (!yaml_parser_initialize(&yp)) {
        add_error(errs, source, 0, NULL, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
    ynode *stack[YAML_MAX_DEPTH];
    int depth = 0;
    ynode *root = NULL;
    size_t nodes = 0, docs = 0;
    bool ok = true, done = false;
    while (ok && !done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&yp, &ev)) {
            yaml_syntax_error(&yp, text, len, source, errs);
            ok = false;
            break;
        }
        int line = (int)ev.start_mark.line + 1;
        ynode *n = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) {
                add_error(errs, source, line, NULL,
                          "only one YAML document per rule file (remove the second ---)");
                ok = false;
            }
            break;
        case YAML_ALIAS_EVENT:
            add_error(errs, source, line, "yaml", "aliases (*name) are not supported");
            ok = false;
            break;
        case YAML_SCALAR_EVENT:
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            if (++nodes > YAML_MAX_NODES) {
                add_error(errs, source, line, NULL, "too many YAML nodes (at most %u)",
                          YAML_MAX_NODES);
                ok = false;
                break;
            }
            n = calloc(1, sizeof *n);
            if (!n) {
                add_error(errs, source, line, NULL, "out of memory");
                ok = false;
                break;
            }
            n->line = line;
            if (ev.type == YAML_SCALAR_EVENT) {
                n->type = Y_SCALAR;
                n->len = ev.data.scalar.length;
                n->text = malloc(n->len + 1);
                if (n->text) {
                    memcpy(n->text, ev.data.scalar.value, n->len);
                    n->text[n->len] = '\0';
                }
                n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev.data.scalar.tag;
                n->null = n->plain && (n->len == 0 || !strcmp(n->text ? n->text : "", "~") ||
                                       !strcmp(n->text ? n->text : "", "null") ||
                                       !strcmp(n->text ? n->text : "", "Null") ||
                                       !strcmp(n->text ? n->text : "", "NULL"));
            } else {
                n->type = ev.type == YAML_MAPPING_START_EVENT ? Y_MAP : Y_SEQ;
            }
            if (n->type == Y_SCALAR && !n->text) {
                add_error(errs, source, line, NULL, "out of memory");
                ynode_free(n);
                ok = false;
                break;
            }
            if (depth > 0) {
                if (!ynode_add(stack[depth - 1], n)) {
                    add_error(errs, source, line, NULL, "out of memory");
                    ynode_free(n);
                    ok = false;
                    break;
                }
            } else if (!root) {
                root = n;
            } else { /* cannot happen: one document has one root */
                ynode_free(n);
                break;
            }
            if (n->type != Y_SCALAR) {
                if (depth == YAML_MAX_DEPTH) {
                    add_error(errs, source, line, NULL, "nested more than %d deep", YAML_MAX_DEPTH);
                    ok = false;
                    break;
                }
                stack[depth++] = n;
            }
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            if (depth > 0) depth--;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&yp);
    if (!ok) {
        ynode_free(root);
        return NULL;
    }
    if (!root)
        add_error(errs, source, 1, NULL, "the file is empty (expected domain: and descriptors:)");
    return root;
}

/* ---- the rules as read ---------------------------------------------------- */

typedef struct rlimit {
    bool unlimited;
    uint32_t rpu;
    int unit;   /* SL_RLS_UNIT_*; UNKNOWN when unlimited */
    char *name; /* NULL: none */
    char **replaces;
    size_t nreplaces;
    sl_algorithm algorithm; /* sluice extension; fixed_window as upstream */
    int64_t burst;          /* sluice extension; 0: requests_per_unit */
} rlimit;

typedef struct rdesc {
    char *key, *value; /* value NULL when absent or empty */
    size_t klen, vlen;
    rlimit *limit;
    bool shadow_mode, detailed_metric, value_to_metric, share_threshold;
    bool quota_mode; /* upstream's soft limit, loaded and kept (docs/envoy.md) */
    char *metadata;  /* the descriptor's `metadata` as a JSON object, or NULL */
    struct rdesc *kids;
    size_t nkids;
    int line;
} rdesc;

typedef struct rdomain {
    char *name;
    size_t len;
    char *file;
    int line;
    rdesc *descs;
    size_t n;
} rdomain;

struct sl_domain_rules {
    rdomain *d;
    size_t n, cap;
    size_t nlimits, ndescs;
};

static void rlimit_free(rlimit *l) {
    if (!l) return;
    for (size_t i = 0; i < l->nreplaces; i++) free(l->replaces[i]);
    free(l->replaces);
    free(l->name);
    free(l);
}

static void rdescs_free(rdesc *d, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(d[i].key);
        free(d[i].value);
        free(d[i].metadata);
        rlimit_free(d[i].limit);
        rdescs_free(d[i].kids, d[i].nkids);
    }
    free(d);
}

void sl__domain_rules_free(sl_domain_rules *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->d[i].name);
        free(r->d[i].file);
        rdescs_free(r->d[i].descs, r->d[i].n);
    }
    free(r->d);
    free(r);
}

size_t sl__domain_rules_domains(const sl_domain_rules *r) {
    return r ? r->n : 0;
}

size_t sl__domain_rules_limits(const sl_domain_rules *r) {
    return r ? r->nlimits : 0;
}

/* ---- walking a file against the schema ------------------------------------ */

/* A growable byte string. */
typedef struct str {
    char *p;
    size_t len, cap;
    bool failed;
} str;

static void str_add(str *s, const char *p, size_t n) {
    if (s->failed) return;
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 128;
        while (cap < s->len + n + 1) cap *= 2;
        char *np = realloc(s->p, cap);
        if (!np) {
            s->failed = true;
            return;
        }
        s->p = np;
        s->cap = cap;
    }
    memcpy(s->p + s->len, p, n);
    s->len += n;
    s->p[s->len] = '\0';
}

typedef struct walker {
    const char *source;
    sl_config_errors *errs;
    sl_domain_rules *rules;
    bool nomem;
} walker;

static const char *const unit_names[] = {"UNKNOWN", "SECOND", "MINUTE", "HOUR",
                                         "DAY",     "MONTH",  "YEAR",   "WEEK"};
static const int64_t unit_seconds[] = {0, 1, 60, 3600, 86400, 30 * 86400, 365 * 86400, 7 * 86400};

const char *sl__rls_unit_name(int unit) {
    return unit >= 0 && unit < (int)COUNT(unit_names) ? unit_names[unit] : "UNKNOWN";
}

static const char *const top_keys[] = {"domain", "descriptors"};
static const char *const desc_keys[] = {
    "key",         "value",           "rate_limit",      "descriptors",
    "shadow_mode", "detailed_metric", "value_to_metric", "share_threshold",
    "quota_mode",  "metadata"};
static const char *const limit_keys[] = {"unit",     "requests_per_unit", "unlimited", "name",
                                         "replaces", "algorithm",         "burst"};

static void describe(const ynode *n, char *out, size_t size) {
    if (n->type == Y_MAP)
        snprintf(out, size, "a mapping");
    else if (n->type == Y_SEQ)
        snprintf(out, size, "a list");
    else if (n->null)
        snprintf(out, size, "nothing");
    else
        quote(out, size, n->text, n->len);
}

static void expected(walker *w, const ynode *n, const char *field, const char *what) {
    char got[64];
    describe(n, got, sizeof got);
    add_error(w->errs, w->source, n->line, field, "expected %s, got %s", what, got);
}

/* out = parent.key, truncated to FIELD_MAX - 1 bytes. */
static void join_field(char *out, const char *parent, const char *key) {
    size_t o = 0;
    for (const char *p = parent; *p && o < FIELD_MAX - 1; p++) out[o++] = *p;
    if (*parent && o < FIELD_MAX - 1) out[o++] = '.';
    for (const char *p = key; *p && o < FIELD_MAX - 1; p++) out[o++] = *p;
    out[o] = '\0';
}

/* Which of `keys` a mapping key is, or -1 after reporting it (unknown, in
 * the wrong block, or not a string). */
static int key_index(walker *w, const ynode *k, const char *parent, const char *const *keys,
                     size_t nkeys) {
    if (k->type != Y_SCALAR) {
        expected(w, k, parent, "a key");
        return -1;
    }
    for (size_t i = 0; i < nkeys; i++)
        if (strlen(keys[i]) == k->len && memcmp(keys[i], k->text, k->len) == 0) return (int)i;
    char field[FIELD_MAX], q[64];
    quote(q, sizeof q, k->text, k->len);
    join_field(field, parent, k->len < 64 ? k->text : "?");
    const char *where = NULL;
    for (size_t i = 0; i < COUNT(limit_keys) && keys != limit_keys; i++)
        if (strlen(limit_keys[i]) == k->len && !memcmp(limit_keys[i], k->text, k->len))
            where = "belongs under rate_limit";
    for (size_t i = 0; i < COUNT(desc_keys) && keys != desc_keys; i++)
        if (strlen(desc_keys[i]) == k->len && !memcmp(desc_keys[i], k->text, k->len))
            where = keys == top_keys ? "belongs in a descriptor" : "belongs in the descriptor";
    if (keys == desc_keys && k->len == 6 && !memcmp(k->text, "domain", 6))
        where = "belongs at the top of the file";
    if (where)
        add_error(w->errs, w->source, k->line, field, "config error, key %s %s", q, where);
    else
        add_error(w->errs, w->source, k->line, field, "config error, unknown key %s", q);
    return -1;
}

/* Walks a mapping: calls fn for each known key once; reports unknown and
 * duplicate keys. */
typedef void (*value_fn)(walker *w, void *obj, int key, const ynode *v, const char *field);
static void each_key(walker *w, const ynode *map, const char *parent, const char *const *keys,
                     size_t nkeys, value_fn fn, void *obj) {
    int seen[16] = {0};
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const ynode *k = map->kids[i], *v = map->kids[i + 1];
        int idx = key_index(w, k, parent, keys, nkeys);
        if (idx < 0) continue;
        char field[FIELD_MAX];
        join_field(field, parent, keys[idx]);
        if (seen[idx]) {
            add_error(w->errs, w->source, k->line, field, "duplicate key (first at line %d)",
                      seen[idx]);
            continue;
        }
        seen[idx] = k->line;
        fn(w, obj, idx, v, field);
    }
}

/* A string (any scalar, as yaml.v2 decodes into a string field); null is "".
 * False after reporting. *out is malloc'd (NUL-terminated). */
static bool get_string(walker *w, const ynode *v, const char *field, char **out, size_t *len) {
    if (v->type != Y_SCALAR) {
        expected(w, v, field, "a string");
        return false;
    }
    if (memchr(v->text, '\0', v->len)) {
        add_error(w->errs, w->source, v->line, field, "a NUL byte is not allowed here");
        return false;
    }
    size_t n = v->null ? 0 : v->len;
    char *s = malloc(n + 1);
    if (!s) {
        w->nomem = true;
        return false;
    }
    memcpy(s, v->text, n);
    s[n] = '\0';
    free(*out);
    *out = s;
    if (len) *len = n;
    return true;
}

/* YAML 1.1 booleans, as yaml.v2 reads them. */
static bool get_bool(walker *w, const ynode *v, const char *field, bool *out) {
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                      "on",   "On",   "ON",   "y",   "Y"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO",
                                     "off",   "Off",   "OFF",   "n",  "N"};
    if (v->type == Y_SCALAR && v->plain) {
        if (v->null) return *out = false, true;
        for (size_t i = 0; i < COUNT(yes); i++)
            if (!strcmp(v->text, yes[i])) return *out = true, true;
        for (size_t i = 0; i < COUNT(no); i++)
            if (!strcmp(v->text, no[i])) return *out = false, true;
    }
    expected(w, v, field, "true or false");
    return false;
}

/* An unsigned integer: decimal (underscores allowed, as YAML 1.1) or 0x hex,
 * unquoted, at most max. */
static bool get_uint(walker *w, const ynode *v, const char *field, uint64_t max, uint64_t *out) {
    const char *what = max == UINT32_MAX ? "a whole number from 0 to 4294967295" : "a whole number";
    if (v->type != Y_SCALAR || !v->plain || v->null) {
        expected(w, v, field, what);
        return false;
    }
    const char *s = v->text;
    unsigned base = 10;
    if (*s == '+') s++;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, s += 2;
    uint64_t x = 0;
    bool any = false, big = false;
    for (; *s; s++) {
        unsigned d;
        if (*s == '_') continue;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (base == 16 && isxdigit((unsigned char)*s))
            d = (unsigned)(tolower((unsigned char)*s) - 'a' + 10);
        else
            break;
        any = true;
        if (x > (UINT64_MAX - d) / base) big = true;
        if (!big) x = x * base + d;
    }
    if (!any || *s) {
        expected(w, v, field, what);
        return false;
    }
    if (big || x > max) {
        add_error(w->errs, w->source, v->line, field, "%s is too large (at most %llu)", v->text,
                  (unsigned long long)max);
        return false;
    }
    *out = x;
    return true;
}

/* ---- descriptor metadata ----------------------------------------------------- */

/* `metadata` is free-form YAML that upstream hands back to Envoy as the
 * answer's dynamic_metadata (a google.protobuf.Struct). It is kept as the
 * JSON text of that Struct: mappings become objects (keys must be strings),
 * lists arrays, and plain scalars take YAML 1.1's types as yaml.v2 reads them
 * (null, true/false, integers and decimals as numbers); every other scalar,
 * and every quoted one, is a string. */
#define METADATA_MAX_DEPTH 16
#define METADATA_MAX_KEYS  1024 /* in one mapping (duplicates are looked for pairwise) */

static void json_string(str *o, const char *p, size_t n) {
    static const char hex[] = "0123456789abcdef";
    str_add(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            str_add(o, e, 2);
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            str_add(o, e, 6);
        } else {
            str_add(o, (const char *)&c, 1);
        }
    }
    str_add(o, "\"", 1);
}

/* A JSON number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool json_number(const char *s) {
    if (*s == '-') s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9') s++;
    else
        return false;
    if (*s == '.') {
        if (!(*++s >= '0' && *s <= '9')) return false;
        while (*s >= '0' && *s <= '9') s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!(*s >= '0' && *s <= '9')) return false;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == '\0';
}

static bool metadata_value(walker *w, const ynode *v, const char *field, str *o, int depth) {
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No",
                                     "NO",    "off",   "Off",   "OFF"};
    if (depth > METADATA_MAX_DEPTH) {
        add_error(w->errs, w->source, v->line, field, "metadata nested more than %d deep",
                  METADATA_MAX_DEPTH);
        return false;
    }
    if (v->type == Y_MAP) {
        if (v->n / 2 > METADATA_MAX_KEYS) {
            add_error(w->errs, w->source, v->line, field,
                      "more than %d keys in one metadata mapping", METADATA_MAX_KEYS);
            return false;
        }
        str_add(o, "{", 1);
        for (size_t i = 0; i + 1 < v->n; i += 2) {
            const ynode *k = v->kids[i];
            if (k->type != Y_SCALAR) {
                expected(w, k, field, "a string key");
                return false;
            }
            for (size_t j = 0; j < i; j += 2) /* as yaml.v2: "already defined" */
                if (v->kids[j]->len == k->len && !memcmp(v->kids[j]->text, k->text, k->len)) {
                    add_error(w->errs, w->source, k->line, field,
                              "duplicate metadata key '%.*s' (first at line %d)", SHOW_MAX, k->text,
                              v->kids[j]->line);
                    return false;
                }
            if (i) str_add(o, ",", 1);
            json_string(o, k->text, k->len);
            str_add(o, ":", 1);
            if (!metadata_value(w, v->kids[i + 1], field, o, depth + 1)) return false;
        }
        str_add(o, "}", 1);
    } else if (v->type == Y_SEQ) {
        str_add(o, "[", 1);
        for (size_t i = 0; i < v->n; i++) {
            if (i) str_add(o, ",", 1);
            if (!metadata_value(w, v->kids[i], field, o, depth + 1)) return false;
        }
        str_add(o, "]", 1);
    } else if (v->plain && v->null) {
        str_add(o, "null", 4);
    } else {
        if (memchr(v->text, '\0', v->len)) {
            add_error(w->errs, w->source, v->line, field, "a NUL byte is not allowed here");
            return false;
        }
        const char *t = v->text;
        for (size_t i = 0; v->plain && i < COUNT(yes); i++)
            if (!strcmp(t, yes[i])) return str_add(o, "true", 4), true;
        for (size_t i = 0; v->plain && i < COUNT(no); i++)
            if (!strcmp(t, no[i])) return str_add(o, "false", 5), true;
        const char *num = t[0] == '+' ? t + 1 : t;
        if (v->plain && json_number(num))
            str_add(o, num, strlen(num));
        else
            json_string(o, v->text, v->len);
    }
    return true;
}

/* A descriptor's metadata: a mapping (upstream decodes it into a map), kept
 * as JSON in *out (malloc'd). False after reporting. */
static bool get_metadata(walker *w, const ynode *v, const char *field, char **out) {
    if (v->type == Y_SCALAR && v->plain && v->null) return true; /* metadata: (nothing) */
    if (v->type != Y_MAP) {
        expected(w, v, field, "a mapping");
        return false;
    }
    str o = {0};
    if (!metadata_value(w, v, field, &o, 1) || o.failed) {
        if (o.failed) w->nomem = true;
        free(o.p);
        return false;
    }
    free(*out);
    *out = o.p;
    return true;
}

typedef struct limit_build {
    rlimit *l;
    const ynode *unit_node;
    int line, unit_line, rpu_line, burst_line, algorithm_line;
    bool bad;
} limit_build;

static void limit_value(walker *w, void *obj, int key, const ynode *v, const char *field) {
    limit_build *b = obj;
    rlimit *l = b->l;
    uint64_t u;
    size_t len;
    switch (key) {
    case 0: /* unit: checked once unlimited is known */
        b->unit_node = v;
        b->unit_line = v->line;
        break;
    case 1:
        b->rpu_line = v->line;
        if (get_uint(w, v, field, UINT32_MAX, &u))
            l->rpu = (uint32_t)u;
        else
            b->bad = true;
        break;
    case 2:
        if (!get_bool(w, v, field, &l->unlimited)) b->bad = true;
        break;
    case 3:
        if (!get_string(w, v, field, &l->name, &len)) b->bad = true;
        if (l->name && !*l->name) free(l->name), l->name = NULL;
        break;
    case 4: {
        if (v->type == Y_SCALAR && v->null) break;
        if (v->type != Y_SEQ) {
            expected(w, v, field, "a list of - name: ...");
            b->bad = true;
            break;
        }
        l->replaces = calloc(v->n ? v->n : 1, sizeof *l->replaces);
        if (!l->replaces) {
            w->nomem = true;
            break;
        }
        for (size_t i = 0; i < v->n; i++) {
            const ynode *item = v->kids[i];
            char f[FIELD_MAX];
            snprintf(f, sizeof f, "%s[%zu]", field, i);
            char *name = NULL;
            if (item->type != Y_MAP) {
                expected(w, item, f, "a mapping with name");
                b->bad = true;
                continue;
            }
            for (size_t j = 0; j + 1 < item->n; j += 2) {
                static const char *const rk[] = {"name"};
                if (key_index(w, item->kids[j], f, rk, 1) < 0) {
                    b->bad = true;
                    continue;
                }
                char nf[FIELD_MAX];
                join_field(nf, f, "name");
                if (!get_string(w, item->kids[j + 1], nf, &name, NULL)) b->bad = true;
            }
            if (!name || !*name) {
                add_error(w->errs, w->source, item->line, f,
                          "should not have an empty replaces entry");
                b->bad = true;
                free(name);
                continue;
            }
            l->replaces[l->nreplaces++] = name;
        }
        break;
    }
    case 5: {
        char *name = NULL;
        b->algorithm_line = v->line;
        if (!get_string(w, v, field, &name, NULL)) {
            b->bad = true;
            break;
        }
        if (sl_algorithm_parse(name, &l->algorithm) != SL_OK) {
            char q[64];
            quote(q, sizeof q, name, strlen(name));
            add_error(w->errs, w->source, v->line, field,
                      "unknown algorithm %s (expected fixed_window, sliding_log, sliding_window, "
                      "token_bucket, gcra or leaky_queue)",
                      q);
            b->bad = true;
        }
        free(name);
        break;
    }
    case 6:
        b->burst_line = v->line;
        if (get_uint(w, v, field, (uint64_t)1 << 61, &u) && u >= 1)
            l->burst = (int64_t)u;
        else {
            if (!b->bad && v->type == Y_SCALAR && v->plain && !strcmp(v->text, "0"))
                add_error(w->errs, w->source, v->line, field, "must be at least 1");
            b->bad = true;
        }
        break;
    }
}

static rlimit *walk_limit(walker *w, const ynode *v, const char *field) {
    if (v->type != Y_MAP) {
        expected(w, v, field, "a mapping of unit and requests_per_unit");
        return NULL;
    }
    rlimit *l = calloc(1, sizeof *l);
    if (!l) {
        w->nomem = true;
        return NULL;
    }
    l->algorithm = SL_FIXED_WINDOW;
    limit_build b = {.l = l, .line = v->line};
    size_t errors = w->errs->n;
    each_key(w, v, field, limit_keys, COUNT(limit_keys), limit_value, &b);
    char uf[FIELD_MAX];
    join_field(uf, field, "unit");
    /* upstream: strings.ToUpper(unit) among the Unit names, UNKNOWN refused */
    bool valid_unit = false;
    if (b.unit_node && b.unit_node->type == Y_SCALAR && !b.unit_node->null) {
        for (int u = 1; u < (int)COUNT(unit_names); u++)
            if (!strcasecmp(b.unit_node->text, unit_names[u]) &&
                strlen(unit_names[u]) == b.unit_node->len)
                l->unit = u, valid_unit = true;
    }
    if (l->unlimited) {
        if (valid_unit)
            add_error(w->errs, w->source, b.unit_line, uf,
                      "should not specify rate limit unit when unlimited");
    } else if (!valid_unit) {
        char q[64] = "''";
        if (b.unit_node) describe(b.unit_node, q, sizeof q);
        add_error(w->errs, w->source, b.unit_node ? b.unit_line : v->line, uf,
                  "invalid rate limit unit %s (expected second, minute, hour, day, week, month "
                  "or year)",
                  b.unit_node ? q : "''");
    }
    for (size_t i = 0; i < l->nreplaces; i++)
        if (l->name && !strcmp(l->replaces[i], l->name)) {
            char rf[FIELD_MAX];
            join_field(rf, field, "replaces");
            add_error(w->errs, w->source, v->line, rf,
                      "replaces should not contain name of same descriptor");
        }
    if (w->errs->n == errors && !l->unlimited && l->rpu > 0) {
        sl_params p = {.algorithm = l->algorithm,
                       .rate = {.limit = l->rpu, .period = unit_seconds[l->unit] * NS_SEC},
                       .burst = l->burst ? l->burst : l->rpu};
        if (p.algorithm < SL_TOKEN_BUCKET) p.burst = 0;
        int rc = sl_params_validate(&p);
        if (rc != SL_OK) {
            char rf[FIELD_MAX];
            bool burst = rc == SL_EBURST || (rc == SL_EOVERFLOW && l->burst);
            join_field(rf, field, burst ? "burst" : "requests_per_unit");
            int at = burst && b.burst_line ? b.burst_line : b.rpu_line ? b.rpu_line : v->line;
            add_error(w->errs, w->source, at, rf, "%u per %s with %s: %s%s", l->rpu,
                      unit_names[l->unit], sl_algorithm_name(l->algorithm), sl_strerror(rc),
                      rc == SL_EINVAL && l->algorithm == SL_SLIDING_LOG
                          ? " (a sliding_log keeps every request: at most 100000)"
                          : "");
        }
    }
    return l;
}

typedef struct desc_build {
    rdesc *d;
    int depth;
    bool has_value;
} desc_build;

static void walk_descs(walker *w, const ynode *v, const char *field, rdesc **out, size_t *n,
                       int depth, const char *parent_key);

static void desc_value(walker *w, void *obj, int key, const ynode *v, const char *field) {
    desc_build *b = obj;
    rdesc *d = b->d;
    switch (key) {
    case 0:
        get_string(w, v, field, &d->key, &d->klen);
        break;
    case 1:
        get_string(w, v, field, &d->value, &d->vlen);
        break;
    case 2:
        if (v->type == Y_SCALAR && v->null) break; /* rate_limit: (nothing) = none */
        d->limit = walk_limit(w, v, field);
        break;
    case 3:
        /* nested: handled by the caller once the key is known */
        break;
    case 4:
        get_bool(w, v, field, &d->shadow_mode);
        break;
    case 5:
        get_bool(w, v, field, &d->detailed_metric);
        break;
    case 6:
        get_bool(w, v, field, &d->value_to_metric);
        break;
    case 7:
        get_bool(w, v, field, &d->share_threshold);
        break;
    case 8:
        get_bool(w, v, field, &d->quota_mode);
        break;
    case 9:
        get_metadata(w, v, field, &d->metadata);
        break;
    }
}

typedef struct sort_item {
    const rdesc *d;
    size_t i;
} sort_item;

static int cmp_desc(const void *a, const void *b) {
    const rdesc *x = ((const sort_item *)a)->d, *y = ((const sort_item *)b)->d;
    if (x->klen != y->klen) return x->klen < y->klen ? -1 : 1;
    int c = memcmp(x->key, y->key, x->klen);
    if (c) return c;
    if (x->vlen != y->vlen) return x->vlen < y->vlen ? -1 : 1;
    c = memcmp(x->value ? x->value : "", y->value ? y->value : "", x->vlen);
    if (c) return c;
    size_t i = ((const sort_item *)a)->i, j = ((const sort_item *)b)->i;
    return i < j ? -1 : i > j;
}

/* A list of descriptors. parent_key is the composite key so far
 * ("domain.key_value."), for upstream's duplicate message. */
static void walk_descs(walker *w, const ynode *v, const char *field, rdesc **out, size_t *n,
                       int depth, const char *parent_key) {
    *out = NULL;
    *n = 0;
    if (v->type == Y_SCALAR && v->null) return;
    if (v->type != Y_SEQ) {
        expected(w, v, field, "a list of descriptors (- key: ...)");
        return;
    }
    if (depth > SL_DOMAINS_MAX_DEPTH) {
        add_error(w->errs, w->source, v->line, field, "descriptors nested more than %d deep",
                  SL_DOMAINS_MAX_DEPTH);
        return;
    }
    rdesc *d = calloc(v->n ? v->n : 1, sizeof *d);
    if (!d) {
        w->nomem = true;
        return;
    }
    *out = d;
    for (size_t i = 0; i < v->n; i++) {
        const ynode *item = v->kids[i];
        char f[FIELD_MAX];
        snprintf(f, sizeof f, "%s[%zu]", field, i);
        if (++w->rules->ndescs > SL_DOMAINS_MAX_RULES) {
            if (w->rules->ndescs == SL_DOMAINS_MAX_RULES + 1)
                add_error(w->errs, w->source, item->line, f, "too many descriptors (at most %d)",
                          SL_DOMAINS_MAX_RULES);
            continue;
        }
        if (item->type != Y_MAP) {
            expected(w, item, f, "a descriptor (a mapping of key, value, rate_limit, ...)");
            continue;
        }
        rdesc *x = &d[(*n)++];
        x->line = item->line;
        desc_build b = {.d = x, .depth = depth};
        each_key(w, item, f, desc_keys, COUNT(desc_keys), desc_value, &b);
        if (!x->key || !*x->key) {
            char kf[FIELD_MAX];
            join_field(kf, f, "key");
            add_error(w->errs, w->source, item->line, kf, "descriptor has empty key");
        }
        if (x->value && !*x->value) free(x->value), x->value = NULL, x->vlen = 0;
        if (x->limit) w->rules->nlimits++;
        if (x->share_threshold && !(x->value && memchr(x->value, '*', x->vlen))) {
            char sf[FIELD_MAX];
            join_field(sf, f, "share_threshold");
            add_error(w->errs, w->source, item->line, sf,
                      "share_threshold can only be used with wildcard values (containing '*')");
        }
        /* nested descriptors, with the composite key for messages */
        for (size_t j = 0; j + 1 < item->n; j += 2) {
            const ynode *k = item->kids[j];
            if (k->type != Y_SCALAR || k->len != 11 || memcmp(k->text, "descriptors", 11)) continue;
            char nf[FIELD_MAX], pk[FIELD_MAX];
            join_field(nf, f, "descriptors");
            snprintf(pk, sizeof pk, "%s%s%s%s.", parent_key, x->key ? x->key : "",
                     x->value ? "_" : "", x->value ? x->value : "");
            if (!x->kids) walk_descs(w, item->kids[j + 1], nf, &x->kids, &x->nkids, depth + 1, pk);
        }
    }
    /* upstream: "duplicate descriptor composite key" among siblings */
    if (*n > 1) {
        sort_item *s = malloc(*n * sizeof *s);
        if (!s) {
            w->nomem = true;
            return;
        }
        size_t m = 0;
        for (size_t i = 0; i < *n; i++)
            if (d[i].key) s[m].d = &d[i], s[m].i = i, m++;
        qsort(s, m, sizeof *s, cmp_desc);
        for (size_t i = 1; i < m; i++) {
            const rdesc *a = s[i - 1].d, *b = s[i].d;
            if (a->klen == b->klen && !memcmp(a->key, b->key, a->klen) && a->vlen == b->vlen &&
                !memcmp(a->value ? a->value : "", b->value ? b->value : "", a->vlen)) {
                char f[FIELD_MAX];
                snprintf(f, sizeof f, "%s[%zu]", field, s[i].i);
                add_error(w->errs, w->source, b->line, f,
                          "duplicate descriptor composite key '%s%s%s%s' (first at line %d)",
                          parent_key, b->key, b->value ? "_" : "", b->value ? b->value : "",
                          a->line);
            }
        }
        free(s);
    }
}

typedef struct top_build {
    rdomain *dom;
    const ynode *descriptors;
    int domain_line;
} top_build;

static void top_value(walker *w, void *obj, int key, const ynode *v, const char *field) {
    top_build *b = obj;
    if (key == 0) {
        b->domain_line = v->line;
        get_string(w, v, field, &b->dom->name, &b->dom->len);
    } else {
        b->descriptors = v;
    }
}

/* Walks one file's tree into rules (appending a domain). */
static void walk_file(walker *w, const ynode *root) {
    if (root->type != Y_MAP) {
        expected(w, root, NULL, "a mapping of domain and descriptors");
        return;
    }
    sl_domain_rules *r = w->rules;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        rdomain *nd = realloc(r->d, cap * sizeof *nd);
        if (!nd) {
            w->nomem = true;
            return;
        }
        r->d = nd;
        r->cap = cap;
    }
    rdomain *dom = &r->d[r->n];
    memset(dom, 0, sizeof *dom);
    dom->line = root->line;
    dom->file = strdup(w->source);
    if (!dom->file) {
        w->nomem = true;
        return;
    }
    r->n++;
    top_build b = {.dom = dom};
    each_key(w, root, "", top_keys, COUNT(top_keys), top_value, &b);
    if (!dom->name || !*dom->name) {
        add_error(w->errs, w->source, b.domain_line ? b.domain_line : root->line, "domain",
                  "config file cannot have empty domain");
    } else {
        dom->line = b.domain_line;
        for (size_t i = 0; i + 1 < r->n; i++)
            if (r->d[i].name && r->d[i].len == dom->len &&
                !memcmp(r->d[i].name, dom->name, dom->len))
                add_error(w->errs, w->source, b.domain_line, "domain",
                          "duplicate domain '%s' in config file (first in %s:%d)", dom->name,
                          r->d[i].file, r->d[i].line);
    }
    if (b.descriptors) {
        char pk[FIELD_MAX];
        snprintf(pk, sizeof pk, "%s.", dom->name ? dom->name : "");
        walk_descs(w, b.descriptors, "descriptors", &dom->descs, &dom->n, 1, pk);
    }
}

static int parse_into(sl_domain_rules *r, const char *text, size_t len, const char *source,
                      sl_config_errors *errs) {
    size_t before = errs->n;
    ynode *root = yaml_tree(text, len, source, errs);
    if (!root) return -1;
    walker w = {.source = source, .errs = errs, .rules = r};
    walk_file(&w, root);
    ynode_free(root);
    if (w.nomem) add_error(errs, source, 0, NULL, "out of memory");
    return errs->n == before ? 0 : -1;
}

int sl__domain_rules_parse(const char *text, size_t len, const char *source, sl_domain_rules **out,
                           sl_config_errors *errs) {
    *out = NULL;
    sl_domain_rules *r = calloc(1, sizeof *r);
    if (!r) {
        add_error(errs, source, 0, NULL, "out of memory");
        return -1;
    }
    if (len > SL_DOMAINS_MAX_FILE_SIZE) {
        add_error(errs, source, 0, NULL, "larger than %u bytes: refused", SL_DOMAINS_MAX_FILE_SIZE);
        sl__domain_rules_free(r);
        return -1;
    }
    if (parse_into(r, text, len, source, errs) != 0) {
        sl__domain_rules_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

/* Reads a regular file of at most SL_DOMAINS_MAX_FILE_SIZE bytes. */
static char *read_file(const char *path, size_t *len, sl_config_errors *errs) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        add_error(errs, path, 0, NULL, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        add_error(errs, path, 0, NULL, "not a regular file");
        close(fd);
        return NULL;
    }
    size_t cap = 64 * 1024, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            if (cap > SL_DOMAINS_MAX_FILE_SIZE) break;
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            add_error(errs, path, 0, NULL, "cannot read: %s", strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (k == 0) break;
        n += (size_t)k;
    }
    close(fd);
    if (!buf) {
        add_error(errs, path, 0, NULL, "out of memory");
        return NULL;
    }
    if (n > SL_DOMAINS_MAX_FILE_SIZE) {
        add_error(errs, path, 0, NULL, "larger than %u bytes: refused", SL_DOMAINS_MAX_FILE_SIZE);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static bool rule_file_name(const char *name) {
    size_t n = strlen(name);
    if (name[0] == '.') return false;
    return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml"));
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sl__domain_rules_load(const char *path, sl_domain_rules **out, sl_config_errors *errs) {
    *out = NULL;
    size_t before = errs->n;
    struct stat st;
    if (stat(path, &st) != 0) {
        add_error(errs, path, 0, NULL, "cannot open: %s", strerror(errno));
        return -1;
    }
    sl_domain_rules *r = calloc(1, sizeof *r);
    if (!r) {
        add_error(errs, path, 0, NULL, "out of memory");
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        size_t len;
        char *text = read_file(path, &len, errs);
        if (text) parse_into(r, text, len, path, errs);
        free(text);
    } else {
        DIR *dir = opendir(path);
        if (!dir) {
            add_error(errs, path, 0, NULL, "cannot open: %s", strerror(errno));
        } else {
            char **names = NULL;
            size_t n = 0, cap = 0;
            bool nomem = false;
            for (struct dirent *e; (e = readdir(dir));) {
                if (!rule_file_name(e->d_name)) continue;
                if (n == SL_DOMAINS_MAX_FILES) {
                    add_error(errs, path, 0, NULL, "more than %d rule files", SL_DOMAINS_MAX_FILES);
                    break;
                }
                if (n == cap) {
                    cap = cap ? 2 * cap : 16;
                    char **nn = realloc(names, cap * sizeof *nn);
                    if (!nn) {
                        nomem = true;
                        break;
                    }
                    names = nn;
                }
                if (!(names[n] = strdup(e->d_name))) {
                    nomem = true;
                    break;
                }
                n++;
            }
            closedir(dir);
            if (nomem) add_error(errs, path, 0, NULL, "out of memory");
            if (n) qsort(names, n, sizeof *names, cmp_str);
            size_t plen = strlen(path);
            for (size_t i = 0; i < n && !nomem; i++) {
                size_t need = plen + strlen(names[i]) + 2;
                char *file = malloc(need);
                if (!file) {
                    add_error(errs, path, 0, NULL, "out of memory");
                    break;
                }
                snprintf(file, need, "%s%s%s", path, plen && path[plen - 1] == '/' ? "" : "/",
                         names[i]);
                struct stat fs;
                if (stat(file, &fs) == 0 && S_ISREG(fs.st_mode)) {
                    size_t len;
                    char *text = read_file(file, &len, errs);
                    if (text) parse_into(r, text, len, file, errs);
                    free(text);
                }
                free(file);
            }
            for (size_t i = 0; i < n; i++) free(names[i]);
            free(names);
        }
    }
    if (errs->n != before) {
        sl__domain_rules_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

/* ---- the compiled set ---------------------------------------------------- */

/* The state of one limit: the engine's limit (its table, counters, fail
 * mode; decide.h). Shared by the sets of successive reloads while the limit
 * does not change. */
typedef struct lstate {
    sl_decide_limit lim; /* first */
    atomic_int refs;
    char *id; /* domain NUL rule-path NUL */
    size_t idlen;
    sl_params params; /* algorithm 0: no table (unlimited, or 0 requests per unit) */
    size_t max_memory;
    uint32_t rpu; /* for the shadow log */
    int unit;
    char rname[96]; /* the Redis keys' namespace: "rls:<domain>:<rule>" */
} lstate;

typedef struct climit {
    lstate *st;
    uint32_t rpu;
    int unit;
    int64_t period; /* ns */
    bool unlimited, shadow;
    bool quota;           /* quota_mode: kept, not yet decided on (docs/envoy.md) */
    const char *metadata; /* the descriptor's metadata as JSON, or NULL */
    const char *name;
    int name_id; /* -1: no name */
    int *replaces;
    size_t nreplaces;
} climit;

struct clevel;

typedef struct cnode {
    const char *key, *value; /* value NULL: key only */
    size_t klen, vlen;       /* a wildcard's vlen excludes a trailing '*' (its share key) */
    size_t plen;             /* a wildcard's whole pattern, '*'s included */
    bool wildcard, share;
    climit *limit;
    struct clevel *kids;
} cnode;

typedef struct clevel {
    cnode *nodes;
    size_t n;
    uint32_t *slots; /* index + 1 of non-wildcard nodes; 0 = empty */
    uint32_t mask;
    uint32_t *wild; /* wildcard nodes, in file order */
    size_t nwild;
} clevel;

/* A domain's sketch of refused descriptors, shared by successive sets. */
typedef struct dtop {
    atomic_int refs;
    sl__topk *top;
} dtop;

typedef struct cdomain {
    const char *name;
    size_t len;
    clevel top;
    dtop *refused; /* never NULL in a built set */
} cdomain;

typedef struct override {
    size_t domain;
    uint32_t rpu;
    int unit;
    lstate *st;
} override;

/* Bump allocator for everything immutable in a set. */
typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} arena_block;

struct sl_domain_set {
    atomic_int refs;
    uint64_t seed;
    size_t max_memory;
    bool shadow;             /* the config's top-level shadow: every limit is a shadow limit */
    bool quota;              /* the config's top-level quota_mode: every limit is in quota mode */
    sl_fail_mode on_failure; /* the Redis store's, for every limit */
    cdomain *domains;
    size_t ndomains;
    uint32_t *dslots;
    uint32_t dmask;
    lstate **states; /* one per rule limit */
    size_t nstates;
    arena_block *arena;
    pthread_mutex_t ov_lock;
    atomic_size_t nov;
    override ov[SL_RLS_MAX_OVERRIDES];
};

static void *arena_alloc(sl_domain_set *s, size_t n) {
    n = (n + 15) & ~(size_t)15;
    arena_block *b = s->arena;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = s->arena;
        s->arena = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

static const char *arena_str(sl_domain_set *s, const char *src, size_t n) {
    char *p = arena_alloc(s, n + 1);
    if (p) memcpy(p, src, n), p[n] = '\0';
    return p;
}

static void lstate_release(lstate *st) {
    if (!st || atomic_fetch_sub(&st->refs, 1) != 1) return;
    sl_table_destroy(atomic_load(&st->lim.store.table));
    free(st->id);
    free(st);
}

static void log_shadow(const sl_decide_limit *l, const char *label, size_t len,
                       const sl_decision *d, int64_t now);

/* A limit's state; `top` is its domain's sketch of refused descriptors. */
static lstate *lstate_new(const char *id, size_t idlen, const sl_params *p, size_t max_memory,
                          sl_fail_mode on_failure, sl__topk *top, uint32_t rpu, int unit) {
    lstate *st = calloc(1, sizeof *st);
    if (!st || !(st->id = malloc(idlen + 1))) {
        free(st);
        return NULL;
    }
    memcpy(st->id, id, idlen);
    st->id[idlen] = '\0';
    st->idlen = idlen;
    st->params = *p;
    st->max_memory = max_memory;
    st->rpu = rpu;
    st->unit = unit;
    const char *rule = st->id + strlen(st->id) + 1;
    snprintf(st->rname, sizeof st->rname, "rls:%s:%s", st->id, rule);
    atomic_init(&st->refs, 1);
    sl__decide_limit_init(&st->lim, false);
    st->lim.top = top;
    st->lim.log_shadow = log_shadow;
    st->lim.store.name = st->rname;
    st->lim.store.params = &st->params;
    st->lim.store.on_failure = on_failure;
    atomic_init(&st->lim.store.table, NULL);
    atomic_init(&st->lim.store.fallback, NULL);
    return st;
}

/* The table, created on first use (several threads may race: one wins). It
 * is also the Redis store's local fallback. */
static sl_table *lstate_table(lstate *st) {
    sl_table *t = atomic_load_explicit(&st->lim.store.table, memory_order_acquire);
    if (t || !st->params.algorithm) return t;
    sl_table_options o = {.params = st->params, .max_memory = st->max_memory};
    if (sl_table_create(&o, &t) != SL_OK) return NULL;
    sl_table *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&st->lim.store.table, &expected, t,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        sl_table_destroy(t);
        t = expected;
    }
    atomic_store_explicit(&st->lim.store.fallback, t, memory_order_release);
    return t;
}

static bool same_params(const sl_params *a, const sl_params *b) {
    return a->algorithm == b->algorithm && a->rate.limit == b->rate.limit &&
           a->rate.period == b->rate.period && a->burst == b->burst && a->flags == b->flags;
}

static void dtop_release(dtop *t) {
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    sl__topk_destroy(t->top);
    free(t);
}

/* The sketch of domain `name` in prev (shared), or a new one. */
static dtop *dtop_for(const sl_domain_set *prev, const char *name, size_t len);

void sl__domain_set_retain(sl_domain_set *s) {
    atomic_fetch_add(&s->refs, 1);
}

void sl__domain_set_release(sl_domain_set *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    for (size_t i = 0; i < s->nstates; i++) lstate_release(s->states[i]);
    free(s->states);
    size_t nov = atomic_load(&s->nov);
    for (size_t i = 0; i < nov; i++) lstate_release(s->ov[i].st);
    for (size_t i = 0; i < s->ndomains; i++) dtop_release(s->domains[i].refused);
    pthread_mutex_destroy(&s->ov_lock);
    for (arena_block *b = s->arena, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(s);
}

/* ---- compiling ------------------------------------------------------------- */

/* Open-addressing index of (bytes -> value) used while compiling. */
typedef struct smap {
    struct {
        const char *k;
        size_t n;
        uint64_t h;
        void *v;
    } * e;
    size_t mask, count;
} smap;

static bool smap_init(smap *m, size_t expect) {
    size_t cap = 16;
    while (cap < 2 * expect + 2) cap *= 2;
    m->e = calloc(cap, sizeof *m->e);
    m->mask = cap - 1;
    m->count = 0;
    return m->e != NULL;
}

static void **smap_slot(smap *m, const char *k, size_t n, bool *found) {
    uint64_t h = sl__hash(k, n, 0x5eed);
    for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
        if (!m->e[i].k) {
            *found = false;
            m->e[i].k = k;
            m->e[i].n = n;
            m->e[i].h = h;
            m->count++;
            return &m->e[i].v;
        }
        if (m->e[i].h == h && m->e[i].n == n && !memcmp(m->e[i].k, k, n)) {
            *found = true;
            return &m->e[i].v;
        }
    }
}

static void *smap_get(const smap *m, const char *k, size_t n) {
    if (!m->e) return NULL;
    uint64_t h = sl__hash(k, n, 0x5eed);
    for (size_t i = h & m->mask; m->e[i].k; i = (i + 1) & m->mask)
        if (m->e[i].h == h && m->e[i].n == n && !memcmp(m->e[i].k, k, n)) return m->e[i].v;
    return NULL;
}

typedef struct builder {
    sl_domain_set *s;
    sl__topk *top; /* the sketch of the domain being compiled */
    smap prev;     /* id -> lstate of the previous set */
    smap names;    /* rate_limit name -> id + 1 */
    int nnames;
    size_t states_cap;
    char *err;
    size_t errlen;
    bool failed;
} builder;

static uint64_t pair_hash(uint64_t seed, const char *k, size_t kl, const char *v, size_t vl,
                          bool keyonly) {
    uint64_t h = sl__hash(k, kl, seed + keyonly);
    return keyonly ? h : sl__hash(v, vl, h);
}

static int name_id(builder *b, const char *name) {
    bool found;
    void **slot = smap_slot(&b->names, name, strlen(name), &found);
    if (!found) *slot = (void *)(intptr_t)(++b->nnames);
    return (int)(intptr_t)*slot - 1;
}

static climit *compile_limit(builder *b, const rdesc *d, const char *domain, size_t dlen,
                             const str *path) {
    sl_domain_set *s = b->s;
    const rlimit *r = d->limit;
    climit *c = arena_alloc(s, sizeof *c);
    if (!c) return NULL;
    c->rpu = r->rpu;
    c->unit = r->unit;
    c->period = unit_seconds[r->unit] * NS_SEC;
    c->unlimited = r->unlimited;
    c->shadow = d->shadow_mode;
    c->quota = d->quota_mode;
    c->metadata = d->metadata ? arena_str(s, d->metadata, strlen(d->metadata)) : NULL;
    if (d->metadata && !c->metadata) return NULL;
    c->name = r->name ? arena_str(s, r->name, strlen(r->name)) : NULL;
    c->name_id = r->name ? name_id(b, r->name) : -1;
    if (r->nreplaces) {
        c->replaces = arena_alloc(s, r->nreplaces * sizeof *c->replaces);
        if (!c->replaces) return NULL;
        for (size_t i = 0; i < r->nreplaces; i++) c->replaces[i] = name_id(b, r->replaces[i]);
        c->nreplaces = r->nreplaces;
    }
    sl_params p = {0};
    if (!r->unlimited && r->rpu > 0) {
        p.algorithm = r->algorithm;
        p.rate.limit = r->rpu;
        p.rate.period = c->period;
        p.burst = p.algorithm >= SL_TOKEN_BUCKET ? (r->burst ? r->burst : r->rpu) : 0;
    }
    /* id: domain NUL path */
    str id = {0};
    str_add(&id, domain, dlen);
    str_add(&id, "", 1);
    str_add(&id, path->p, path->len);
    if (id.failed) return free(id.p), NULL;
    lstate *old = smap_get(&b->prev, id.p, id.len);
    lstate *st;
    if (old && same_params(&old->params, &p) && old->max_memory == s->max_memory &&
        old->lim.store.on_failure == s->on_failure) {
        atomic_fetch_add(&old->refs, 1);
        st = old;
    } else {
        st = lstate_new(id.p, id.len, &p, s->max_memory, s->on_failure, b->top, c->rpu, c->unit);
    }
    free(id.p);
    if (!st) return NULL;
    if (s->nstates == b->states_cap) {
        size_t cap = b->states_cap ? 2 * b->states_cap : 64;
        lstate **ns = realloc(s->states, cap * sizeof *ns);
        if (!ns) {
            lstate_release(st);
            return NULL;
        }
        s->states = ns;
        b->states_cap = cap;
    }
    s->states[s->nstates++] = st;
    c->st = st;
    return c;
}

static bool compile_level(builder *b, const rdesc *d, size_t n, clevel *lv, const char *domain,
                          size_t dlen, str *path) {
    sl_domain_set *s = b->s;
    lv->nodes = arena_alloc(s, (n ? n : 1) * sizeof *lv->nodes);
    size_t cap = 4;
    while (cap < 2 * n) cap *= 2;
    lv->slots = arena_alloc(s, cap * sizeof *lv->slots);
    lv->wild = arena_alloc(s, (n ? n : 1) * sizeof *lv->wild);
    if (!lv->nodes || !lv->slots || !lv->wild) return false;
    lv->mask = (uint32_t)(cap - 1);
    lv->n = n;
    for (size_t i = 0; i < n; i++) {
        const rdesc *x = &d[i];
        cnode *c = &lv->nodes[i];
        c->key = arena_str(s, x->key, x->klen);
        c->klen = x->klen;
        if (x->value) {
            c->value = arena_str(s, x->value, x->vlen);
            c->vlen = x->vlen;
            c->wildcard = memchr(x->value, '*', x->vlen) != NULL;
            c->plen = x->vlen;
            if (x->value[x->vlen - 1] == '*') c->vlen--;
        }
        if (!c->key || (x->value && !c->value)) return false;
        c->share = x->share_threshold && c->wildcard;
        if (c->wildcard) {
            lv->wild[lv->nwild++] = (uint32_t)i;
        } else {
            uint64_t h = pair_hash(s->seed, c->key, c->klen, c->value, c->vlen, !c->value);
            uint32_t j = (uint32_t)h & lv->mask;
            while (lv->slots[j]) j = (j + 1) & lv->mask;
            lv->slots[j] = (uint32_t)i + 1;
        }
        size_t mark = path->len;
        if (mark) str_add(path, ".", 1);
        str_add(path, x->key, x->klen);
        if (x->value) str_add(path, "_", 1), str_add(path, x->value, x->vlen);
        if (path->failed) return false;
        if (x->limit && !(c->limit = compile_limit(b, x, domain, dlen, path))) return false;
        if (x->nkids) {
            c->kids = arena_alloc(s, sizeof *c->kids);
            if (!c->kids || !compile_level(b, x->kids, x->nkids, c->kids, domain, dlen, path))
                return false;
        }
        path->len = mark;
        path->p[mark] = '\0';
    }
    return true;
}

static int build(const sl_domain_rules *rules, size_t max_memory, sl_fail_mode on_failure,
                 sl_domain_set *prev, sl_domain_set **out, char *err, size_t errlen) {
    *out = NULL;
    sl_domain_set *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    atomic_init(&s->refs, 1);
    atomic_init(&s->nov, 0);
    pthread_mutex_init(&s->ov_lock, NULL);
    s->seed = sl__random_seed();
    s->max_memory = max_memory;
    s->on_failure = on_failure;
    builder b = {.s = s, .err = err, .errlen = errlen};
    size_t nd = rules ? rules->n : 0;
    bool ok = smap_init(&b.names, 64) && smap_init(&b.prev, prev ? prev->nstates : 0);
    if (ok && prev)
        for (size_t i = 0; i < prev->nstates; i++) {
            bool found;
            *smap_slot(&b.prev, prev->states[i]->id, prev->states[i]->idlen, &found) =
                prev->states[i];
        }
    size_t cap = 4;
    while (cap < 2 * nd) cap *= 2;
    s->domains = ok ? arena_alloc(s, (nd ? nd : 1) * sizeof *s->domains) : NULL;
    s->dslots = ok ? arena_alloc(s, cap * sizeof *s->dslots) : NULL;
    s->dmask = (uint32_t)(cap - 1);
    ok = ok && s->domains && s->dslots;
    str path = {0};
    for (size_t i = 0; ok && i < nd; i++) {
        const rdomain *r = &rules->d[i];
        cdomain *c = &s->domains[s->ndomains++];
        c->name = arena_str(s, r->name, r->len);
        c->len = r->len;
        c->refused = dtop_for(prev, r->name, r->len);
        ok = c->name != NULL && c->refused != NULL;
        uint32_t j = (uint32_t)sl__hash(r->name, r->len, s->seed) & s->dmask;
        while (s->dslots[j]) j = (j + 1) & s->dmask;
        s->dslots[j] = (uint32_t)i + 1;
        path.len = 0;
        b.top = ok ? c->refused->top : NULL;
        ok = ok && compile_level(&b, r->descs, r->n, &c->top, r->name, r->len, &path);
    }
    free(path.p);
    /* limit overrides: keep the tables of the domains that remain */
    if (ok && prev) {
        size_t nov = atomic_load(&prev->nov), k = 0;
        for (size_t i = 0; i < nov; i++) {
            const cdomain *pd = &prev->domains[prev->ov[i].domain];
            for (size_t j = 0; j < s->ndomains; j++) {
                if (s->domains[j].len != pd->len || memcmp(s->domains[j].name, pd->name, pd->len) ||
                    prev->ov[i].st->lim.store.on_failure != on_failure)
                    continue;
                s->ov[k] = prev->ov[i];
                s->ov[k].domain = j;
                atomic_fetch_add(&s->ov[k].st->refs, 1);
                k++;
            }
        }
        atomic_store(&s->nov, k);
    }
    free(b.names.e);
    free(b.prev.e);
    if (!ok) {
        snprintf(err, errlen, "out of memory while compiling the rule files");
        sl__domain_set_release(s);
        return -1;
    }
    *out = s;
    return 0;
}

int sl__domain_set_build(const sl_domain_rules *rules, size_t max_memory, sl_domain_set *prev,
                         int64_t now, sl_domain_set **out, char *err, size_t errlen) {
    (void)now;
    return build(rules, max_memory, SL_FAIL_OPEN, prev, out, err, errlen);
}

int sl__domain_set_create(const sl_config *cfg, sl_domain_set *prev, int64_t now,
                          sl_domain_set **out, char *err, size_t errlen) {
    (void)now;
    int rc =
        build(cfg->domain_rules, cfg->max_memory, cfg->redis.on_failure, prev, out, err, errlen);
    if (rc == 0) sl__domain_set_shadow(*out, cfg->shadow);
    if (rc == 0) sl__domain_set_quota_mode(*out, cfg->quota_mode);
    return rc;
}

void sl__domain_set_shadow(sl_domain_set *s, bool shadow) {
    s->shadow = shadow;
}

void sl__domain_set_quota_mode(sl_domain_set *s, bool quota_mode) {
    s->quota = quota_mode;
}

/* ---- matching ---------------------------------------------------------------- */

static const cdomain *find_domain(const sl_domain_set *s, const char *name, size_t len) {
    if (!s || !s->ndomains) return NULL;
    for (uint32_t j = (uint32_t)sl__hash(name, len, s->seed) & s->dmask; s->dslots[j];
         j = (j + 1) & s->dmask) {
        const cdomain *d = &s->domains[s->dslots[j] - 1];
        if (d->len == len && !memcmp(d->name, name, len)) return d;
    }
    return NULL;
}

static dtop *dtop_for(const sl_domain_set *prev, const char *name, size_t len) {
    const cdomain *old = find_domain(prev, name, len);
    if (old && old->refused) {
        atomic_fetch_add(&old->refused->refs, 1);
        return old->refused;
    }
    dtop *t = calloc(1, sizeof *t);
    if (!t || sl__topk_create(TOP_CAPACITY, &t->top) != 0) {
        free(t);
        return NULL;
    }
    atomic_init(&t->refs, 1);
    return t;
}

/* Whether value v matches pattern p, where each '*' stands for any run of
 * bytes (none included) and everything else for itself: the whole value,
 * as upstream matches wildcard values ("foo*" is a prefix, "bar*b" and
 * "foo*bar*baz" more). The classic two-pointer walk: on a mismatch, the
 * last '*' takes one more byte; O(|p|*|v|) at worst, linear for one '*'. */
static bool glob_match(const char *p, size_t pn, const char *v, size_t vn) {
    size_t i = 0, j = 0, star = SIZE_MAX, mark = 0;
    while (j < vn) {
        if (i < pn && p[i] == '*') {
            star = i++;
            mark = j;
        } else if (i < pn && p[i] == v[j]) {
            i++, j++;
        } else if (star != SIZE_MAX) {
            i = star + 1;
            j = ++mark;
        } else {
            return false;
        }
    }
    while (i < pn && p[i] == '*') i++;
    return i == pn;
}

static const cnode *lookup(const sl_domain_set *s, const clevel *lv, const sl_rls_entry *e,
                           bool *via_share) {
    *via_share = false;
    /* key + value */
    if (e->value_len) {
        uint64_t h = pair_hash(s->seed, e->key, e->key_len, e->value, e->value_len, false);
        for (uint32_t j = (uint32_t)h & lv->mask; lv->slots[j]; j = (j + 1) & lv->mask) {
            const cnode *c = &lv->nodes[lv->slots[j] - 1];
            if (c->value && c->klen == e->key_len && c->vlen == e->value_len &&
                !memcmp(c->key, e->key, c->klen) && !memcmp(c->value, e->value, c->vlen))
                return c;
        }
    }
    /* wildcards, in file order */
    for (size_t i = 0; i < lv->nwild; i++) {
        const cnode *c = &lv->nodes[lv->wild[i]];
        if (c->klen == e->key_len && !memcmp(c->key, e->key, c->klen) &&
            glob_match(c->value, c->plen, e->value, e->value_len)) {
            *via_share = c->share;
            return c;
        }
    }
    /* key only */
    uint64_t h = pair_hash(s->seed, e->key, e->key_len, NULL, 0, true);
    for (uint32_t j = (uint32_t)h & lv->mask; lv->slots[j]; j = (j + 1) & lv->mask) {
        const cnode *c = &lv->nodes[lv->slots[j] - 1];
        if (!c->value && c->klen == e->key_len && !memcmp(c->key, e->key, c->klen)) return c;
    }
    return NULL;
}

/* upstream GetLimit: the rule limit for a descriptor, or NULL. via[i] is
 * the node entry i matched when that was a share_threshold wildcard (its
 * pattern stands for the value in the table key), else NULL. */
static const climit *match(const sl_domain_set *s, const cdomain *d, const sl_rls_descriptor *q,
                           const cnode **via) {
    const clevel *lv = &d->top;
    const climit *found = NULL;
    for (size_t i = 0; i < q->nentries; i++) via[i] = NULL;
    for (size_t i = 0; i < q->nentries; i++) {
        bool share;
        const cnode *c = lookup(s, lv, &q->entries[i], &share);
        via[i] = share ? c : NULL;
        if (c && c->limit && i + 1 == q->nentries) found = c->limit;
        if (!c || !c->kids) break;
        lv = c->kids;
    }
    return found;
}

bool sl__domain_set_match(const sl_domain_set *s, const char *domain, size_t dlen,
                          const sl_rls_descriptor *q, sl_domain_match *out) {
    const cdomain *d = find_domain(s, domain, dlen);
    if (!d || !q->nentries || q->nentries > SL_RLS_MAX_ENTRIES) return false;
    const cnode *via[SL_RLS_MAX_ENTRIES];
    const climit *c = match(s, d, q, via);
    if (!c) return false;
    *out = (sl_domain_match){.rule = c->st->id + d->len + 1,
                             .name = c->name,
                             .metadata = c->metadata,
                             .requests_per_unit = c->rpu,
                             .unit = c->unit,
                             .unlimited = c->unlimited,
                             .shadow = c->shadow || s->shadow,
                             .quota_mode = c->quota || s->quota};
    for (size_t i = 0; i < q->nentries; i++) out->shared |= via[i] != NULL;
    return true;
}

/* ---- deciding ------------------------------------------------------------------ */

static uint32_t clamp_u32(int64_t v) {
    return v <= 0 ? 0 : v >= (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static int64_t ceil_seconds(int64_t ns) {
    return ns <= 0 ? 0 : (ns + NS_SEC - 1) / NS_SEC;
}

/* The override table for (domain, rpu, unit), created on first use. */
static lstate *override_state(sl_domain_set *s, const cdomain *d, uint32_t rpu, int unit) {
    size_t di = (size_t)(d - s->domains);
    size_t n = atomic_load_explicit(&s->nov, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (s->ov[i].domain == di && s->ov[i].rpu == rpu && s->ov[i].unit == unit)
            return s->ov[i].st;
    pthread_mutex_lock(&s->ov_lock);
    n = atomic_load_explicit(&s->nov, memory_order_acquire);
    lstate *st = NULL;
    for (size_t i = 0; i < n && !st; i++)
        if (s->ov[i].domain == di && s->ov[i].rpu == rpu && s->ov[i].unit == unit) st = s->ov[i].st;
    if (!st && n < SL_RLS_MAX_OVERRIDES) {
        sl_params p = {.algorithm = SL_FIXED_WINDOW,
                       .rate = {.limit = rpu, .period = unit_seconds[unit] * NS_SEC}};
        char id[FIELD_MAX + 64];
        int k = snprintf(id, sizeof id, "%.*s%climit_override.%u_per_%s",
                         (int)(d->len < FIELD_MAX ? d->len : FIELD_MAX), d->name, '\0', rpu,
                         unit_names[unit]);
        st =
            lstate_new(id, (size_t)k, &p, s->max_memory, s->on_failure, d->refused->top, rpu, unit);
        if (st) {
            s->ov[n] = (override){.domain = di, .rpu = rpu, .unit = unit, .st = st};
            atomic_store_explicit(&s->nov, n + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&s->ov_lock);
    return st;
}

typedef struct item {
    size_t desc;      /* index of the descriptor */
    lstate *st;       /* the rule's or override's state; NULL for an override of 0 */
    const climit *cl; /* NULL for an override */
    uint32_t rpu;
    int unit;
    int64_t period;
    int64_t cost;
    bool shadow, share;
    bool refused;    /* over the limit (for a shadow limit: would have been) */
    bool counted;    /* counted already (a table limit: by the engine) */
    sl_decision dec; /* table limits: what the limit answered */
} item;

static void put_varint(str *k, size_t v) {
    char b[10];
    size_t n = 0;
    do {
        b[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    str_add(k, b, n);
}

/* What a limit says without consuming anything. */
/* printable ASCII of s[0..n) at buf[o..cap): other bytes become '?'. */
static size_t put_text(char *buf, size_t o, size_t cap, const char *s, size_t n) {
    for (size_t i = 0; i < n && o < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    return o;
}

/* The sketch key of a refused descriptor (at most SL_TOPK_KEY_MAX bytes):
 * its rule's stats key, TOP_SEP, and the entries as "key=value,key=value",
 * in printable ASCII. Returns the length. */
static size_t descriptor_label(const item *it, const sl_rls_descriptor *q, char *buf) {
    const size_t cap = SL_TOPK_KEY_MAX;
    const char *rule = it->st->id + strlen(it->st->id) + 1;
    size_t o = put_text(buf, 0, cap, rule, strlen(rule));
    if (o < cap) buf[o++] = TOP_SEP;
    for (size_t e = 0; e < q->nentries; e++) {
        if (e && o < cap) buf[o++] = ',';
        o = put_text(buf, o, cap, q->entries[e].key, q->entries[e].key_len);
        if (o < cap) buf[o++] = '=';
        o = put_text(buf, o, cap, q->entries[e].value, q->entries[e].value_len);
    }
    return o;
}

/* A domain limit's shadow log line: its domain and rule, the descriptor
 * (from the sketch label: rule TOP_SEP entries) and its rate. */
static void log_shadow(const sl_decide_limit *l, const char *label, size_t n, const sl_decision *d,
                       int64_t now) {
    (void)d;
    const lstate *st = (const lstate *)(const void *)l;
    char dom[SHOW_MAX + 1];
    dom[put_text(dom, 0, SHOW_MAX, st->id, strlen(st->id))] = '\0';
    size_t sep = 0;
    while (sep < n && label[sep] != TOP_SEP) sep++;
    const char *what = sep < n ? label + sep + 1 : "";
    sl__log_limited(now, SL_LOG_INFO,
                    "shadow: domain %s rule %.*s would have refused %.*s (%u per %s)", dom,
                    (int)sep, label, (int)(sep < n ? n - sep - 1 : 0), what, (unsigned)st->rpu,
                    sl__rls_unit_name(st->unit));
}

/* A request's limits while the engine decides them (the call's user area;
 * the caller's bytes follow). */
typedef struct dstate {
    sl_domain_set *set; /* held */
    const cdomain *domain;
    item items[SL_RLS_MAX_DESCRIPTORS];
    size_t nitems;
    size_t map[SL_CHECK_MAX]; /* engine item -> items index */
    size_t nactive;
    int64_t now;
    size_t ndesc;
    sl_rls_status statuses[SL_RLS_MAX_DESCRIPTORS]; /* those final before deciding */
} dstate;

#define DSTATE_BYTES ((sizeof(dstate) + 15) & ~(size_t)15)

typedef struct label_ctx {
    const item *items;
    const size_t *map;
    const sl_rls_request *req;
} label_ctx;

static size_t label_of(void *ctx, size_t a, char *buf, size_t size) {
    (void)size; /* SL_TOPK_KEY_MAX */
    const label_ctx *lc = ctx;
    const item *it = &lc->items[lc->map[a]];
    return descriptor_label(it, &lc->req->descriptors[it->desc], buf);
}

static void statuses_of(const cdomain *d, item *items, size_t nitems, int64_t now,
                        const sl_rls_request *req, sl_rls_status *statuses, int *overall);
static void note_refusal(const cdomain *d, const item *it, const sl_rls_request *req, int64_t now);

/* Steps 1-5 of a decision; the table limits go into an engine call. */
static sl_rls_error decide(sl_domain_set *s, const sl_rls_request *req, int64_t now,
                           sl_rls_status *statuses, int *overall, const char **message,
                           size_t user_bytes, sl_decide_call **call) {
    *call = NULL;
    *overall = SL_RLS_OK;
    *message = NULL;
    if (!req->domain_len) return *message = "rate limit domain must not be empty", SL_RLS_EINVAL;
    if (!req->ndescriptors)
        return *message = "rate limit descriptor list must not be empty", SL_RLS_EINVAL;
    if (req->ndescriptors > SL_RLS_MAX_DESCRIPTORS)
        return *message = "too many descriptors (at most 64)", SL_RLS_EINVAL;
    for (size_t i = 0; i < req->ndescriptors; i++) {
        const sl_rls_descriptor *q = &req->descriptors[i];
        if (q->nentries > SL_RLS_MAX_ENTRIES)
            return *message = "too many entries in a descriptor (at most 32)", SL_RLS_EINVAL;
        if (q->has_limit &&
            (q->limit_unit < SL_RLS_UNIT_SECOND || q->limit_unit > SL_RLS_UNIT_YEAR))
            return *message = "a descriptor's limit override needs a unit from SECOND to YEAR",
                   SL_RLS_EINVAL;
        statuses[i] = (sl_rls_status){.code = SL_RLS_OK};
    }
    const cdomain *d = find_domain(s, req->domain, req->domain_len);
    if (!d) return SL_RLS_DONE; /* unknown domain: nothing applies (upstream) */

    /* 1. which rule applies to each descriptor (overrides need none) */
    const climit *matched[SL_RLS_MAX_DESCRIPTORS];
    bool shared[SL_RLS_MAX_DESCRIPTORS];
    const cnode *via[SL_RLS_MAX_ENTRIES];
    for (size_t i = 0; i < req->ndescriptors; i++) {
        const sl_rls_descriptor *q = &req->descriptors[i];
        matched[i] = NULL;
        shared[i] = false;
        if (q->has_limit) continue;
        matched[i] = match(s, d, q, via);
        for (size_t e = 0; matched[i] && e < q->nentries && !shared[i]; e++)
            shared[i] = via[e] != NULL;
    }
    /* 2. replaces: a matched limit whose name another matched limit
     * replaces is dropped (upstream: unlimited ones replace too) */
    for (size_t i = 0; i < req->ndescriptors; i++) {
        const climit *c = matched[i];
        if (!c || c->name_id < 0) continue;
        bool replaced = false;
        for (size_t j = 0; j < req->ndescriptors && !replaced; j++)
            for (size_t r = 0; matched[j] && r < matched[j]->nreplaces && !replaced; r++)
                replaced = matched[j]->replaces[r] == c->name_id;
        if (replaced) matched[i] = NULL;
    }
    /* 3. the limits to decide */
    item items[SL_RLS_MAX_DESCRIPTORS];
    size_t nitems = 0;
    int64_t request_cost = req->hits_addend ? req->hits_addend : 1;
    for (size_t i = 0; i < req->ndescriptors; i++) {
        const sl_rls_descriptor *q = &req->descriptors[i];
        const climit *c = matched[i];
        item it = {.desc = i, .share = shared[i]};
        it.cost = q->has_hits ? (q->hits > INT64_MAX ? INT64_MAX : (int64_t)q->hits) : request_cost;
        if (q->has_limit) {
            it.rpu = q->limit_requests_per_unit;
            it.unit = q->limit_unit;
            it.period = unit_seconds[it.unit] * NS_SEC;
            if (it.rpu && !(it.st = override_state(s, d, it.rpu, it.unit)))
                return *message = "too many distinct limit overrides", SL_RLS_EEXHAUSTED;
        } else if (!c) {
            continue; /* no rule: OK, nothing else said (upstream) */
        } else if (c->unlimited) {
            statuses[i].limit_remaining = UINT32_MAX;
            atomic_fetch_add_explicit(&c->st->lim.allowed, 1, memory_order_relaxed);
            continue;
        } else {
            it.cl = c;
            it.st = c->st;
            it.rpu = c->rpu;
            it.unit = c->unit;
            it.period = c->period;
            it.shadow = c->shadow;
        }
        it.shadow |= s->shadow; /* the config's top-level shadow: a dry run of everything */
        items[nitems++] = it;
    }
    if (!nitems) return SL_RLS_DONE;

    /* 4. table keys: a rule's table by the entries' values (the rule fixes
     * the keys); an override's table by keys and values */
    size_t need = 1;
    for (size_t k = 0; k < nitems; k++) {
        const sl_rls_descriptor *q = &req->descriptors[items[k].desc];
        for (size_t e = 0; e < q->nentries; e++)
            need += 21 + q->entries[e].value_len + (items[k].cl ? 0 : q->entries[e].key_len);
    }
    char stack[KEY_STACK_BYTES];
    str keys = {.p = stack, .cap = sizeof stack};
    if (need > sizeof stack) keys = (str){0};
    sl_decide_item active[SL_CHECK_MAX];
    size_t map[SL_CHECK_MAX], nactive = 0;
    bool blocked = false; /* an enforced limit of 0 refuses the request */
    sl_rls_error rc = SL_RLS_DONE;
    for (size_t k = 0; k < nitems; k++) {
        item *it = &items[k];
        if (it->rpu == 0) {
            it->refused = it->cost > 0; /* upstream: hits > 0 */
            blocked |= it->refused && !it->shadow;
            continue;
        }
        if (nactive == SL_CHECK_MAX) {
            rc = SL_RLS_EINVAL;
            *message = "too many rate-limited descriptors in one request (at most 16)";
            goto out;
        }
        const sl_rls_descriptor *q = &req->descriptors[it->desc];
        if (it->share) match(s, d, q, via);
        size_t off = keys.len;
        for (size_t e = 0; e < q->nentries; e++) {
            const sl_rls_entry *x = &q->entries[e];
            if (!it->cl) put_varint(&keys, x->key_len), str_add(&keys, x->key, x->key_len);
            if (it->share && via[e]) { /* share_threshold: one counter for the pattern */
                str_add(&keys, "*", 1);
                put_varint(&keys, via[e]->vlen);
                str_add(&keys, via[e]->value, via[e]->vlen);
            } else {
                put_varint(&keys, x->value_len);
                str_add(&keys, x->value, x->value_len);
            }
        }
        sl_table *t = lstate_table(it->st);
        if (!t || keys.failed) {
            rc = SL_RLS_EEXHAUSTED;
            *message = "out of memory";
            goto out;
        }
        (void)t;
        /* the key's bytes: an offset now, a pointer once the buffer stops moving */
        active[nactive] = (sl_decide_item){.limit = &it->st->lim,
                                           .keylen = keys.len - off,
                                           .cost = it->cost,
                                           .shadow = it->shadow};
        active[nactive].key = (const void *)(uintptr_t)off;
        map[nactive++] = k;
    }
    for (size_t a = 0; a < nactive; a++) {
        active[a].key = keys.p + (uintptr_t)active[a].key;
        if (blocked) active[a].cost = 0; /* refused anyway: the others are only looked at */
    }

    /* 5. the table limits: one engine call, all or nothing, shadow limits
     * as their own group */
    if (nactive) {
        label_ctx lc = {.items = items, .map = map, .req = req};
        sl_decide_call *c =
            sl__decide_call_new_own(active, nactive, label_of, &lc, DSTATE_BYTES + user_bytes,
                                    DSTATE_BYTES); /* written below, as far as it is read */
        if (!c) {
            rc = SL_RLS_EEXHAUSTED;
            *message = "out of memory";
            goto out;
        }
        /* limits of 0 are counted now (their labels need the request) */
        for (size_t k = 0; k < nitems; k++) {
            item *it = &items[k];
            if (it->rpu || !it->st) continue;
            atomic_fetch_add_explicit(!it->refused ? &it->st->lim.allowed
                                      : it->shadow ? &it->st->lim.shadow_limited
                                                   : &it->st->lim.limited,
                                      1, memory_order_relaxed);
            if (it->refused) note_refusal(d, it, req, now);
            it->counted = true;
        }
        dstate *ds = sl__decide_call_user(c);
        ds->set = s;
        sl__domain_set_retain(s);
        ds->domain = d;
        memcpy(ds->items, items, nitems * sizeof *items);
        ds->nitems = nitems;
        memcpy(ds->map, map, nactive * sizeof *map);
        ds->nactive = nactive;
        ds->now = now;
        ds->ndesc = req->ndescriptors;
        memcpy(ds->statuses, statuses, req->ndescriptors * sizeof *statuses);
        *call = c;
        goto out;
    }
    statuses_of(d, items, nitems, now, req, statuses, overall);
out:
    if (keys.p != stack) free(keys.p);
    return rc;
}

/* A refused descriptor the engine did not see (a limit of 0 requests): into
 * the domain's sketch, and for a shadow limit into the log. */
static void note_refusal(const cdomain *d, const item *it, const sl_rls_request *req, int64_t now) {
    char buf[SL_TOPK_KEY_MAX];
    size_t n = descriptor_label(it, &req->descriptors[it->desc], buf);
    sl__topk_add(d->refused->top, buf, n, 1);
    if (it->shadow) log_shadow(&it->st->lim, buf, n, &it->dec, now);
}

/* 6. the statuses, in the descriptors' order (req: for the labels of
 * refusals the engine did not see; NULL when there are none) */
static void statuses_of(const cdomain *d, item *items, size_t nitems, int64_t now,
                        const sl_rls_request *req, sl_rls_status *statuses, int *overall) {
    for (size_t k = 0; k < nitems; k++) {
        item *it = &items[k];
        sl_rls_status *st = &statuses[it->desc];
        st->has_limit = true;
        st->requests_per_unit = it->rpu;
        st->unit = it->unit;
        st->name = it->cl ? it->cl->name : NULL;
        int64_t window_left = it->period - now % it->period;
        if (it->rpu == 0) {
            st->reset_seconds = ceil_seconds(window_left);
        } else {
            it->refused |= !it->dec.allowed;
            st->limit_remaining = clamp_u32(it->dec.remaining);
            if (it->st->params.algorithm == SL_FIXED_WINDOW) /* upstream: the window's end */
                st->reset_seconds = ceil_seconds(window_left);
            else if (it->refused && it->dec.retry_after > 0)
                st->reset_seconds = ceil_seconds(it->dec.retry_after);
            else
                st->reset_seconds = ceil_seconds(it->dec.reset_after);
        }
        if (it->refused && !it->shadow) { /* upstream never says more than 0 here (an Envoy
                                             would show X-RateLimit-Remaining > 0 on a 429) */
            st->code = SL_RLS_OVER_LIMIT;
            st->limit_remaining = 0;
            *overall = SL_RLS_OVER_LIMIT;
        }
        if (it->st && !it->counted) { /* a limit of 0: counted here */
            atomic_uint_fast64_t *c = !it->refused ? &it->st->lim.allowed
                                      : it->shadow ? &it->st->lim.shadow_limited
                                                   : &it->st->lim.limited;
            atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
            if (it->refused && req) note_refusal(d, it, req, now);
        }
    }
}

static void dstate_release(void *arg) {
    dstate *ds = arg;
    sl__domain_set_release(ds->set);
}

sl_rls_error sl__domain_prepare(sl_domain_set *s, const sl_rls_request *req, int64_t now,
                                sl_rls_status *statuses, int *overall, const char **message,
                                size_t user_bytes, sl_decide_call **call) {
    sl_rls_error rc = decide(s, req, now, statuses, overall, message, user_bytes, call);
    if (*call) sl__decide_call_on_free(*call, dstate_release, sl__decide_call_user(*call));
    return rc;
}

void *sl__domain_user(sl_decide_call *c) {
    return (char *)sl__decide_call_user(c) + DSTATE_BYTES;
}

sl_rls_error sl__domain_finish(sl_decide_call *c, sl_rls_status *statuses, size_t *n, int *overall,
                               const char **message) {
    dstate *ds = sl__decide_call_user(c);
    *overall = SL_RLS_OK;
    *message = NULL;
    *n = ds->ndesc;
    if (c->rc != SL_OK && c->rc != SL_ECOST) {
        *message = c->rc == SL_EKEY ? "a descriptor is longer than 65535 bytes" : "out of memory";
        return c->rc == SL_EKEY ? SL_RLS_EINVAL : SL_RLS_EEXHAUSTED;
    }
    memcpy(statuses, ds->statuses, ds->ndesc * sizeof *statuses);
    for (size_t a = 0; a < ds->nactive; a++) {
        item *it = &ds->items[ds->map[a]];
        const sl_decide_item *di = &c->items[a];
        it->counted = true;
        if (di->decided) {
            it->dec = di->decision;
            if (!di->decision.allowed || di->shadowed) it->refused = true;
        } else { /* not decided (the deny cache or a fail mode decided another) */
            it->dec = (sl_decision){.allowed = true, .limit = it->rpu, .remaining = it->rpu};
        }
        if (it->dec.retry_after < 0) it->dec.retry_after = 0; /* a cost that never passes */
    }
    statuses_of(ds->domain, ds->items, ds->nitems, ds->now, NULL, statuses, overall);
    return SL_RLS_DONE;
}

/* ---- statistics --------------------------------------------------------------- */

size_t sl__domain_set_rule_count(const sl_domain_set *s) {
    return s ? s->nstates + atomic_load(&((sl_domain_set *)s)->nov) : 0;
}

bool sl__domain_set_rule_stats(const sl_domain_set *s, size_t i, sl_domain_rule_stats *out) {
    if (!s) return false;
    lstate *st;
    if (i < s->nstates)
        st = s->states[i];
    else if (i - s->nstates < atomic_load(&((sl_domain_set *)s)->nov))
        st = ((sl_domain_set *)s)->ov[i - s->nstates].st;
    else
        return false;
    out->domain = st->id;
    out->rule = st->id + strlen(st->id) + 1;
    out->allowed = atomic_load_explicit(&st->lim.allowed, memory_order_relaxed);
    out->limited = atomic_load_explicit(&st->lim.limited, memory_order_relaxed);
    out->shadow_limited = atomic_load_explicit(&st->lim.shadow_limited, memory_order_relaxed);
    sl_table *t = atomic_load_explicit(&st->lim.store.table, memory_order_acquire);
    out->keys = 0;
    if (t) {
        sl_table_stats ts;
        sl_table_stats_get(t, &ts);
        out->keys = ts.keys;
    }
    return true;
}

long sl__domain_set_top(const sl_domain_set *s, const char *domain, size_t dlen, const char *rule,
                        size_t rlen, sl_domain_top_item *out, size_t max) {
    const cdomain *d = find_domain(s, domain, dlen);
    if (!d) return -1;
    sl__topk_item all[TOP_CAPACITY];
    size_t n = sl__topk_list(d->refused->top, all, TOP_CAPACITY), k = 0;
    _Static_assert(SL_DOMAIN_TOP_TEXT >= SL_TOPK_KEY_MAX, "a sketch key fits");
    for (size_t i = 0; i < n && k < max; i++) {
        const char *p = all[i].key;
        size_t len = all[i].keylen, sep = 0;
        while (sep < len && p[sep] != TOP_SEP) sep++;
        if (rule && (sep != rlen || memcmp(p, rule, rlen) != 0)) continue;
        sl_domain_top_item *o = &out[k++];
        memcpy(o->rule, p, sep);
        o->rule[sep] = '\0';
        size_t kl = sep < len ? len - sep - 1 : 0;
        memcpy(o->key, p + len - kl, kl);
        o->key[kl] = '\0';
        o->count = all[i].count;
        o->error = all[i].error;
    }
    return (long)k;
}
