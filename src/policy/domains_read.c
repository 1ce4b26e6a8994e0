/* domains_read.c: reading envoyproxy/ratelimit rule files (domains.h,
 * first stage). A file is parsed into a bounded node tree (domains_yaml.c:
 * 4 MiB per file, SL__DOMAINS_MAX_RULES descriptors, nesting), then walked
 * against the schema of envoyproxy/ratelimit's YamlRoot / YamlDescriptor /
 * YamlRateLimit. Every problem becomes "file:line: field: message"; the
 * messages of upstream checks keep upstream's words ("descriptor has empty
 * key", "duplicate descriptor composite key '...'", ...). Upstream's YAML
 * is gopkg.in/yaml.v2, so booleans are YAML 1.1 (true/yes/on, ...) and any
 * scalar may be a string. Unknown keys are errors, as upstream; a key in
 * the wrong block is an error here too (upstream silently ignores it). A
 * descriptor's metadata is kept as a JSON object. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "policy/domains_internal.h"
#include "policy/domains_yaml.h"
#include "sluice/error.h"
#include "util/file_read.h"

/* ---- the rules as read ---------------------------------------------------- */

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

void sl__domain_rules_free(sl__domain_rules *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->d[i].name);
        free(r->d[i].file);
        rdescs_free(r->d[i].descs, r->d[i].n);
    }
    free(r->d);
    free(r);
}

size_t sl__domain_rules_domains(const sl__domain_rules *r) {
    return r ? r->n : 0;
}

size_t sl__domain_rules_limits(const sl__domain_rules *r) {
    return r ? r->nlimits : 0;
}

/* ---- walking a file against the schema ------------------------------------ */

const char *const sl__rls_unit_names[8] = {"UNKNOWN", "SECOND", "MINUTE", "HOUR",
                                           "DAY",     "MONTH",  "YEAR",   "WEEK"};
const int64_t sl__rls_unit_seconds[8] = {0, 1, 60, 3600, 86400, 30 * 86400, 365 * 86400, 7 * 86400};

const char *sl__rls_unit_name(int unit) {
    return unit >= 0 && unit < (int)COUNT(sl__rls_unit_names) ? sl__rls_unit_names[unit]
                                                              : "UNKNOWN";
}

static const char *const top_keys[] = {"domain", "descriptors"};
static const char *const desc_keys[] = {
    "key",         "value",           "rate_limit",      "descriptors",
    "shadow_mode", "detailed_metric", "value_to_metric", "share_threshold",
    "quota_mode",  "metadata"};
static const char *const limit_keys[] = {"unit",     "requests_per_unit", "unlimited", "name",
                                         "replaces", "algorithm",         "burst"};

/* Which of `keys` a mapping key is (its index), or SL_EINVAL after
 * reporting it (unknown, in the wrong block, or not a string). */
static int key_index(walker *w, const ynode *k, const char *parent, const char *const *keys,
                     size_t nkeys) {
    if (k->type != Y_SCALAR) {
        sl__dy_expected(w, k, parent, "a key");
        return SL_EINVAL;
    }
    for (size_t i = 0; i < nkeys; i++)
        if (strlen(keys[i]) == k->len && memcmp(keys[i], k->text, k->len) == 0) return (int)i;
    char field[FIELD_MAX], q[64];
    sl__dy_quote(q, sizeof q, k->text, k->len);
    sl__dy_join(field, parent, k->len < 64 ? k->text : "?");
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
        sl__errors_add(w->errs, w->source, k->line, field, "config error, key %s %s", q, where);
    else
        sl__errors_add(w->errs, w->source, k->line, field, "config error, unknown key %s", q);
    return SL_EINVAL;
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
        sl__dy_join(field, parent, keys[idx]);
        if (seen[idx]) {
            sl__errors_add(w->errs, w->source, k->line, field, "duplicate key (first at line %d)",
                           seen[idx]);
            continue;
        }
        seen[idx] = k->line;
        fn(w, obj, idx, v, field);
    }
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
    sl__dstr_add(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sl__dstr_add(o, e, 2);
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            sl__dstr_add(o, e, 6);
        } else {
            sl__dstr_add(o, (const char *)&c, 1);
        }
    }
    sl__dstr_add(o, "\"", 1);
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
        sl__errors_add(w->errs, w->source, v->line, field, "metadata nested more than %d deep",
                       METADATA_MAX_DEPTH);
        return false;
    }
    if (v->type == Y_MAP) {
        if (v->n / 2 > METADATA_MAX_KEYS) {
            sl__errors_add(w->errs, w->source, v->line, field,
                           "more than %d keys in one metadata mapping", METADATA_MAX_KEYS);
            return false;
        }
        sl__dstr_add(o, "{", 1);
        for (size_t i = 0; i + 1 < v->n; i += 2) {
            const ynode *k = v->kids[i];
            if (k->type != Y_SCALAR) {
                sl__dy_expected(w, k, field, "a string key");
                return false;
            }
            for (size_t j = 0; j < i; j += 2) /* as yaml.v2: "already defined" */
                if (v->kids[j]->len == k->len && !memcmp(v->kids[j]->text, k->text, k->len)) {
                    sl__errors_add(w->errs, w->source, k->line, field,
                                   "duplicate metadata key '%.*s' (first at line %d)", SHOW_MAX,
                                   k->text, v->kids[j]->line);
                    return false;
                }
            if (i) sl__dstr_add(o, ",", 1);
            json_string(o, k->text, k->len);
            sl__dstr_add(o, ":", 1);
            if (!metadata_value(w, v->kids[i + 1], field, o, depth + 1)) return false;
        }
        sl__dstr_add(o, "}", 1);
    } else if (v->type == Y_SEQ) {
        sl__dstr_add(o, "[", 1);
        for (size_t i = 0; i < v->n; i++) {
            if (i) sl__dstr_add(o, ",", 1);
            if (!metadata_value(w, v->kids[i], field, o, depth + 1)) return false;
        }
        sl__dstr_add(o, "]", 1);
    } else if (v->plain && v->null) {
        sl__dstr_add(o, "null", 4);
    } else {
        if (memchr(v->text, '\0', v->len)) {
            sl__errors_add(w->errs, w->source, v->line, field, "a NUL byte is not allowed here");
            return false;
        }
        const char *t = v->text;
        for (size_t i = 0; v->plain && i < COUNT(yes); i++)
            if (!strcmp(t, yes[i])) return sl__dstr_add(o, "true", 4), true;
        for (size_t i = 0; v->plain && i < COUNT(no); i++)
            if (!strcmp(t, no[i])) return sl__dstr_add(o, "false", 5), true;
        const char *num = t[0] == '+' ? t + 1 : t;
        if (v->plain && json_number(num))
            sl__dstr_add(o, num, strlen(num));
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
        sl__dy_expected(w, v, field, "a mapping");
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

/* A list's array: v->n zeroed elements of size bytes (one at least, for
 * an empty list); NULL with w->nomem set when out of memory. */
static void *list_array(walker *w, const ynode *v, size_t size) {
    void *p = calloc(v->n ? v->n : 1, size);
    if (!p) w->nomem = true;
    return p;
}

/* out (FIELD_MAX bytes) = "field[i]", the name of a list's item i. */
static void item_field(char *out, const char *field, size_t i) {
    snprintf(out, FIELD_MAX, "%s[%zu]", field, i);
}

/* A limit's replaces: (a list of - name: ...) into l->replaces; b->bad on
 * an error in it, w->nomem when out of memory. */
static void limit_replaces(walker *w, limit_build *b, const ynode *v, const char *field) {
    rlimit *l = b->l;
    if (v->type == Y_SCALAR && v->null) return;
    if (v->type != Y_SEQ) {
        sl__dy_expected(w, v, field, "a list of - name: ...");
        b->bad = true;
        return;
    }
    l->replaces = list_array(w, v, sizeof *l->replaces);
    if (!l->replaces) return;
    for (size_t i = 0; i < v->n; i++) {
        const ynode *item = v->kids[i];
        char f[FIELD_MAX];
        item_field(f, field, i);
        char *name = NULL;
        if (item->type != Y_MAP) {
            sl__dy_expected(w, item, f, "a mapping with name");
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
            sl__dy_join(nf, f, "name");
            if (!sl__dy_string(w, item->kids[j + 1], nf, &name, NULL)) b->bad = true;
        }
        if (!name || !*name) {
            sl__errors_add(w->errs, w->source, item->line, f,
                           "should not have an empty replaces entry");
            b->bad = true;
            free(name);
            continue;
        }
        l->replaces[l->nreplaces++] = name;
    }
}

/* A limit's algorithm: one of sl_algorithm_parse's names into
 * l->algorithm; b->bad (and an error) otherwise. */
static void limit_algorithm(walker *w, limit_build *b, const ynode *v, const char *field) {
    char *name = NULL;
    b->algorithm_line = v->line;
    if (!sl__dy_string(w, v, field, &name, NULL)) {
        b->bad = true;
        return;
    }
    if (sl_algorithm_parse(name, &b->l->algorithm) != SL_OK) {
        char q[64];
        sl__dy_quote(q, sizeof q, name, strlen(name));
        sl__errors_add(w->errs, w->source, v->line, field,
                       "unknown algorithm %s (expected fixed_window, sliding_log, sliding_window, "
                       "token_bucket, gcra or leaky_queue)",
                       q);
        b->bad = true;
    }
    free(name);
}

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
        if (sl__dy_uint(w, v, field, UINT32_MAX, &u))
            l->rpu = (uint32_t)u;
        else
            b->bad = true;
        break;
    case 2:
        if (!sl__dy_bool(w, v, field, &l->unlimited)) b->bad = true;
        break;
    case 3:
        if (!sl__dy_string(w, v, field, &l->name, &len)) b->bad = true;
        if (l->name && !*l->name) free(l->name), l->name = NULL;
        break;
    case 4:
        limit_replaces(w, b, v, field);
        break;
    case 5:
        limit_algorithm(w, b, v, field);
        break;
    case 6:
        b->burst_line = v->line;
        if (sl__dy_uint(w, v, field, (uint64_t)1 << 61, &u) && u >= 1)
            l->burst = (int64_t)u;
        else {
            if (!b->bad && v->type == Y_SCALAR && v->plain && !strcmp(v->text, "0"))
                sl__errors_add(w->errs, w->source, v->line, field, "must be at least 1");
            b->bad = true;
        }
        break;
    }
}

static rlimit *walk_limit(walker *w, const ynode *v, const char *field) {
    if (v->type != Y_MAP) {
        sl__dy_expected(w, v, field, "a mapping of unit and requests_per_unit");
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
    sl__dy_join(uf, field, "unit");
    /* upstream: strings.ToUpper(unit) among the Unit names, UNKNOWN refused */
    bool valid_unit = false;
    if (b.unit_node && b.unit_node->type == Y_SCALAR && !b.unit_node->null) {
        for (int u = 1; u < (int)COUNT(sl__rls_unit_names); u++)
            if (!strcasecmp(b.unit_node->text, sl__rls_unit_names[u]) &&
                strlen(sl__rls_unit_names[u]) == b.unit_node->len)
                l->unit = u, valid_unit = true;
    }
    if (l->unlimited) {
        if (valid_unit)
            sl__errors_add(w->errs, w->source, b.unit_line, uf,
                           "should not specify rate limit unit when unlimited");
    } else if (!valid_unit) {
        char q[64] = "''";
        if (b.unit_node) sl__dy_describe(b.unit_node, q, sizeof q);
        sl__errors_add(
            w->errs, w->source, b.unit_node ? b.unit_line : v->line, uf,
            "invalid rate limit unit %s (expected second, minute, hour, day, week, month "
            "or year)",
            b.unit_node ? q : "''");
    }
    for (size_t i = 0; i < l->nreplaces; i++)
        if (l->name && !strcmp(l->replaces[i], l->name)) {
            char rf[FIELD_MAX];
            sl__dy_join(rf, field, "replaces");
            sl__errors_add(w->errs, w->source, v->line, rf,
                           "replaces should not contain name of same descriptor");
        }
    if (w->errs->n == errors && !l->unlimited && l->rpu > 0) {
        sl_params p = {.algorithm = l->algorithm,
                       .rate = {.limit = l->rpu, .period = sl__rls_unit_seconds[l->unit] * NS_SEC},
                       .burst = l->burst ? l->burst : l->rpu};
        if (!sl_algorithm_is_bucket(p.algorithm)) p.burst = 0;
        int rc = sl_params_validate(&p);
        if (rc != SL_OK) {
            char rf[FIELD_MAX];
            bool burst = rc == SL_EBURST || (rc == SL_EOVERFLOW && l->burst);
            sl__dy_join(rf, field, burst ? "burst" : "requests_per_unit");
            int at = burst && b.burst_line ? b.burst_line : b.rpu_line ? b.rpu_line : v->line;
            sl__errors_add(w->errs, w->source, at, rf, "%u per %s with %s: %s%s", l->rpu,
                           sl__rls_unit_names[l->unit], sl_algorithm_name(l->algorithm),
                           sl_strerror(rc),
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
        sl__dy_string(w, v, field, &d->key, &d->klen);
        break;
    case 1:
        sl__dy_string(w, v, field, &d->value, &d->vlen);
        break;
    case 2:
        if (v->type == Y_SCALAR && v->null) break; /* rate_limit: (nothing) = none */
        d->limit = walk_limit(w, v, field);
        break;
    case 3:
        /* nested: handled by the caller once the key is known */
        break;
    case 4:
        sl__dy_bool(w, v, field, &d->shadow_mode);
        break;
    case 5:
        sl__dy_bool(w, v, field, &d->detailed_metric);
        break;
    case 6:
        sl__dy_bool(w, v, field, &d->value_to_metric);
        break;
    case 7:
        sl__dy_bool(w, v, field, &d->share_threshold);
        break;
    case 8:
        sl__dy_bool(w, v, field, &d->quota_mode);
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

/* One descriptor (the mapping item, at field f) into x: its keys, the
 * checks on it, and its nested descriptors (with parent_key, the composite
 * key so far, for messages). */
static void walk_desc(walker *w, const ynode *item, const char *f, rdesc *x, int depth,
                      const char *parent_key) {
    desc_build b = {.d = x, .depth = depth};
    each_key(w, item, f, desc_keys, COUNT(desc_keys), desc_value, &b);
    if (!x->key || !*x->key) {
        char kf[FIELD_MAX];
        sl__dy_join(kf, f, "key");
        sl__errors_add(w->errs, w->source, item->line, kf, "descriptor has empty key");
    }
    if (x->value && !*x->value) free(x->value), x->value = NULL, x->vlen = 0;
    if (x->limit) w->rules->nlimits++;
    if (x->share_threshold && !(x->value && memchr(x->value, '*', x->vlen))) {
        char sf[FIELD_MAX];
        sl__dy_join(sf, f, "share_threshold");
        sl__errors_add(w->errs, w->source, item->line, sf,
                       "share_threshold can only be used with wildcard values (containing '*')");
    }
    /* nested descriptors, with the composite key for messages */
    for (size_t j = 0; j + 1 < item->n; j += 2) {
        const ynode *k = item->kids[j];
        if (k->type != Y_SCALAR || k->len != 11 || memcmp(k->text, "descriptors", 11) != 0)
            continue;
        char nf[FIELD_MAX], pk[FIELD_MAX];
        sl__dy_join(nf, f, "descriptors");
        snprintf(pk, sizeof pk, "%s%s%s%s.", parent_key, x->key ? x->key : "", x->value ? "_" : "",
                 x->value ? x->value : "");
        if (!x->kids) walk_descs(w, item->kids[j + 1], nf, &x->kids, &x->nkids, depth + 1, pk);
    }
}

/* upstream: "duplicate descriptor composite key" among the siblings
 * d[0..n) of the list at field (parent_key: the composite key so far). */
static void check_siblings(walker *w, const rdesc *d, size_t n, const char *field,
                           const char *parent_key) {
    if (n < 2) return;
    sort_item *s = malloc(n * sizeof *s);
    if (!s) {
        w->nomem = true;
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (d[i].key) s[m].d = &d[i], s[m].i = i, m++;
    qsort(s, m, sizeof *s, cmp_desc);
    for (size_t i = 1; i < m; i++) {
        const rdesc *a = s[i - 1].d, *b = s[i].d;
        if (a->klen == b->klen && !memcmp(a->key, b->key, a->klen) && a->vlen == b->vlen &&
            !memcmp(a->value ? a->value : "", b->value ? b->value : "", a->vlen)) {
            char f[FIELD_MAX];
            item_field(f, field, s[i].i);
            sl__errors_add(w->errs, w->source, b->line, f,
                           "duplicate descriptor composite key '%s%s%s%s' (first at line %d)",
                           parent_key, b->key, b->value ? "_" : "", b->value ? b->value : "",
                           a->line);
        }
    }
    free(s);
}

/* A list of descriptors. parent_key is the composite key so far
 * ("domain.key_value."), for upstream's duplicate message. */
static void walk_descs(walker *w, const ynode *v, const char *field, rdesc **out, size_t *n,
                       int depth, const char *parent_key) {
    *out = NULL;
    *n = 0;
    if (v->type == Y_SCALAR && v->null) return;
    if (v->type != Y_SEQ) {
        sl__dy_expected(w, v, field, "a list of descriptors (- key: ...)");
        return;
    }
    if (depth > SL__DOMAINS_MAX_DEPTH) {
        sl__errors_add(w->errs, w->source, v->line, field, "descriptors nested more than %d deep",
                       SL__DOMAINS_MAX_DEPTH);
        return;
    }
    rdesc *d = list_array(w, v, sizeof *d);
    if (!d) return;
    *out = d;
    for (size_t i = 0; i < v->n; i++) {
        const ynode *item = v->kids[i];
        char f[FIELD_MAX];
        item_field(f, field, i);
        if (++w->rules->ndescs > SL__DOMAINS_MAX_RULES) {
            if (w->rules->ndescs == SL__DOMAINS_MAX_RULES + 1)
                sl__errors_add(w->errs, w->source, item->line, f,
                               "too many descriptors (at most %d)", SL__DOMAINS_MAX_RULES);
            continue;
        }
        if (item->type != Y_MAP) {
            sl__dy_expected(w, item, f, "a descriptor (a mapping of key, value, rate_limit, ...)");
            continue;
        }
        rdesc *x = &d[(*n)++];
        x->line = item->line;
        walk_desc(w, item, f, x, depth, parent_key);
    }
    check_siblings(w, d, *n, field, parent_key);
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
        sl__dy_string(w, v, field, &b->dom->name, &b->dom->len);
    } else {
        b->descriptors = v;
    }
}

/* Walks one file's tree into rules (appending a domain). */
static void walk_file(walker *w, const ynode *root) {
    if (root->type != Y_MAP) {
        sl__dy_expected(w, root, NULL, "a mapping of domain and descriptors");
        return;
    }
    sl__domain_rules *r = w->rules;
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
        sl__errors_add(w->errs, w->source, b.domain_line ? b.domain_line : root->line, "domain",
                       "config file cannot have empty domain");
    } else {
        dom->line = b.domain_line;
        for (size_t i = 0; i + 1 < r->n; i++)
            if (r->d[i].name && r->d[i].len == dom->len &&
                !memcmp(r->d[i].name, dom->name, dom->len))
                sl__errors_add(w->errs, w->source, b.domain_line, "domain",
                               "duplicate domain '%s' in config file (first in %s:%d)", dom->name,
                               r->d[i].file, r->d[i].line);
    }
    if (b.descriptors) {
        char pk[FIELD_MAX];
        snprintf(pk, sizeof pk, "%s.", dom->name ? dom->name : "");
        walk_descs(w, b.descriptors, "descriptors", &dom->descs, &dom->n, 1, pk);
    }
}

/* One file's text into r (a domain appended). SL_OK; else, after
 * reporting into errs, SL_ENOMEM when an allocation failed, SL_EINVAL for
 * any other problem. */
static int parse_into(sl__domain_rules *r, const char *text, size_t len, const char *source,
                      sl__config_errors *errs) {
    size_t before = errs->n;
    ynode *root;
    int rc = sl__dy_tree(text, len, source, errs, &root);
    if (rc != SL_OK) return rc;
    walker w = {.source = source, .errs = errs, .rules = r};
    walk_file(&w, root);
    sl__dy_free(root);
    if (w.nomem) sl__errors_add(errs, source, 0, NULL, "out of memory");
    return w.nomem ? SL_ENOMEM : errs->n == before ? SL_OK : SL_EINVAL;
}

int sl__domain_rules_parse(const char *text, size_t len, const char *source, sl__domain_rules **out,
                           sl__config_errors *errs) {
    *out = NULL;
    sl__domain_rules *r = calloc(1, sizeof *r);
    if (!r) {
        sl__errors_add(errs, source, 0, NULL, "out of memory");
        return SL_ENOMEM;
    }
    if (len > SL__DOMAINS_MAX_FILE_SIZE) {
        sl__errors_add(errs, source, 0, NULL, "larger than %u bytes: refused",
                       SL__DOMAINS_MAX_FILE_SIZE);
        sl__domain_rules_free(r);
        return SL_EINVAL;
    }
    int rc = parse_into(r, text, len, source, errs);
    if (rc != SL_OK) {
        sl__domain_rules_free(r);
        return rc;
    }
    *out = r;
    return SL_OK;
}

/* Reads a regular file of at most SL__DOMAINS_MAX_FILE_SIZE bytes. */
static char *read_file(const char *path, size_t *len, sl__config_errors *errs) {
    char *buf = NULL;
    int err_no = 0;
    int rc = sl__file_read(path, SL__DOMAINS_MAX_FILE_SIZE, SL__FILE_REGULAR, &buf, len, &err_no);
    if (rc != SL__FILE_OK) {
        char msg[160];
        sl__errors_add(errs, path, 0, NULL, "%s",
                       sl__file_strerror(rc, err_no, SL__DOMAINS_MAX_FILE_SIZE, msg, sizeof msg));
        return NULL;
    }
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

/* The rule files of a directory (*.yaml and *.yml, no dot files, at most
 * SL__DOMAINS_MAX_FILES), sorted by name: *names (each and the array
 * malloc'd, the caller frees them, also on an error) and their count. An
 * error into errs when out of memory (the names listed so far are kept,
 * *nomem set). */
static size_t list_rule_files(DIR *dir, const char *path, char ***names_out, bool *nomem,
                              sl__config_errors *errs) {
    char **names = NULL;
    size_t n = 0, cap = 0;
    *nomem = false;
    for (struct dirent *e; (e = readdir(dir));) {
        if (!rule_file_name(e->d_name)) continue;
        if (n == SL__DOMAINS_MAX_FILES) {
            sl__errors_add(errs, path, 0, NULL, "more than %d rule files", SL__DOMAINS_MAX_FILES);
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                *nomem = true;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) {
            *nomem = true;
            break;
        }
        n++;
    }
    if (*nomem) sl__errors_add(errs, path, 0, NULL, "out of memory");
    if (n) qsort(names, n, sizeof *names, cmp_str);
    *names_out = names;
    return n;
}

/* A directory of rule files into r, in the order of their names; regular
 * files only. Every problem goes into errs; returns SL_ENOMEM when an
 * allocation failed (reported), else SL_OK (other problems: errs only). */
static int load_dir(sl__domain_rules *r, const char *path, sl__config_errors *errs) {
    DIR *dir = opendir(path);
    if (!dir) {
        sl__errors_add(errs, path, 0, NULL, "cannot open: %s", strerror(errno));
        return SL_OK;
    }
    char **names;
    bool nomem;
    size_t n = list_rule_files(dir, path, &names, &nomem, errs);
    closedir(dir);
    bool failed = nomem; /* nomem stops the loop, a file's own does not */
    size_t plen = strlen(path);
    for (size_t i = 0; i < n && !nomem; i++) {
        size_t need = plen + strlen(names[i]) + 2;
        char *file = malloc(need);
        if (!file) {
            sl__errors_add(errs, path, 0, NULL, "out of memory");
            failed = true;
            break;
        }
        snprintf(file, need, "%s%s%s", path, plen && path[plen - 1] == '/' ? "" : "/", names[i]);
        struct stat fs;
        if (stat(file, &fs) == 0 && S_ISREG(fs.st_mode)) {
            size_t len;
            char *text = read_file(file, &len, errs);
            if (text && parse_into(r, text, len, file, errs) == SL_ENOMEM) failed = true;
            free(text);
        }
        free(file);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return failed ? SL_ENOMEM : SL_OK;
}

int sl__domain_rules_load(const char *path, sl__domain_rules **out, sl__config_errors *errs) {
    *out = NULL;
    size_t before = errs->n;
    struct stat st;
    if (stat(path, &st) != 0) {
        sl__errors_add(errs, path, 0, NULL, "cannot open: %s", strerror(errno));
        return SL_EINVAL;
    }
    sl__domain_rules *r = calloc(1, sizeof *r);
    if (!r) {
        sl__errors_add(errs, path, 0, NULL, "out of memory");
        return SL_ENOMEM;
    }
    int rc = SL_OK;
    if (!S_ISDIR(st.st_mode)) {
        size_t len;
        char *text = read_file(path, &len, errs);
        if (text) rc = parse_into(r, text, len, path, errs);
        free(text);
    } else {
        rc = load_dir(r, path, errs);
    }
    if (errs->n != before) {
        sl__domain_rules_free(r);
        return rc == SL_ENOMEM ? SL_ENOMEM : SL_EINVAL;
    }
    *out = r;
    return SL_OK;
}
