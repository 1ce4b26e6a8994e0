/* graphql/resolve.c: the last step of parsing (doc.h, sl__gql_resolve):
 * each fragment spread resolved to its definition by name (the fragments
 * sorted by name, then position, and searched), duplicated names marked,
 * and the fragments on a spread cycle found (an iterative depth-first walk
 * with colours), for the cost walk (cost.c) to refuse. Pure, no recursion. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graphql/doc.h"

static int cmp_name(const sl_gql_doc *d, uint32_t a_off, uint32_t a_len, uint32_t b_off,
                    uint32_t b_len) {
    uint32_t n = a_len < b_len ? a_len : b_len;
    int c = memcmp(d->text + a_off, d->text + b_off, n);
    if (c) return c;
    return a_len < b_len ? -1 : a_len > b_len;
}

/* The first fragment named (off, len) in `frags` (sorted by name, then by
 * position; n items); 0 if none. */
static uint32_t find_frag(const sl_gql_doc *d, const uint32_t *frags, uint32_t n, uint32_t off,
                          uint32_t len) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const sl__gql_def *f = &d->defs[frags[mid]];
        if (cmp_name(d, f->name_off, f->name_len, off, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n) return 0;
    const sl__gql_def *f = &d->defs[frags[lo]];
    return cmp_name(d, f->name_off, f->name_len, off, len) == 0 ? frags[lo] : 0;
}

/* Sorts fragment indexes by name, then position: a bottom-up merge sort
 * through tmp, O(n log n), stable, no global state. */
static void sort_frags(const sl_gql_doc *d, uint32_t *a, uint32_t *tmp, uint32_t n) {
    for (uint32_t w = 1; w<n; w = w> UINT32_MAX / 2 ? n : w * 2) {
        for (uint32_t lo = 0; lo < n; lo += (n - lo > 2 * w ? 2 * w : n - lo)) {
            uint32_t mid = n - lo > w ? lo + w : n;
            uint32_t hi = n - lo > 2 * w ? lo + 2 * w : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                const sl__gql_def *x = &d->defs[a[i]], *y = &d->defs[a[j]];
                int c = cmp_name(d, x->name_off, x->name_len, y->name_off, y->name_len);
                tmp[k++] = c <= 0 ? a[i++] : a[j++];
            }
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

int sl__gql_resolve(sl_gql_doc *d) {
    uint32_t nf = 0;
    for (uint32_t i = 1; i <= d->ndefs; i++) nf += d->defs[i].kind == SL__GQL_FRAGMENT;
    size_t nd = (size_t)d->ndefs + 1;
    uint32_t *frags = calloc((size_t)nf + 1, sizeof *frags);
    uint32_t *tmp = calloc((size_t)nf + 1, sizeof *tmp);
    uint8_t *colour = calloc(nd, 1);
    uint32_t *stack = calloc(nd, sizeof *stack);
    uint32_t *iter = calloc(nd, sizeof *iter);
    int rc = 0;
    if (!frags || !tmp || !colour || !stack || !iter) {
        rc = -2;
        goto out;
    }
    nf = 0;
    for (uint32_t i = 1; i <= d->ndefs; i++)
        if (d->defs[i].kind == SL__GQL_FRAGMENT) frags[nf++] = i;
    sort_frags(d, frags, tmp, nf);
    for (uint32_t k = 1; k < nf; k++) {
        const sl__gql_def *x = &d->defs[frags[k - 1]];
        sl__gql_def *y = &d->defs[frags[k]];
        if (cmp_name(d, x->name_off, x->name_len, y->name_off, y->name_len) == 0)
            y->duplicate = true;
    }
    for (uint32_t i = 1; i <= d->nnodes; i++) {
        sl__gql_node *n = &d->nodes[i];
        if (n->kind == SL__GQL_SPREAD)
            n->target = find_frag(d, frags, nf, n->name_off, n->name_len);
    }
    for (uint32_t k = 0; k < nf; k++) {
        uint32_t root = frags[k];
        if (colour[root]) continue;
        uint32_t sp = 0;
        stack[sp++] = root;
        colour[root] = 1;
        iter[root] = d->defs[root].node_first;
        while (sp) {
            uint32_t top = stack[sp - 1];
            const sl__gql_def *t = &d->defs[top];
            uint32_t to = 0;
            while (iter[top] && iter[top] <= t->node_last) {
                const sl__gql_node *n = &d->nodes[iter[top]++];
                if (n->kind == SL__GQL_SPREAD && n->target) {
                    to = n->target;
                    break;
                }
            }
            if (!to) {
                colour[top] = 2;
                sp--;
            } else if (colour[to] == 1) {
                d->defs[to].cyclic = true;
            } else if (colour[to] == 0) {
                colour[to] = 1;
                iter[to] = d->defs[to].node_first;
                stack[sp++] = to;
            }
        }
    }
out:
    free(frags);
    free(tmp);
    free(colour);
    free(stack);
    free(iter);
    return rc;
}
