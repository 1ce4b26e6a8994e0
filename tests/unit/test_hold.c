/* test_hold.c: answers held until their release time (server/hold.h), on
 * a fake clock (no loop: sl__hold_run by hand):
 * - nothing leaves before its group's first time, one answer per time;
 * - within a group, the times go to the tenants in fair order: a small
 *   tenant's single answer behind a big tenant's burst takes the next time,
 *   not the end of the burst; weights give a tenant its share;
 * - groups are apart: one group's times never release another's answers;
 * - the bounds: max_held in all, per_tenant per tenant in a group, the
 *   times kept (2 x max_held): a push beyond is refused and changes nothing;
 * - a cancelled answer frees its place at once, its fn never runs, and its
 *   time goes to the group's next answer (or to nobody);
 * - a release that cancels another answer of its group (a connection
 *   closing while its answers are written) is safe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "server/hold.h"
#include "sluice/error.h"

#define MAXLOG 256

/* What was released, in order: the answers' names. */
typedef struct rec {
    char log[MAXLOG][16];
    size_t n;
    int64_t at[MAXLOG]; /* the clock when released */
    int64_t now;
    sl__hold *h;
    sl__hold_item *victim; /* cancelled by the next release, if set */
} rec;

typedef struct answer {
    rec *r;
    char name[16];
    sl__hold_item *item;
} answer;

static void released(void *arg) {
    answer *a = arg;
    rec *r = a->r;
    snprintf(r->log[r->n], sizeof r->log[r->n], "%s", a->name);
    r->at[r->n++] = r->now;
    a->item = NULL;
    if (r->victim) {
        sl__hold_cancel(r->h, r->victim);
        r->victim = NULL;
    }
}

static int push(sl__hold *h, answer *a, rec *r, const char *name, const char *group,
                const char *tenant, uint32_t weight, int64_t release) {
    a->r = r;
    snprintf(a->name, sizeof a->name, "%s", name);
    sl__hold_entry e = {.group = group,
                        .group_len = strlen(group),
                        .tenant = tenant,
                        .tenant_len = strlen(tenant),
                        .weight = weight,
                        .release = release,
                        .per_tenant = strcmp(group, "q") == 0 && strcmp(tenant, "x") == 0 ? 2 : 0,
                        .fn = released,
                        .arg = a};
    return sl__hold_push(h, &e, &a->item);
}

static void run_to(sl__hold *h, rec *r, int64_t t) {
    r->now = t;
    sl__hold_run(h, t);
}

/* A big tenant's burst of 6 (times 0, 100, ..., 500 ms) and then a small
 * tenant's one (600 ms): the small one leaves at the second time (100 ms),
 * the burst keeps its times and its own order. */
static void test_small_tenant_goes_next(void **state) {
    (void)state;
    rec r = {0};
    sl__hold *h = sl__hold_new(100, NULL);
    assert_non_null(h);
    answer big[6], small;
    char name[16];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "big%d", i);
        assert_int_equal(push(h, &big[i], &r, name, "q", "big", 1, i * 100 * MS), 0);
    }
    assert_int_equal(push(h, &small, &r, "small", "q", "small", 1, 600 * MS), 0);
    assert_int_equal(sl__hold_count(h), 7);
    assert_i64(sl__hold_next(h), 0);
    run_to(h, &r, -1);
    assert_int_equal(r.n, 0); /* nothing before the first time */
    static const char *const want[] = {"big0", "small", "big1", "big2", "big3", "big4", "big5"};
    for (int k = 0; k < 7; k++) {
        run_to(h, &r, k * 100 * MS + 99 * MS); /* just before the next time */
        assert_int_equal(r.n, (size_t)k + 1);  /* one answer per time that came */
        assert_string_equal(r.log[k], want[k]);
    }
    assert_int_equal(sl__hold_count(h), 0);
    assert_i64(sl__hold_next(h), INT64_MAX);
    sl__hold_free(h);
}

/* Weight 3 against 1, both backlogged: 3 of every 4 times go to the heavy
 * tenant. */
static void test_weights(void **state) {
    (void)state;
    rec r = {0};
    sl__hold *h = sl__hold_new(100, NULL);
    answer a[16];
    char name[16];
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "L%d", i);
        assert_int_equal(push(h, &a[i], &r, name, "q", "light", 1, i * MS), 0);
        snprintf(name, sizeof name, "H%d", i);
        assert_int_equal(push(h, &a[8 + i], &r, name, "q", "heavy", 3, (8 + i) * MS), 0);
    }
    run_to(h, &r, 7 * MS); /* 8 times came */
    assert_int_equal(r.n, 8);
    int heavy = 0;
    for (size_t k = 0; k < r.n; k++) heavy += r.log[k][0] == 'H';
    assert_int_equal(heavy, 6); /* rounds of L, H, H, H: 2 L then 6 H in 8 */
    run_to(h, &r, 100 * MS);
    assert_int_equal(r.n, 16);
    sl__hold_free(h);
}

/* Two groups (two queues): each releases only its own answers at its own
 * times. */
static void test_groups_apart(void **state) {
    (void)state;
    rec r = {0};
    sl__hold *h = sl__hold_new(100, NULL);
    answer a1, a2, b1;
    assert_int_equal(push(h, &a1, &r, "a1", "qa", "t", 1, 10 * MS), 0);
    assert_int_equal(push(h, &a2, &r, "a2", "qa", "t", 1, 30 * MS), 0);
    assert_int_equal(push(h, &b1, &r, "b1", "qb", "t", 1, 20 * MS), 0);
    run_to(h, &r, 25 * MS);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.log[0], "a1");
    assert_string_equal(r.log[1], "b1"); /* qb's time released qb's answer, not a2 */
    run_to(h, &r, 30 * MS);
    assert_int_equal(r.n, 3);
    assert_string_equal(r.log[2], "a2");
    sl__hold_free(h);
}

static void test_bounds(void **state) {
    (void)state;
    rec r = {0};
    assert_null(sl__hold_new(0, NULL));
    sl__hold *h = sl__hold_new(4, NULL); /* group q holds 2 of tenant x (push) */
    answer a[8];
    assert_int_equal(push(h, &a[0], &r, "x0", "q", "x", 1, 10 * MS), 0);
    assert_int_equal(push(h, &a[1], &r, "x1", "q", "x", 1, 20 * MS), 0);
    /* the tenant's third in this group: refused, nothing changed */
    assert_int_equal(push(h, &a[2], &r, "x2", "q", "x", 1, 30 * MS), SL_ETOOMANY);
    assert_null(a[2].item);
    assert_int_equal(sl__hold_count(h), 2);
    /* the same tenant in another group is counted there */
    assert_int_equal(push(h, &a[3], &r, "x3", "q2", "x", 1, 30 * MS), 0);
    assert_int_equal(push(h, &a[4], &r, "y0", "q", "y", 1, 40 * MS), 0);
    /* max_held (4) reached */
    assert_int_equal(push(h, &a[5], &r, "z0", "q3", "z", 1, 50 * MS), SL_ETOOMANY);
    assert_int_equal(sl__hold_count(h), 4);
    run_to(h, &r, 10 * MS);
    assert_int_equal(r.n, 1);
    assert_int_equal(push(h, &a[5], &r, "z0", "q3", "z", 1, 50 * MS), 0); /* a place came free */
    run_to(h, &r, SEC);
    assert_int_equal(r.n, 5);
    sl__hold_free(h);
}

/* A cancelled answer frees its place at once; its time is the group's next
 * answer's, so nothing leaves later than it would have. */
static void test_cancel(void **state) {
    (void)state;
    rec r = {0};
    sl__hold *h = sl__hold_new(2, NULL);
    answer a[4];
    assert_int_equal(push(h, &a[0], &r, "a0", "q", "a", 1, 10 * MS), 0);
    assert_int_equal(push(h, &a[1], &r, "a1", "q", "a", 1, 20 * MS), 0);
    assert_int_equal(push(h, &a[2], &r, "a2", "q", "a", 1, 30 * MS), SL_ETOOMANY);
    assert_ptr_equal(sl__hold_cancel(h, a[0].item), &a[0]);
    assert_int_equal(sl__hold_count(h), 1);
    assert_int_equal(push(h, &a[2], &r, "a2", "q", "a", 1, 30 * MS), 0);
    run_to(h, &r, 10 * MS); /* a0's time: a1 (the next) takes it */
    assert_int_equal(r.n, 1);
    assert_string_equal(r.log[0], "a1");
    /* the times kept are bounded too (2 x max_held = 4) */
    sl__hold_cancel(h, a[2].item);
    assert_int_equal(sl__hold_count(h), 0);
    assert_int_equal(push(h, &a[3], &r, "b0", "p", "b", 1, 40 * MS), 0); /* times 20, 30, 40 */
    assert_int_equal(push(h, &a[0], &r, "c0", "o", "c", 1, 50 * MS), 0); /* and 50 */
    sl__hold_cancel(h, a[0].item);
    assert_int_equal(sl__hold_count(h), 1); /* a place, but no room for its time */
    assert_int_equal(push(h, &a[0], &r, "d0", "o", "d", 1, 60 * MS), SL_ETOOMANY);
    run_to(h, &r, 30 * MS); /* the cancelled answers' times pass unused */
    assert_int_equal(r.n, 1);
    run_to(h, &r, 40 * MS);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.log[1], "b0");
    run_to(h, &r, 50 * MS);
    assert_int_equal(r.n, 2);
    assert_i64(sl__hold_next(h), INT64_MAX);
    sl__hold_free(h); /* ASan: nothing left behind */
}

/* A release whose writing closes a connection with another answer held in
 * the same group (that one is cancelled from inside fn). */
static void test_cancel_inside_release(void **state) {
    (void)state;
    rec r = {0};
    sl__hold *h = sl__hold_new(8, NULL);
    r.h = h;
    answer a[3];
    assert_int_equal(push(h, &a[0], &r, "a0", "q", "a", 1, 10 * MS), 0);
    assert_int_equal(push(h, &a[1], &r, "a1", "q", "a", 1, 10 * MS), 0);
    assert_int_equal(push(h, &a[2], &r, "a2", "q", "a", 1, 10 * MS), 0);
    r.victim = a[1].item;
    run_to(h, &r, 10 * MS);
    assert_int_equal(r.n, 2); /* a0, then a2 at a1's time */
    assert_string_equal(r.log[0], "a0");
    assert_string_equal(r.log[1], "a2");
    assert_int_equal(sl__hold_count(h), 0);
    sl__hold_free(h);
}

/* Items left at free are dropped (error paths): ASan sees no leak. */
static void test_free_with_items(void **state) {
    (void)state;
    rec r = {0};
    sl__hold *h = sl__hold_new(8, NULL);
    answer a[2];
    assert_int_equal(push(h, &a[0], &r, "a0", "q", "a", 1, 10 * MS), 0);
    assert_int_equal(push(h, &a[1], &r, "b0", "p", "b", 1, 10 * MS), 0);
    sl__hold_close(h);
    assert_int_equal(push(h, &a[1], &r, "b1", "p", "b", 1, 10 * MS), SL_ETOOMANY);
    sl__hold_free(h);
    assert_int_equal(r.n, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_tenant_goes_next),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_groups_apart),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_cancel_inside_release),
        cmocka_unit_test(test_free_with_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
