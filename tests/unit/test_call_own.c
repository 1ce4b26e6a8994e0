/* test_call_own.c: what an engine call keeps of its caller (policy/decide.h).
 * sl__decide_call_new_own: the caller's own first bytes of a call's user area
 * are left as they are (a domain call writes its state at once, and no longer
 * pays for zeroing 10 KiB per request), the rest is zeroed even in a call
 * reused from the thread's cache, and `own` past the user bytes is refused.
 * sl__decide_call_label_later: labels are formatted only for what is refused
 * while the call completes inline, and copied before sl__engine_decide
 * returns when it completes later (the caller's context is gone by then). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/decide.h"
#include "sluice/sluice.h"

#include "decide_helper.h"

static sl__decide_limit lim;

static sl__decide_call *one(size_t user, size_t own) {
    sl__decide_item it = {.limit = &lim, .key = "k", .keylen = 1, .cost = 1};
    return own == SIZE_MAX ? sl__decide_call_new(&it, 1, NULL, NULL, user)
                           : sl__decide_call_new_own(&it, 1, NULL, NULL, user, own);
}

static void test_own_bytes(void **state) {
    (void)state;
    enum { USER = 4096, OWN = 3000 };
    /* dirty calls go back to the cache */
    sl__decide_call *c[4];
    for (int i = 0; i < 4; i++) {
        c[i] = one(USER, SIZE_MAX);
        assert_non_null(c[i]);
        memset(sl__decide_call_user(c[i]), 0xa5, USER);
    }
    for (int i = 0; i < 4; i++) sl__decide_call_free(c[i]);
    for (int i = 0; i < 4; i++) {
        c[i] = one(USER, OWN);
        assert_non_null(c[i]);
        const unsigned char *u = sl__decide_call_user(c[i]);
        for (size_t k = OWN; k < USER; k++) assert_int_equal(u[k], 0);
        assert_string_equal(c[i]->items[0].key, "k");
        assert_int_equal(c[i]->n, 1);
    }
    for (int i = 0; i < 4; i++) sl__decide_call_free(c[i]);
    /* the plain constructor still zeroes it all */
    sl__decide_call *z = one(USER, SIZE_MAX);
    const unsigned char *u = sl__decide_call_user(z);
    for (size_t k = 0; k < USER; k++) assert_int_equal(u[k], 0);
    sl__decide_call_free(z);
    assert_null(one(16, 17));
    sl__decide_call *all = one(16, 16);
    assert_non_null(all);
    sl__decide_call_free(all);
}

/* ---- labels later ---------------------------------------------------------------- */

#define T0 (INT64_C(1769904000) * SL_NS_PER_SEC)

typedef struct label_src {
    char name[16];
    int calls;
} label_src;

static size_t label_of(void *ctx, size_t i, char *buf, size_t size) {
    label_src *l = ctx;
    l->calls++;
    int n = snprintf(buf, size, "%s#%zu", l->name, i);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

/* A fixed window of 1 a minute on the memory store, with its sketch. */
static sl__decide_limit *window(sl_params *p, const char *name) {
    sl__decide_limit *l = calloc(1, sizeof *l);
    assert_non_null(l);
    *p = (sl_params){.algorithm = SL_FIXED_WINDOW,
                     .rate = {.limit = 1, .period = 60 * SL_NS_PER_SEC}};
    sl__decide_limit_init(l, false);
    l->store.name = name;
    l->store.params = p;
    sl_table_options o = {.params = *p};
    sl_table *t = NULL;
    assert_int_equal(sl_table_create(&o, &t), SL_OK);
    l->store.table = t;
    assert_int_equal(sl__topk_create(8, &l->top), 0);
    return l;
}

static void window_free(sl__decide_limit *l) {
    sl_table_destroy(l->store.table);
    sl__topk_destroy(l->top);
    free(l);
}

static int dones;
static void done_free(sl__decide_call *c) {
    dones++;
    sl__decide_call_free(c);
}

/* the sketch's only key */
static void top_is(sl__decide_limit *l, const char *want) {
    sl__topk_item items[8];
    size_t k = sl__topk_list(l->top, items, 8);
    assert_int_equal(k, 1);
    assert_int_equal(items[0].keylen, strlen(want));
    assert_memory_equal(items[0].key, want, items[0].keylen);
}

static void test_labels_inline(void **state) {
    (void)state;
    sl_params p;
    sl__decide_limit *l = window(&p, "w");
    label_src src = {.name = "inline"};
    for (int i = 0; i < 3; i++) {
        sl__decide_item it = {.limit = l, .key = "secret-key", .keylen = 10, .cost = 1};
        sl__decide_call *c = sl__decide_call_new(&it, 1, NULL, NULL, 0);
        assert_non_null(c);
        sl__decide_call_label_later(c, label_of, &src);
        c->done = done_free;
        dones = 0;
        sl__engine_decide(NULL, c, T0); /* the memory store: inline */
        assert_int_equal(dones, 1);
    }
    /* the first passed: no label made; the two refusals: one each */
    assert_int_equal(src.calls, 2);
    top_is(l, "inline#0"); /* never the key */
    window_free(l);
}

static void test_labels_later(void **state) {
    (void)state;
    sl_params p;
    sl__decide_limit *l = window(&p, "w");
    helper_later_store ls = helper_later_store_new();
    label_src *src = calloc(1, sizeof *src);
    assert_non_null(src);
    strcpy(src->name, "later");
    sl__decide_item it = {.limit = l, .key = "secret-key", .keylen = 10, .cost = 1};
    sl__decide_call *c = sl__decide_call_new(&it, 1, NULL, NULL, 0);
    sl__decide_call_label_later(c, label_of, src);
    c->done = done_free;
    dones = 0;
    sl__engine_decide_on(&ls.base, c, T0);
    assert_int_equal(dones, 0);
    assert_int_equal(src->calls, 1); /* copied before returning */
    strcpy(src->name, "gone");       /* the caller's context ends here */
    free(src);
    /* the store refuses, later */
    ls.held->items[0].decided = true;
    ls.held->items[0].decision =
        (sl_decision){.allowed = false, .limit = 1, .retry_after = SL_NS_PER_SEC};
    ls.held->done(ls.held);
    assert_int_equal(dones, 1);
    top_is(l, "later#0");
    window_free(l);
}

int main(void) {
    sl__decide_limit_init(&lim, false);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_own_bytes),
                                       cmocka_unit_test(test_labels_inline),
                                       cmocka_unit_test(test_labels_later)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
