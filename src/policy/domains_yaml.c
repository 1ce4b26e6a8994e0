/* domains_yaml.c: the YAML layer of the rule-file reader (domains_yaml.h):
 * libyaml's events into a small bounded node tree, the
 * "file:line: field: message" error writer, and the scalars (strings, YAML
 * 1.1 booleans, unsigned integers) as gopkg.in/yaml.v2 decodes them. */
#include "policy/domains_yaml.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "policy/domains_internal.h"
#include "sluice/error.h"

/* `s` quoted for a message: escaped, ASCII only, shortened. */
void sl__dy_quote(char *out, size_t size, const char *s, size_t len) {
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

void sl__dy_free(ynode *n) {
    if (!n) return;
    for (size_t i = 0; i < n->n; i++) sl__dy_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

static bool ynode_add(ynode *parent, ynode *kid) {
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? 2 * parent->cap : 4;
        // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
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
                              const char *source, sl__config_errors *errs) {
    const char *problem = y->problem ? y->problem : "malformed YAML";
    if (y->error == YAML_MEMORY_ERROR)
        sl__errors_add(errs, source, 0, NULL, "out of memory while parsing");
    else if (y->error == YAML_READER_ERROR)
        sl__errors_add(errs, source, line_of_offset(text, len, y->problem_offset), "yaml",
                       "%s (at offset %zu)", problem, y->problem_offset);
    else if (y->context)
        sl__errors_add(errs, source, (int)y->problem_mark.line + 1, "yaml",
                       "%s at column %d (%s at line %d)", problem, (int)y->problem_mark.column + 1,
                       y->context, (int)y->context_mark.line + 1);
    else
        sl__errors_add(errs, source, (int)y->problem_mark.line + 1, "yaml", "%s at column %d",
                       problem, (int)y->problem_mark.column + 1);
}

/* sl__dy_tree's state while it reads events: the open collections, the
 * root, and the counts its caps bound. */
typedef struct tree_build {
    ynode *stack[YAML_MAX_DEPTH];
    int depth;
    ynode *root;
    size_t nodes, docs;
    const char *source;
    sl__config_errors *errs;
    bool nomem; /* an allocation failed (reported) */
} tree_build;

/* The node of a scalar, mapping start or sequence start event, not yet
 * placed; a scalar with its text, whether it is plain and whether it is
 * YAML's null. NULL when out of memory. */
static ynode *node_of(const yaml_event_t *ev, int line) {
    ynode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->line = line;
    if (ev->type != YAML_SCALAR_EVENT) {
        n->type = ev->type == YAML_MAPPING_START_EVENT ? Y_MAP : Y_SEQ;
        return n;
    }
    n->type = Y_SCALAR;
    n->len = ev->data.scalar.length;
    n->text = malloc(n->len + 1);
    if (!n->text) {
        sl__dy_free(n);
        return NULL;
    }
    memcpy(n->text, ev->data.scalar.value, n->len);
    n->text[n->len] = '\0';
    n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag;
    n->null = n->plain && (n->len == 0 || !strcmp(n->text, "~") || !strcmp(n->text, "null") ||
                           !strcmp(n->text, "Null") || !strcmp(n->text, "NULL"));
    return n;
}

/* A node event: the node counted (YAML_MAX_NODES), made, put under the
 * open collection (or as the root) and, for a collection, opened
 * (YAML_MAX_DEPTH). false after reporting. */
static bool add_node(tree_build *t, const yaml_event_t *ev, int line) {
    if (++t->nodes > YAML_MAX_NODES) {
        sl__errors_add(t->errs, t->source, line, NULL, "too many YAML nodes (at most %u)",
                       YAML_MAX_NODES);
        return false;
    }
    ynode *n = node_of(ev, line);
    if (!n) {
        sl__errors_add(t->errs, t->source, line, NULL, "out of memory");
        t->nomem = true;
        return false;
    }
    if (t->depth > 0) {
        if (!ynode_add(t->stack[t->depth - 1], n)) {
            sl__errors_add(t->errs, t->source, line, NULL, "out of memory");
            t->nomem = true;
            sl__dy_free(n);
            return false;
        }
    } else if (!t->root) {
        t->root = n;
    } else { /* cannot happen: one document has one root */
        sl__dy_free(n);
        return true;
    }
    if (n->type != Y_SCALAR) {
        if (t->depth == YAML_MAX_DEPTH) {
            sl__errors_add(t->errs, t->source, line, NULL, "nested more than %d deep",
                           YAML_MAX_DEPTH);
            return false;
        }
        t->stack[t->depth++] = n;
    }
    return true;
}

/* One parser event into the tree; *done at the stream's end. false after
 * reporting (a second document, an alias, a node past a cap, no memory). */
static bool tree_event(tree_build *t, const yaml_event_t *ev, bool *done) {
    int line = (int)ev->start_mark.line + 1;
    switch (ev->type) {
    case YAML_STREAM_END_EVENT:
        *done = true;
        return true;
    case YAML_DOCUMENT_START_EVENT:
        if (++t->docs > 1) {
            sl__errors_add(t->errs, t->source, line, NULL,
                           "only one YAML document per rule file (remove the second ---)");
            return false;
        }
        return true;
    case YAML_ALIAS_EVENT:
        sl__errors_add(t->errs, t->source, line, "yaml", "aliases (*name) are not supported");
        return false;
    case YAML_SCALAR_EVENT:
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        return add_node(t, ev, line);
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        if (t->depth > 0) t->depth--;
        return true;
    default:
        return true;
    }
}

/* Parses one YAML document into a tree (domains_yaml.h: the codes). */
int sl__dy_tree(const char *text, size_t len, const char *source, sl__config_errors *errs,
                ynode **out) {
    *out = NULL;
    yaml_parser_t yp;
    if (!yaml_parser_initialize(&yp)) {
        sl__errors_add(errs, source, 0, NULL, "out of memory");
        return SL_ENOMEM;
    }
    yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
    tree_build t = {.source = source, .errs = errs};
    bool ok = true, done = false;
    while (ok && !done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&yp, &ev)) {
            yaml_syntax_error(&yp, text, len, source, errs);
            t.nomem |= yp.error == YAML_MEMORY_ERROR;
            ok = false;
            break;
        }
        ok = tree_event(&t, &ev, &done);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&yp);
    if (!ok) {
        sl__dy_free(t.root);
        return t.nomem ? SL_ENOMEM : SL_EINVAL;
    }
    if (!t.root) {
        sl__errors_add(errs, source, 1, NULL,
                       "the file is empty (expected domain: and descriptors:)");
        return SL_EINVAL;
    }
    *out = t.root;
    return SL_OK;
}

/* ---- scalars ------------------------------------------------------------- */

void sl__dy_describe(const ynode *n, char *out, size_t size) {
    if (n->type == Y_MAP)
        snprintf(out, size, "a mapping");
    else if (n->type == Y_SEQ)
        snprintf(out, size, "a list");
    else if (n->null)
        snprintf(out, size, "nothing");
    else
        sl__dy_quote(out, size, n->text, n->len);
}

void sl__dy_expected(walker *w, const ynode *n, const char *field, const char *what) {
    char got[64];
    sl__dy_describe(n, got, sizeof got);
    sl__errors_add(w->errs, w->source, n->line, field, "expected %s, got %s", what, got);
}

/* out = parent.key, truncated to FIELD_MAX - 1 bytes. */
void sl__dy_join(char *out, const char *parent, const char *key) {
    size_t o = 0;
    for (const char *p = parent; *p && o < FIELD_MAX - 1; p++) out[o++] = *p;
    if (*parent && o < FIELD_MAX - 1) out[o++] = '.';
    for (const char *p = key; *p && o < FIELD_MAX - 1; p++) out[o++] = *p;
    out[o] = '\0';
}

/* A string (any scalar, as yaml.v2 decodes into a string field); null is "".
 * False after reporting. *out is malloc'd (NUL-terminated). */
bool sl__dy_string(walker *w, const ynode *v, const char *field, char **out, size_t *len) {
    if (v->type != Y_SCALAR) {
        sl__dy_expected(w, v, field, "a string");
        return false;
    }
    if (memchr(v->text, '\0', v->len)) {
        sl__errors_add(w->errs, w->source, v->line, field, "a NUL byte is not allowed here");
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
bool sl__dy_bool(walker *w, const ynode *v, const char *field, bool *out) {
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
    sl__dy_expected(w, v, field, "true or false");
    return false;
}

/* An unsigned integer: decimal (underscores allowed, as YAML 1.1) or 0x hex,
 * unquoted, at most max. */
bool sl__dy_uint(walker *w, const ynode *v, const char *field, uint64_t max, uint64_t *out) {
    const char *what = max == UINT32_MAX ? "a whole number from 0 to 4294967295" : "a whole number";
    if (v->type != Y_SCALAR || !v->plain || v->null) {
        sl__dy_expected(w, v, field, what);
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
        sl__dy_expected(w, v, field, what);
        return false;
    }
    if (big || x > max) {
        sl__errors_add(w->errs, w->source, v->line, field, "%s is too large (at most %llu)",
                       v->text, (unsigned long long)max);
        return false;
    }
    *out = x;
    return true;
}
