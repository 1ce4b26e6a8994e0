/* test_shed.c: load shedding by priority (sluice/shed.h), with a fake
 * clock:
 * - the lowest priority is refused first, a reserve stays for critical
 *   traffic, refused requests take nothing, retry_after is exact;
 * - refunds never overfill; the clock going back credits nothing;
 * - bad options and arguments;
 * - random traces against a reference model written from the header's
 *   definition (whole tokens, a rate of a whole number of ns per token);
 * - threads: every priority together never admits more than the burst plus
 *   what the rate refilled (an exact bound: the clock is a shared counter). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "sluice/sluice.h"
#include "helpers.h"

static sl_shed *make(int64_t limit, int64_t period, int64_t burst, int64_t rc, int64_t rd) {
    sl_shed_options o = {
        .rate = {limit, period}, .burst = burst, .reserve_critical = rc, .reserve_default = rd};
    sl_shed *s = NULL;
    assert_int_equal(sl_shed_create(&o, 0, &s), SL_OK);
    return s;
}

static sl_shed_decision admit(sl_shed *s, sl_priority p, int64_t cost, int64_t now) {
    sl_shed_decision d;
    assert_int_equal(sl_shed_admit(s, p, cost, now, &d), SL_OK);
    return d;
}

static void lowest_first(void **state) {
    (void)state;
    /* 10 per second, 10 tokens: 2 for critical only, 3 more for default */
    sl_shed *s = make(10, SEC, 10, 2, 3);
    sl_shed_decision d;
    for (int i = 0; i < 5; i++) {
        d = admit(s, SL_PRIORITY_SHEDDABLE, 1, 0);
        assert_true(d.admitted);
        assert_int_equal(d.available, 4 - i);
    }
    d = admit(s, SL_PRIORITY_SHEDDABLE, 1, 0); /* down to the reserves */
    assert_false(d.admitted);
    assert_int_equal(d.retry_after, 100 * MS); /* one token at 10/s */
    assert_int_equal(d.available, 0);
    for (int i = 0; i < 3; i++) assert_true(admit(s, SL_PRIORITY_DEFAULT, 1, 0).admitted);
    d = admit(s, SL_PRIORITY_DEFAULT, 1, 0);
    assert_false(d.admitted);
    assert_int_equal(sl_shed_tokens(s, 0), 2);
    d = admit(s, SL_PRIORITY_SHEDDABLE, 2, 0);
    assert_int_equal(d.retry_after, 500 * MS); /* 5 + 2 - 2 = 5 tokens away */
    assert_true(admit(s, SL_PRIORITY_CRITICAL, 2, 0).admitted);
    d = admit(s, SL_PRIORITY_CRITICAL, 1, 0);
    assert_false(d.admitted);
    assert_int_equal(d.retry_after, 100 * MS);
    /* refused requests took nothing: at 100 ms one token is back */
    assert_int_equal(sl_shed_tokens(s, 100 * MS), 1);
    assert_true(admit(s, SL_PRIORITY_CRITICAL, 1, 100 * MS).admitted);
    /* a cost a priority can never take */
    sl_shed_decision never;
    assert_int_equal(sl_shed_admit(s, SL_PRIORITY_SHEDDABLE, 6, 0, &never), SL_ECOST);
    assert_false(never.admitted);
    assert_int_equal(never.retry_after, -1);
    assert_int_equal(sl_shed_admit(s, SL_PRIORITY_DEFAULT, 8, 0, &never), SL_OK);
    assert_int_equal(sl_shed_admit(s, SL_PRIORITY_CRITICAL, 11, 0, &never), SL_ECOST);
    sl_shed_destroy(s);
}

static void refund_and_clock(void **state) {
    (void)state;
    sl_shed *s = make(1, SEC, 3, 0, 0);
    assert_true(admit(s, SL_PRIORITY_DEFAULT, 3, 10 * SEC).admitted);
    sl_shed_refund(s, 2, 10 * SEC);
    assert_int_equal(sl_shed_tokens(s, 10 * SEC), 2);
    sl_shed_refund(s, 100, 10 * SEC); /* capped at the burst */
    assert_int_equal(sl_shed_tokens(s, 10 * SEC), 3);
    assert_true(admit(s, SL_PRIORITY_DEFAULT, 3, 10 * SEC).admitted);
    /* the clock goes back 5 s: nothing credited, judged as of 10 s */
    sl_shed_decision d = admit(s, SL_PRIORITY_DEFAULT, 1, 5 * SEC);
    assert_false(d.admitted);
    assert_int_equal(d.retry_after, 5 * SEC + 1 * SEC);
    assert_int_equal(sl_shed_tokens(s, 11 * SEC), 1);
    sl_shed_destroy(s);
}

static void bad_arguments(void **state) {
    (void)state;
    sl_shed *s = NULL;
    sl_shed_options o = {
        .rate = {10, SEC}, .burst = 10, .reserve_critical = 5, .reserve_default = 5};
    assert_int_equal(sl_shed_create(&o, 0, &s), SL_EINVAL); /* nothing left for sheddable */
    o.reserve_default = 4;
    assert_int_equal(sl_shed_create(&o, 0, &s), SL_OK);
    sl_shed_destroy(s);
    o.reserve_critical = -1;
    assert_int_equal(sl_shed_create(&o, 0, &s), SL_EINVAL);
    o = (sl_shed_options){.rate = {0, SEC}, .burst = 1};
    assert_int_equal(sl_shed_create(&o, 0, &s), SL_ERATE);
    o = (sl_shed_options){.rate = {1, SEC}, .burst = 0};
    assert_int_equal(sl_shed_create(&o, 0, &s), SL_EBURST);
    o.burst = 1;
    assert_int_equal(sl_shed_create(&o, -1, &s), SL_EINVAL);
    assert_int_equal(sl_shed_create(&o, 0, &s), SL_OK);
    sl_shed_decision d;
    assert_int_equal(sl_shed_admit(s, (sl_priority)3, 1, 0, &d), SL_EINVAL);
    assert_int_equal(sl_shed_admit(s, SL_PRIORITY_DEFAULT, -1, 0, &d), SL_ECOST);
    assert_int_equal(sl_shed_admit(s, SL_PRIORITY_DEFAULT, 0, 0, &d), SL_OK); /* a peek */
    assert_true(d.admitted);
    assert_int_equal(sl_shed_tokens(s, 0), 1);
    sl_shed_destroy(s);

    sl_priority p;
    assert_int_equal(sl_priority_parse("Sheddable", 9, &p), SL_OK);
    assert_int_equal(p, SL_PRIORITY_SHEDDABLE);
    assert_int_equal(sl_priority_parse("criticalx", 9, &p), SL_EPARSE);
    assert_int_equal(sl_priority_parse("crit", 4, &p), SL_EPARSE);
    assert_string_equal(sl_priority_name(SL_PRIORITY_DEFAULT), "default");
    assert_null(sl_priority_name((sl_priority)7));
}

/* The reference: whole tokens; one token every `every` ns exactly. */
typedef struct ref {
    int64_t tokens, credit, last; /* credit: ns accrued towards the next token */
} ref;

static sl_shed_decision ref_admit(ref *r, int64_t every, int64_t burst, const int64_t floor[3],
                                  sl_priority p, int64_t cost, int64_t now) {
    if (now > r->last) {
        int64_t t = r->credit + (now - r->last);
        r->tokens += t / every;
        r->credit = t % every;
        if (r->tokens >= burst) r->tokens = burst, r->credit = 0;
        r->last = now;
    }
    sl_shed_decision d = {0};
    int64_t above = r->tokens - floor[p];
    d.admitted = above >= cost;
    if (d.admitted) {
        r->tokens -= cost;
        above -= cost;
    } else {
        d.retry_after = (r->last - now) + (cost - above) * every - r->credit;
    }
    d.available = above > 0 ? above : 0;
    return d;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int64_t pick(int64_t lo, int64_t hi) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

static void against_reference(void **state) {
    (void)state;
    for (int trace = 0; trace < 2000; trace++) {
        int64_t every = pick(1, 50), burst = pick(1, 20);
        int64_t rc = pick(0, burst - 1), rd = pick(0, burst - 1 - rc);
        sl_shed *s = make(1, every, burst, rc, rd);
        const int64_t floor[3] = {0, rc, rc + rd};
        ref r = {.tokens = burst};
        int64_t now = 0;
        for (int i = 0; i < 80; i++) {
            int64_t step = pick(0, 9) == 0 ? -pick(0, 3 * every) : pick(0, 3 * every);
            if (now + step >= 0) now += step;
            sl_priority p = (sl_priority)pick(0, 2);
            int64_t cost = pick(0, burst - floor[p]);
            if (pick(0, 7) == 0) {
                int64_t give = pick(1, burst);
                sl_shed_refund(s, give, now);
                /* the reference's refund: bring to now, add, cap */
                ref_admit(&r, every, burst, floor, SL_PRIORITY_CRITICAL, 0, now);
                r.tokens += give;
                if (r.tokens >= burst) r.tokens = burst, r.credit = 0;
                continue;
            }
            sl_shed_decision got = admit(s, p, cost, now);
            sl_shed_decision want = ref_admit(&r, every, burst, floor, p, cost, now);
            if (got.admitted != want.admitted || got.available != want.available ||
                got.retry_after != want.retry_after)
                fail_msg("trace %d step %d (every %lld ns, burst %lld, reserves %lld %lld): %s "
                         "cost %lld at %lld: got %d avail %lld retry %lld, want %d avail %lld "
                         "retry %lld",
                         trace, i, (long long)every, (long long)burst, (long long)rc, (long long)rd,
                         sl_priority_name(p), (long long)cost, (long long)now, got.admitted,
                         (long long)got.available, (long long)got.retry_after, want.admitted,
                         (long long)want.available, (long long)want.retry_after);
        }
        sl_shed_destroy(s);
    }
}

/* ---- threads ---------------------------------------------------------------- */

#define THREADS 4
#define ROUNDS  20000

static sl_shed *shared;
static atomic_llong clock_ns, admitted_total;

static void *hammer(void *arg) {
    sl_priority p = (sl_priority)((intptr_t)arg % SL_PRIORITIES);
    for (int i = 0; i < ROUNDS; i++) {
        int64_t now = atomic_fetch_add(&clock_ns, 1); /* 1 ns per call, over all threads */
        sl_shed_decision d;
        if (sl_shed_admit(shared, p, 1, now, &d) == SL_OK && d.admitted)
            atomic_fetch_add(&admitted_total, 1);
    }
    return NULL;
}

static void threads_never_exceed(void **state) {
    (void)state;
    /* one token per 1000 ns, 50 tokens, reserves 10 and 10 */
    shared = make(1, 1000, 50, 10, 10);
    atomic_store(&clock_ns, 0);
    atomic_store(&admitted_total, 0);
    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, hammer, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    int64_t elapsed = atomic_load(&clock_ns);
    /* never more than the burst plus one token per 1000 ns of the clock */
    assert_true(atomic_load(&admitted_total) <= 50 + elapsed / 1000 + 1);
    /* and the critical thread got through while the others were shed */
    assert_true(atomic_load(&admitted_total) > 0);
    sl_shed_destroy(shared);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lowest_first),         cmocka_unit_test(refund_and_clock),
        cmocka_unit_test(bad_arguments),        cmocka_unit_test(against_reference),
        cmocka_unit_test(threads_never_exceed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
