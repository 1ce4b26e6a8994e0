/* graphql/cost.c: the cost of one operation of a parsed GraphQL document
 * (seed section 08). One walk over the selections, fragments expanded,
 * counts two things at once:
 *   objects   every object field counts its multiplier (the product of the
 *             page sizes of the connections above it); a connection counts
 *             multiplier x page size, and multiplies what is under it;
 *   requests  GitHub's count: a connection needs one request per object of
 *             the connection above it (the product of the page sizes above).
 * A connection is a field with first/last, a field named in
 * sl_gql_options.connections, or a Relay connection: one whose selection set
 * selects `edges` or `nodes`. In a Relay connection `edges` and `nodes`, and
 * `node` under `edges`, are the connection's items (they count nothing
 * more) and other objects directly under it (pageInfo) come once per
 * connection; in any other connection what it selects is per item.
 * Integer arithmetic, saturating at UINT64_MAX; the walk is bounded by
 * max_expanded visits and max_depth levels. No allocation. */
#include <string.h>

#include "graphql/doc.h"

enum { CTX_PLAIN, CTX_CONNECTION, CTX_EDGES };

typedef struct walk {
    const sl_gql_doc *d;
    const sl_gql_options *o;
    const sl__gql_def *op;
    sl_gql_error *err;
    uint64_t objects, requests;
    uint64_t visits;
} walk;

static uint64_t sat_add(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static bool is(const sl_gql_doc *d, uint32_t off, uint32_t len, const char *s) {
    return strlen(s) == len && memcmp(d->text + off, s, len) == 0;
}

static int fail_arg(walk *w, uint32_t off) {
    sl__gql_fail(w->err, SL_GQL_EARGUMENT, off, "first/last must be a non-negative Int.");
    return SL_EPARSE;
}

/* Counts `compared` name comparisons against max_expanded, one visit per 8. */
static int charge(walk *w, uint64_t compared, uint32_t off) {
    w->visits += compared / 8;
    if (w->visits > w->d->lim.max_expanded) {
        sl__gql_fail(w->err, SL_GQL_ENODES, off,
                     "More than %u selections once fragments are expanded.",
                     (unsigned)w->d->lim.max_expanded);
        return SL_EPARSE;
    }
    return 0;
}

/* One first/last argument's page size into *out (false: none, use the
 * default). */
static int page_of(walk *w, const sl__gql_page *pg, bool *has, uint64_t *out) {
    const sl_gql_doc *d = w->d;
    *has = false;
    switch (pg->kind) {
    case SL__GQL_PAGE_INT:
        if (pg->negative) return fail_arg(w, pg->off);
        *has = true;
        *out = pg->value;
        return 0;
    case SL__GQL_PAGE_NULL:
        return 0;
    case SL__GQL_PAGE_VAR:
        break;
    default:
        return fail_arg(w, pg->off);
    }
    /* names compared count against max_expanded (one visit per 8), so that
     * thousands of variables times thousands of spreads stay bounded work */
    uint32_t scanned = 0;
    const sl__gql_vardef *def = NULL;
    for (uint32_t k = 0; k < w->op->nvars; k++) {
        scanned++;
        const sl__gql_vardef *v = &d->vars[w->op->var_first + k];
        if (v->name_len == pg->var_len &&
            memcmp(d->text + v->name_off, d->text + pg->var_off, pg->var_len) == 0) {
            def = v;
            break;
        }
    }
    if (!def) {
        sl__gql_fail(w->err, SL_GQL_EVARIABLE, pg->off,
                     "Variable \"$%.*s\" is not defined by the operation.",
                     (int)(pg->var_len > 32 ? 32 : pg->var_len), d->text + pg->var_off);
        return SL_EPARSE;
    }
    if (charge(w, scanned, pg->off) < 0) return SL_EPARSE;
    for (size_t k = 0; k < w->o->nvars; k++) {
        const sl_gql_var *v = &w->o->vars[k];
        if (v->name && is(d, pg->var_off, pg->var_len, v->name)) {
            if (charge(w, k, pg->off) < 0) return SL_EPARSE;
            if (v->value < 0) return fail_arg(w, pg->off);
            *has = true;
            *out = (uint64_t)v->value;
            return 0;
        }
    }
    if (charge(w, w->o->nvars, pg->off) < 0) return SL_EPARSE;
    if (def->def.kind == 0 || def->def.kind == SL__GQL_PAGE_NULL) return 0;
    if (def->def.kind != SL__GQL_PAGE_INT || def->def.negative) return fail_arg(w, def->def.off);
    *has = true;
    *out = def->def.value;
    return 0;
}

/* Whether field n is a connection, whether Relay-shaped (its selection set
 * selects edges or nodes: the items are there, not directly under it), and
 * its page size. */
static int connection(walk *w, const sl__gql_node *n, bool *conn, bool *relay, uint64_t *page) {
    const sl_gql_doc *d = w->d;
    bool any = false;
    uint64_t best = 0;
    for (uint8_t k = 0; k < n->npage; k++) {
        bool has;
        uint64_t v = 0;
        if (page_of(w, &n->page[k], &has, &v) < 0) return SL_EPARSE;
        if (has && (!any || v > best)) best = v;
        any = any || has;
    }
    *relay = false;
    for (uint32_t c = n->child; !*relay && c; c = d->nodes[c].next) {
        const sl__gql_node *ch = &d->nodes[c];
        *relay = ch->kind == SL__GQL_FIELD && ch->child &&
                 (is(d, ch->name_off, ch->name_len, "edges") ||
                  is(d, ch->name_off, ch->name_len, "nodes"));
    }
    *conn = n->npage > 0 || *relay;
    for (const char *const *c = w->o->connections; !*conn && c && *c; c++)
        *conn = is(d, n->name_off, n->name_len, *c);
    *page = any ? best : w->o->default_page;
    return 0;
}

/* Walks the selection set starting at `first`: its objects come `mult` times,
 * the connections in it need `above` requests each. Directly under a
 * connection (ctx CTX_CONNECTION), `outer` and `outer_above` are the
 * connection's own multiplier and requests: fields other than edges and
 * nodes (pageInfo) come once per connection, not once per item. */
static int walk_set(walk *w, uint32_t first, uint64_t mult, uint64_t above, uint64_t outer,
                    uint64_t outer_above, int ctx, uint32_t depth) {
    const sl_gql_doc *d = w->d;
    if (depth > d->lim.max_depth) {
        sl__gql_fail(w->err, SL_GQL_EDEPTH, first ? d->nodes[first].off : 0,
                     "Selections nest deeper than %u once fragments are expanded.",
                     (unsigned)d->lim.max_depth);
        return SL_EPARSE;
    }
    for (uint32_t i = first; i; i = d->nodes[i].next) {
        const sl__gql_node *n = &d->nodes[i];
        if (++w->visits > d->lim.max_expanded) {
            sl__gql_fail(w->err, SL_GQL_ENODES, n->off,
                         "More than %u selections once fragments are expanded.",
                         (unsigned)d->lim.max_expanded);
            return SL_EPARSE;
        }
        if (n->kind == SL__GQL_SPREAD) {
            if (!n->target) {
                sl__gql_fail(w->err, SL_GQL_EFRAGMENT, n->off, "Unknown fragment \"%.*s\".",
                             (int)(n->name_len > 32 ? 32 : n->name_len), d->text + n->name_off);
                return SL_EPARSE;
            }
            const sl__gql_def *f = &d->defs[n->target];
            if (f->cyclic) {
                sl__gql_fail(w->err, SL_GQL_ECYCLE, n->off, "Fragment \"%.*s\" spreads itself.",
                             (int)(n->name_len > 32 ? 32 : n->name_len), d->text + n->name_off);
                return SL_EPARSE;
            }
            if (walk_set(w, f->sel, mult, above, outer, outer_above, ctx, depth + 1) < 0)
                return SL_EPARSE;
            continue;
        }
        if (n->kind == SL__GQL_INLINE) {
            if (walk_set(w, n->child, mult, above, outer, outer_above, ctx, depth + 1) < 0)
                return SL_EPARSE;
            continue;
        }
        if (!n->child) continue; /* a scalar: no object */
        bool edges = is(d, n->name_off, n->name_len, "edges");
        if ((ctx == CTX_CONNECTION && (edges || is(d, n->name_off, n->name_len, "nodes"))) ||
            (ctx == CTX_EDGES && is(d, n->name_off, n->name_len, "node"))) {
            int sub = ctx == CTX_CONNECTION && edges ? CTX_EDGES : CTX_PLAIN;
            if (walk_set(w, n->child, mult, above, mult, above, sub, depth + 1) < 0)
                return SL_EPARSE;
            continue;
        }
        uint64_t m0 = ctx == CTX_CONNECTION ? outer : mult;
        uint64_t a0 = ctx == CTX_CONNECTION ? outer_above : above;
        bool conn, relay;
        uint64_t page;
        if (connection(w, n, &conn, &relay, &page) < 0) return SL_EPARSE;
        if (conn) {
            uint64_t m = sat_mul(m0, page);
            w->objects = sat_add(w->objects, m);
            w->requests = sat_add(w->requests, a0);
            int sub = relay ? CTX_CONNECTION : CTX_PLAIN;
            if (walk_set(w, n->child, m, sat_mul(a0, page), m0, a0, sub, depth + 1) < 0)
                return SL_EPARSE;
        } else {
            w->objects = sat_add(w->objects, m0);
            if (walk_set(w, n->child, m0, a0, m0, a0, CTX_PLAIN, depth + 1) < 0) return SL_EPARSE;
        }
    }
    return 0;
}

void sl_gql_options_init(sl_gql_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->scheme = SL_GQL_OBJECTS;
    o->default_page = 100;
}

int sl_gql_cost(const sl_gql_doc *doc, const sl_gql_options *o, sl_gql_cost_result *out,
                sl_gql_error *err) {
    if (err) memset(err, 0, sizeof *err);
    if (!doc || !out) return SL_EINVAL;
    memset(out, 0, sizeof *out);
    sl_gql_options defaults;
    sl_gql_options_init(&defaults);
    if (!o) o = &defaults;
    if (o->scheme != SL_GQL_OBJECTS && o->scheme != SL_GQL_GITHUB) return SL_EINVAL;
    if (o->nvars && !o->vars) return SL_EINVAL;
    walk w = {.d = doc, .o = o, .err = err};
    for (uint32_t i = 1; i <= doc->ndefs; i++) {
        const sl__gql_def *f = &doc->defs[i];
        if (f->kind == SL__GQL_FRAGMENT && f->duplicate) {
            sl__gql_fail(err, SL_GQL_EFRAGMENT, f->off, "More than one fragment is named \"%.*s\".",
                         (int)(f->name_len > 32 ? 32 : f->name_len), doc->text + f->name_off);
            return SL_EPARSE;
        }
        if (f->kind != SL__GQL_OP) continue;
        if (o->operation ? is(doc, f->name_off, f->name_len, o->operation) && f->name_len
                         : doc->nops == 1) {
            if (!w.op) w.op = f;
        }
    }
    if (!w.op) {
        if (o->operation)
            sl__gql_fail(err, SL_GQL_EOPERATION, 0, "Unknown operation named \"%.32s\".",
                         o->operation);
        else if (doc->nops == 0)
            sl__gql_fail(err, SL_GQL_EOPERATION, 0, "The document has no operation.");
        else
            sl__gql_fail(err, SL_GQL_EOPERATION, 0,
                         "The document has %u operations: name the one to cost.",
                         (unsigned)doc->nops);
        return SL_EPARSE;
    }
    if (walk_set(&w, w.op->sel, 1, 1, 1, 1, CTX_PLAIN, 1) < 0) return SL_EPARSE;
    out->objects = w.objects;
    out->requests = w.requests;
    uint64_t raw = o->scheme == SL_GQL_GITHUB ? w.requests : w.objects;
    uint64_t div = o->divisor ? o->divisor : (o->scheme == SL_GQL_GITHUB ? 100 : 1);
    uint64_t pts;
    if (o->scheme == SL_GQL_GITHUB) /* to the nearest whole number, halves up */
        pts = raw / div + (raw % div >= div - div / 2 ? 1 : 0);
    else /* rounded up */
        pts = raw / div + (raw % div ? 1 : 0);
    out->points = pts ? pts : 1;
    if (o->max_cost && out->points > o->max_cost) {
        sl__gql_fail(err, SL_GQL_ETOO_COSTLY, 0,
                     "The query costs %llu points, more than the maximum of %llu.",
                     (unsigned long long)out->points, (unsigned long long)o->max_cost);
        return SL_ECOST;
    }
    return SL_OK;
}
