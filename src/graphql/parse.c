/* graphql/parse.c: a bounded parser of executable GraphQL documents.
 *
 * Hand-written because no Debian package provides a GraphQL parser in C
 * (libgraphqlparser is not packaged). It reads the tokens of lex.c (the
 * spec's lexical grammar) by the spec's executable grammar (operations,
 * variables, fields, aliases, arguments, fragments, inline fragments,
 * directives, descriptions) as graphql-js 17's parse() reads them with
 * allowEmptySelectionSets: false; tests/integration/graphql_diff.sh holds
 * the two to the same accept/reject. Type-system definitions (SDL) are
 * refused: a query is never one. Pure: no I/O, bounded by sl_gql_limits,
 * recursion no deeper than max_depth. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphql/doc.h"
#include "graphql/lex.h"

typedef struct parser {
    sl__gql_lexer lx; /* the current token */
    uint32_t nodes;   /* nodes counted against max_nodes */
    sl_gql_doc *doc;
} parser;

void sl__gql_fail(sl_gql_error *err, sl_gql_errkind kind, size_t off, const char *fmt, ...) {
    if (!err) return;
    err->kind = kind;
    err->offset = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

void sl_gql_limits_init(sl_gql_limits *lim) {
    if (!lim) return;
    lim->max_bytes = 65536;
    lim->max_depth = 64;
    lim->max_nodes = 10000;
    lim->max_expanded = 100000;
}

/* ---- parser helpers ----------------------------------------------------------------- */

static int next(parser *p) {
    return sl__gql_lex_next(&p->lx);
}

static int syntax(parser *p, size_t off, const char *msg) {
    return sl__gql_syntax(&p->lx, off, msg);
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((x) < 0) return SL_EPARSE;                                                             \
    } while (0)

static int unexpected(parser *p) {
    char msg[80];
    if (p->lx.tok == SL__GQL_T_NAME || p->lx.tok == SL__GQL_T_INT || p->lx.tok == SL__GQL_T_FLOAT) {
        int n = (int)(p->lx.end - p->lx.start);
        snprintf(msg, sizeof msg, "Unexpected %s \"%.*s\".", sl__gql_tok_name(p->lx.tok),
                 n > 24 ? 24 : n, p->lx.s + p->lx.start);
    } else {
        snprintf(msg, sizeof msg, "Unexpected %s.", sl__gql_tok_name(p->lx.tok));
    }
    return syntax(p, p->lx.start, msg);
}

static int expect(parser *p, sl__gql_tok t) {
    if (p->lx.tok != t) {
        char msg[80];
        snprintf(msg, sizeof msg, "Expected %s, found %s.", sl__gql_tok_name(t),
                 sl__gql_tok_name(p->lx.tok));
        return syntax(p, p->lx.start, msg);
    }
    return next(p);
}

static bool peek_kw(const parser *p, const char *kw) {
    size_t n = strlen(kw);
    return p->lx.tok == SL__GQL_T_NAME && p->lx.end - p->lx.start == n &&
           memcmp(p->lx.s + p->lx.start, kw, n) == 0;
}

static int count(parser *p) {
    if (++p->nodes > p->doc->lim.max_nodes) {
        sl__gql_fail(p->lx.err, SL_GQL_ENODES, p->lx.start, "The document has more than %u nodes.",
                     (unsigned)p->doc->lim.max_nodes);
        return SL_EPARSE;
    }
    return 0;
}

static int deeper(parser *p, uint32_t depth) {
    if (depth > p->doc->lim.max_depth) {
        sl__gql_fail(p->lx.err, SL_GQL_EDEPTH, p->lx.start, "The document nests deeper than %u.",
                     (unsigned)p->doc->lim.max_depth);
        return SL_EPARSE;
    }
    return 0;
}

static int nomem(parser *p) {
    sl__gql_fail(p->lx.err, SL_GQL_ENODES, p->lx.start, "Out of memory.");
    return -2;
}

/* Grows an array of `size`-byte items to hold n + 1; 0 or -2 (no memory). */
static int grow(void **arr, uint32_t *cap, uint32_t n, size_t size) {
    if (n + 1 < *cap) return 0;
    uint32_t nc = *cap ? *cap * 2 : 16;
    void *q = realloc(*arr, (size_t)nc * size);
    if (!q) return -2;
    *arr = q;
    *cap = nc;
    return 0;
}

/* ---- values, types, directives -------------------------------------------------- */

/* Parses a Value; with `page` it also says what the value is for first/last. */
static int value(parser *p, bool is_const, uint32_t depth, sl__gql_page *page) {
    TRY(count(p));
    TRY(deeper(p, depth));
    if (page) {
        memset(page, 0, sizeof *page);
        page->kind = SL__GQL_PAGE_BAD;
        page->off = (uint32_t)p->lx.start;
    }
    switch (p->lx.tok) {
    case SL__GQL_T_BRACKET_L:
        TRY(next(p));
        while (p->lx.tok != SL__GQL_T_BRACKET_R) TRY(value(p, is_const, depth + 1, NULL));
        return next(p);
    case SL__GQL_T_BRACE_L:
        TRY(next(p));
        while (p->lx.tok != SL__GQL_T_BRACE_R) {
            TRY(expect(p, SL__GQL_T_NAME));
            TRY(expect(p, SL__GQL_T_COLON));
            TRY(value(p, is_const, depth + 1, NULL));
        }
        return next(p);
    case SL__GQL_T_INT:
        if (page) {
            page->kind = SL__GQL_PAGE_INT;
            size_t i = p->lx.start;
            if (p->lx.s[i] == '-') page->negative = true, i++;
            uint64_t v = 0;
            for (; i < p->lx.end; i++) {
                uint64_t d = (uint64_t)(p->lx.s[i] - '0');
                v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
            }
            page->value = v;
            if (v == 0) page->negative = false;
        }
        return next(p);
    case SL__GQL_T_NAME:
        if (page && p->lx.end - p->lx.start == 4 && memcmp(p->lx.s + p->lx.start, "null", 4) == 0)
            page->kind = SL__GQL_PAGE_NULL;
        return next(p);
    case SL__GQL_T_FLOAT:
    case SL__GQL_T_STRING:
    case SL__GQL_T_BLOCK_STRING:
        return next(p);
    case SL__GQL_T_DOLLAR: {
        size_t off = p->lx.start;
        TRY(next(p));
        if (is_const) {
            if (p->lx.tok == SL__GQL_T_NAME)
                return syntax(p, off, "Unexpected variable in constant value.");
            return syntax(p, off, "Unexpected \"$\"."); /* graphql-js: at the "$" */
        }
        if (p->lx.tok != SL__GQL_T_NAME) return expect(p, SL__GQL_T_NAME);
        if (page) {
            page->kind = SL__GQL_PAGE_VAR;
            page->var_off = (uint32_t)p->lx.start;
            page->var_len = (uint32_t)(p->lx.end - p->lx.start);
        }
        return next(p);
    }
    default:
        return unexpected(p);
    }
}

static int directives(parser *p, bool is_const, uint32_t depth) {
    while (p->lx.tok == SL__GQL_T_AT) {
        TRY(count(p));
        TRY(next(p));
        TRY(expect(p, SL__GQL_T_NAME));
        if (p->lx.tok == SL__GQL_T_PAREN_L) {
            TRY(next(p));
            do {
                TRY(count(p));
                TRY(expect(p, SL__GQL_T_NAME));
                TRY(expect(p, SL__GQL_T_COLON));
                TRY(value(p, is_const, depth + 1, NULL));
            } while (p->lx.tok != SL__GQL_T_PAREN_R);
            TRY(next(p));
        }
    }
    return 0;
}

static int type_ref(parser *p, uint32_t depth) {
    TRY(deeper(p, depth));
    if (p->lx.tok == SL__GQL_T_BRACKET_L) {
        TRY(next(p));
        TRY(type_ref(p, depth + 1));
        TRY(expect(p, SL__GQL_T_BRACKET_R));
    } else {
        TRY(expect(p, SL__GQL_T_NAME));
    }
    if (p->lx.tok == SL__GQL_T_BANG) TRY(next(p));
    return 0;
}

/* ---- selections ------------------------------------------------------------------ */

static uint32_t new_node(parser *p, uint8_t kind) {
    sl_gql_doc *d = p->doc;
    if (grow((void **)&d->nodes, &d->cap_nodes, d->nnodes + 1, sizeof *d->nodes) < 0) return 0;
    uint32_t i = ++d->nnodes;
    memset(&d->nodes[i], 0, sizeof d->nodes[i]);
    d->nodes[i].kind = kind;
    d->nodes[i].off = (uint32_t)p->lx.start;
    return i;
}

static int selection_set(parser *p, uint32_t depth, uint32_t *first);

static bool name_is(const parser *p, size_t off, size_t len, const char *s) {
    return strlen(s) == len && memcmp(p->lx.s + off, s, len) == 0;
}

static int field(parser *p, uint32_t depth, uint32_t *out) {
    TRY(count(p));
    uint32_t n = new_node(p, SL__GQL_FIELD);
    if (!n) return nomem(p);
    *out = n;
    if (p->lx.tok != SL__GQL_T_NAME) return expect(p, SL__GQL_T_NAME);
    p->doc->nodes[n].name_off = (uint32_t)p->lx.start;
    p->doc->nodes[n].name_len = (uint32_t)(p->lx.end - p->lx.start);
    TRY(next(p));
    if (p->lx.tok == SL__GQL_T_COLON) { /* that was the alias */
        TRY(next(p));
        if (p->lx.tok != SL__GQL_T_NAME) return expect(p, SL__GQL_T_NAME);
        p->doc->nodes[n].name_off = (uint32_t)p->lx.start;
        p->doc->nodes[n].name_len = (uint32_t)(p->lx.end - p->lx.start);
        TRY(next(p));
    }
    if (p->lx.tok == SL__GQL_T_PAREN_L) {
        TRY(next(p));
        do {
            TRY(count(p));
            if (p->lx.tok != SL__GQL_T_NAME) return expect(p, SL__GQL_T_NAME);
            size_t aoff = p->lx.start, alen = p->lx.end - p->lx.start;
            TRY(next(p));
            TRY(expect(p, SL__GQL_T_COLON));
            sl__gql_page pg;
            TRY(value(p, false, depth + 1, &pg));
            sl__gql_node *nd = &p->doc->nodes[n];
            if ((name_is(p, aoff, alen, "first") || name_is(p, aoff, alen, "last")) &&
                nd->npage < 2)
                nd->page[nd->npage++] = pg;
        } while (p->lx.tok != SL__GQL_T_PAREN_R);
        TRY(next(p));
    }
    TRY(directives(p, false, depth));
    if (p->lx.tok == SL__GQL_T_BRACE_L) {
        uint32_t first = 0;
        TRY(selection_set(p, depth + 1, &first));
        p->doc->nodes[n].child = first;
    }
    return 0;
}

static int fragment_sel(parser *p, uint32_t depth, uint32_t *out) {
    TRY(count(p));
    size_t off = p->lx.start;
    TRY(next(p)); /* the "..." */
    bool on = peek_kw(p, "on");
    if (on) TRY(next(p));
    if (!on && p->lx.tok == SL__GQL_T_NAME) {
        uint32_t n = new_node(p, SL__GQL_SPREAD);
        if (!n) return nomem(p);
        *out = n;
        p->doc->nodes[n].off = (uint32_t)off;
        p->doc->nodes[n].name_off = (uint32_t)p->lx.start;
        p->doc->nodes[n].name_len = (uint32_t)(p->lx.end - p->lx.start);
        TRY(next(p));
        return directives(p, false, depth);
    }
    uint32_t n = new_node(p, SL__GQL_INLINE);
    if (!n) return nomem(p);
    *out = n;
    p->doc->nodes[n].off = (uint32_t)off;
    if (on) TRY(expect(p, SL__GQL_T_NAME));
    TRY(directives(p, false, depth));
    uint32_t first = 0;
    TRY(selection_set(p, depth + 1, &first));
    p->doc->nodes[n].child = first;
    return 0;
}

/* Parses `{ Selection+ }`; *first is its first selection. */
static int selection_set(parser *p, uint32_t depth, uint32_t *first) {
    TRY(deeper(p, depth));
    TRY(expect(p, SL__GQL_T_BRACE_L));
    uint32_t last = 0;
    do {
        uint32_t n = 0;
        if (p->lx.tok == SL__GQL_T_SPREAD)
            TRY(fragment_sel(p, depth, &n));
        else
            TRY(field(p, depth, &n));
        if (last)
            p->doc->nodes[last].next = n;
        else
            *first = n;
        last = n;
    } while (p->lx.tok != SL__GQL_T_BRACE_R);
    return next(p);
}

/* ---- definitions ------------------------------------------------------------------ */

static uint32_t new_def(parser *p, uint8_t kind, size_t off) {
    sl_gql_doc *d = p->doc;
    if (grow((void **)&d->defs, &d->cap_defs, d->ndefs + 1, sizeof *d->defs) < 0) return 0;
    uint32_t i = ++d->ndefs;
    memset(&d->defs[i], 0, sizeof d->defs[i]);
    d->defs[i].kind = kind;
    d->defs[i].off = (uint32_t)off;
    return i;
}

static int variable_definitions(parser *p, uint32_t di) {
    sl_gql_doc *d = p->doc;
    d->defs[di].var_first = d->nvardefs;
    TRY(next(p)); /* "(" */
    do {
        TRY(count(p));
        if (p->lx.tok == SL__GQL_T_STRING || p->lx.tok == SL__GQL_T_BLOCK_STRING)
            TRY(next(p)); /* description */
        TRY(expect(p, SL__GQL_T_DOLLAR));
        if (p->lx.tok != SL__GQL_T_NAME) return expect(p, SL__GQL_T_NAME);
        if (grow((void **)&d->vars, &d->cap_vars, d->nvardefs, sizeof *d->vars) < 0)
            return nomem(p);
        sl__gql_vardef *v = &d->vars[d->nvardefs++];
        memset(v, 0, sizeof *v);
        v->name_off = (uint32_t)p->lx.start;
        v->name_len = (uint32_t)(p->lx.end - p->lx.start);
        d->defs[di].nvars++;
        TRY(next(p));
        TRY(expect(p, SL__GQL_T_COLON));
        TRY(type_ref(p, 1));
        if (p->lx.tok == SL__GQL_T_EQUALS) {
            TRY(next(p));
            sl__gql_page pg;
            TRY(value(p, true, 1, &pg));
            d->vars[d->nvardefs - 1].def = pg;
        }
        TRY(directives(p, true, 1));
    } while (p->lx.tok != SL__GQL_T_PAREN_R);
    return next(p);
}

static int definition(parser *p) {
    TRY(count(p));
    size_t off = p->lx.start;
    if (p->lx.tok == SL__GQL_T_BRACE_L) { /* the query shorthand */
        uint32_t di = new_def(p, SL__GQL_OP, off);
        if (!di) return nomem(p);
        p->doc->nops++;
        uint32_t first = 0;
        TRY(selection_set(p, 1, &first));
        p->doc->defs[di].sel = first;
        return 0;
    }
    if (p->lx.tok == SL__GQL_T_STRING || p->lx.tok == SL__GQL_T_BLOCK_STRING) {
        TRY(next(p));
        if (p->lx.tok == SL__GQL_T_BRACE_L)
            return syntax(p, off,
                          "Unexpected description, descriptions are not supported on "
                          "shorthand queries.");
    }
    bool op = peek_kw(p, "query") || peek_kw(p, "mutation") || peek_kw(p, "subscription");
    bool frag = peek_kw(p, "fragment");
    if (!op && !frag) {
        if (p->lx.tok == SL__GQL_T_NAME) {
            static const char *const sdl[] = {"schema", "scalar", "type",      "interface", "union",
                                              "enum",   "input",  "directive", "extend"};
            for (size_t k = 0; k < sizeof sdl / sizeof *sdl; k++)
                if (peek_kw(p, sdl[k]))
                    return syntax(p, p->lx.start, "Type system definitions are not queries.");
            if (p->lx.start != off) /* as graphql-js: at the description */
                return syntax(p, off,
                              "Unexpected description, only GraphQL definitions "
                              "support descriptions.");
        }
        return unexpected(p);
    }
    uint32_t di = new_def(p, op ? SL__GQL_OP : SL__GQL_FRAGMENT, off);
    if (!di) return nomem(p);
    TRY(next(p));
    sl_gql_doc *d = p->doc;
    if (op) {
        d->nops++;
        if (p->lx.tok == SL__GQL_T_NAME) {
            d->defs[di].name_off = (uint32_t)p->lx.start;
            d->defs[di].name_len = (uint32_t)(p->lx.end - p->lx.start);
            TRY(next(p));
        }
        if (p->lx.tok == SL__GQL_T_PAREN_L) TRY(variable_definitions(p, di));
    } else {
        if (peek_kw(p, "on")) return unexpected(p);
        if (p->lx.tok != SL__GQL_T_NAME) return expect(p, SL__GQL_T_NAME);
        d->defs[di].name_off = (uint32_t)p->lx.start;
        d->defs[di].name_len = (uint32_t)(p->lx.end - p->lx.start);
        TRY(next(p));
        if (!peek_kw(p, "on")) return syntax(p, p->lx.start, "Expected \"on\".");
        TRY(next(p));
        TRY(expect(p, SL__GQL_T_NAME));
    }
    TRY(directives(p, false, 1));
    uint32_t first = 0;
    TRY(selection_set(p, 1, &first));
    d->defs[di].sel = first;
    return 0;
}

/* ---- entry points ----------------------------------------------------------------- */

int sl_gql_parse(const char *text, size_t len, const sl_gql_limits *lim, sl_gql_doc **out,
                 sl_gql_error *err) {
    if (err) memset(err, 0, sizeof *err);
    if (!out || (!text && len > 0)) return SL_EINVAL;
    *out = NULL;
    sl_gql_limits l;
    sl_gql_limits_init(&l);
    if (lim) l = *lim;
    if (!l.max_bytes || !l.max_depth || !l.max_nodes || !l.max_expanded ||
        l.max_depth > SL_GQL_DEPTH_MAX || l.max_nodes > SL_GQL_NODES_MAX)
        return SL_EINVAL;
    if (len > l.max_bytes || len > UINT32_MAX - 16) {
        sl__gql_fail(err, SL_GQL_ESIZE, l.max_bytes, "The document is longer than %zu bytes.",
                     l.max_bytes);
        return SL_EPARSE;
    }
    sl_gql_doc *d = calloc(1, sizeof *d);
    if (!d) return SL_ENOMEM;
    d->lim = l;
    d->len = len;
    d->text = malloc(len + 1);
    if (!d->text) {
        free(d);
        return SL_ENOMEM;
    }
    if (len) memcpy(d->text, text, len);
    d->text[len] = '\0';
    parser p = {.lx = {.s = d->text, .len = len, .err = err}, .doc = d};
    int rc = next(&p);
    if (rc == 0 && p.lx.tok == SL__GQL_T_EOF) rc = syntax(&p, p.lx.start, "Unexpected <EOF>.");
    while (rc == 0 && p.lx.tok != SL__GQL_T_EOF) {
        uint32_t first_node = d->nnodes + 1;
        rc = definition(&p);
        if (rc == 0) {
            d->defs[d->ndefs].node_first = first_node;
            d->defs[d->ndefs].node_last = d->nnodes;
        }
    }
    if (rc == 0) rc = sl__gql_resolve(d);
    if (rc < 0) {
        sl_gql_free(d);
        return rc == -2 ? SL_ENOMEM : SL_EPARSE;
    }
    *out = d;
    return SL_OK;
}

void sl_gql_free(sl_gql_doc *doc) {
    if (!doc) return;
    free(doc->text);
    free(doc->nodes);
    free(doc->defs);
    free(doc->vars);
    free(doc);
}

size_t sl_gql_operation_count(const sl_gql_doc *doc) {
    return doc ? doc->nops : 0;
}
