/* test_limiter.c: sl_limiter, the golang.org/x/time/rate-style token bucket
 * (sluice/limiter.h), on a fake clock whose sleep_until just moves time on:
 * the seed's allow/wait/reserve example, deadlines, costs, changing rate and
 * burst while in use (AIMD), clocks that go backwards, cancel and its
 * x/time/rate restore rule, and exact fractional rates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sluice/sluice.h"

#include "helpers.h"

#define T0 (1000 * SEC)

/* The fake clock (helpers.h): sleeping moves time to the wake-up time, at
 * once. */
static sl_clock make_clock(fake_clock *c) {
    return fake_clock_of(c);
}

static sl_limiter *make_limiter(int64_t limit, int64_t period, int64_t burst, unsigned flags,
                                int64_t now) {
    sl_limiter *l = NULL;
    int rc = sl_limiter_create((sl_rate){limit, period}, burst, flags, now, &l);
    if (rc) fail_msg("sl_limiter_create: %s", sl_strerror(rc));
    return l;
}

static sl_reservation reserve(sl_limiter *l, int64_t n, int64_t now) {
    sl_reservation r;
    int rc = sl_limiter_reserve(l, n, now, -1, &r);
    if (rc) fail_msg("sl_limiter_reserve(%lld): %s", (long long)n, sl_strerror(rc));
    assert_true(r.ok);
    return r;
}

/* ---- the seed's example ------------------------------------------------------ */

/* rate.NewLimiter(2, 3): Allow x5, Wait x3 (ctx deadline 2 s), Reserve, Cancel. */
static void seed_example(void **state) {
    (void)state;
    fake_clock fc = {.now = T0};
    sl_clock clk = make_clock(&fc);
    sl_limiter *l = make_limiter(2, SEC, 3, 0, T0);
    const bool want[5] = {true, true, true, false, false};
    for (int i = 0; i < 5; i++) assert_int_equal(sl_limiter_allow(l, 1, T0), want[i]);
    assert_i64(sl_limiter_tokens(l, T0), 0);

    /* Each Wait sleeps until the next token: one every 500 ms. */
    const int64_t deadline = T0 + 2 * SEC;
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(sl_limiter_wait(l, 1, deadline, &clk), SL_OK);
        assert_i64(fc.now, T0 + i * 500 * MS);
        assert_int_equal(fc.sleeps, i);
    }
    /* The third Wait booked the token due at 1.5 s: the bucket is empty. */
    assert_i64(sl_limiter_tokens(l, fc.now), 0);

    /* Reserve: the next token is due in 500 ms. */
    sl_reservation r = reserve(l, 1, fc.now);
    assert_i64(r.tokens, 1);
    assert_i64(r.delay, 500 * MS);
    assert_i64(r.time_to_act, T0 + 2 * SEC);
    assert_i64(sl_limiter_tokens(l, fc.now), -1);

    /* Too slow: cancel. The booked token comes back, which puts the bucket
     * where it was before the Reserve: empty at 1.5 s, the next token due at
     * 2 s. (x/time/rate gives the same: Allow right after Cancel is false.) */
    sl_limiter_cancel(l, &r, fc.now);
    assert_i64(sl_limiter_tokens(l, fc.now), 0);
    assert_false(sl_limiter_allow(l, 1, fc.now));
    assert_false(sl_limiter_allow(l, 1, T0 + 2 * SEC - 1));
    assert_true(sl_limiter_allow(l, 1, T0 + 2 * SEC));
    sl_limiter_destroy(l);

    /* The same run without the Cancel: the token at 2 s is spoken for. */
    fc = (fake_clock){.now = T0};
    l = make_limiter(2, SEC, 3, 0, T0);
    for (int i = 0; i < 5; i++) assert_int_equal(sl_limiter_allow(l, 1, T0), want[i]);
    for (int i = 1; i <= 3; i++) assert_int_equal(sl_limiter_wait(l, 1, deadline, &clk), SL_OK);
    r = reserve(l, 1, fc.now);
    assert_i64(r.delay, 500 * MS);
    assert_false(sl_limiter_allow(l, 1, T0 + 2 * SEC));
    assert_false(sl_limiter_allow(l, 1, T0 + 2500 * MS - 1));
    assert_true(sl_limiter_allow(l, 1, T0 + 2500 * MS));
    sl_limiter_destroy(l);
}

/* ---- deadlines, costs, errors ------------------------------------------------- */

/* The seed's quiz: NewLimiter(1, 1), Allow, then Wait with a 200 ms deadline
 * fails at once: no sleeping, nothing booked. */
static void wait_fails_at_once_beyond_deadline(void **state) {
    (void)state;
    fake_clock fc = {.now = T0};
    sl_clock clk = make_clock(&fc);
    sl_limiter *l = make_limiter(1, SEC, 1, 0, T0);
    assert_true(sl_limiter_allow(l, 1, T0));
    assert_int_equal(sl_limiter_wait(l, 1, T0 + 200 * MS, &clk), SL_EDEADLINE);
    assert_int_equal(fc.sleeps, 0);
    assert_i64(fc.now, T0);
    assert_i64(sl_limiter_tokens(l, T0), 0);
    /* nothing was consumed: the token due at 1 s is still free */
    assert_true(sl_limiter_allow(l, 1, T0 + SEC));
    sl_limiter_destroy(l);

    /* The boundary: a slot exactly at the deadline is fine, 1 ns later is not. */
    l = make_limiter(1, SEC, 1, 0, T0);
    assert_true(sl_limiter_allow(l, 1, T0));
    assert_int_equal(sl_limiter_wait(l, 1, T0 + SEC - 1, &clk), SL_EDEADLINE);
    assert_int_equal(fc.sleeps, 0);
    assert_int_equal(sl_limiter_wait(l, 1, T0 + SEC, &clk), SL_OK);
    assert_int_equal(fc.sleeps, 1);
    assert_i64(fc.now, T0 + SEC);
    /* a deadline already past */
    assert_int_equal(sl_limiter_wait(l, 1, fc.now - 1, &clk), SL_EDEADLINE);
    /* no deadline: waits as long as needed (here 1 s) */
    assert_int_equal(sl_limiter_wait(l, 1, SL_NO_DEADLINE, &clk), SL_OK);
    assert_i64(fc.now, T0 + 2 * SEC);
    assert_int_equal(fc.sleeps, 2);
    /* a token is there: no sleep at all */
    fc.now += 5 * SEC;
    assert_int_equal(sl_limiter_wait(l, 1, fc.now, &clk), SL_OK);
    assert_int_equal(fc.sleeps, 2);
    sl_limiter_destroy(l);
}

static void costs_and_errors(void **state) {
    (void)state;
    fake_clock fc = {.now = T0};
    sl_clock clk = make_clock(&fc);
    sl_limiter *l = make_limiter(1, SEC, 3, 0, T0);
    /* n > burst can never pass */
    assert_false(sl_limiter_allow(l, 4, T0));
    assert_false(sl_limiter_allow(l, -1, T0));
    assert_true(sl_limiter_allow(l, 0, T0));
    sl_reservation r;
    assert_int_equal(sl_limiter_reserve(l, 4, T0, -1, &r), SL_ECOST);
    assert_false(r.ok);
    assert_int_equal(sl_limiter_reserve(l, -1, T0, -1, &r), SL_ECOST);
    assert_false(r.ok);
    assert_int_equal(sl_limiter_wait(l, 4, SL_NO_DEADLINE, &clk), SL_ECOST);
    assert_int_equal(fc.sleeps, 0);
    assert_i64(sl_limiter_tokens(l, T0), 3);
    /* n == 0 and n == burst */
    assert_int_equal(sl_limiter_reserve(l, 0, T0, 0, &r), SL_OK);
    assert_true(r.ok);
    assert_i64(r.delay, 0);
    assert_true(sl_limiter_allow(l, 3, T0));
    /* max_wait: beyond it nothing is booked */
    assert_int_equal(sl_limiter_reserve(l, 2, T0, 2 * SEC - 1, &r), SL_EDEADLINE);
    assert_false(r.ok);
    assert_i64(sl_limiter_tokens(l, T0), 0);
    assert_int_equal(sl_limiter_reserve(l, 2, T0, 2 * SEC, &r), SL_OK);
    assert_true(r.ok);
    assert_i64(r.delay, 2 * SEC);
    assert_i64(r.time_to_act, T0 + 2 * SEC);
    assert_i64(sl_limiter_tokens(l, T0), -2);
    /* a cancel of a reservation that was not booked does nothing */
    sl_reservation none = {.ok = false, .tokens = 2, .time_to_act = T0 + SEC};
    sl_limiter_cancel(l, &none, T0);
    sl_limiter_cancel(l, NULL, T0);
    assert_i64(sl_limiter_tokens(l, T0), -2);
    sl_limiter_destroy(l);

    sl_limiter *bad = NULL;
    assert_int_equal(sl_limiter_create((sl_rate){0, SEC}, 1, 0, T0, &bad), SL_ERATE);
    assert_int_equal(sl_limiter_create((sl_rate){1, 0}, 1, 0, T0, &bad), SL_ERATE);
    assert_int_equal(sl_limiter_create((sl_rate){-1, SEC}, 1, 0, T0, &bad), SL_ERATE);
    assert_int_equal(sl_limiter_create((sl_rate){1, SEC}, 0, 0, T0, &bad), SL_EBURST);
    assert_int_equal(sl_limiter_create((sl_rate){1, SEC}, 1, SL_COUNT_REJECTED, T0, &bad),
                     SL_EINVAL);
    /* burst * period / gcd too large for exact arithmetic */
    assert_int_equal(sl_limiter_create((sl_rate){1, 86400 * SEC}, 1000000000, 0, T0, &bad),
                     SL_EOVERFLOW);
    assert_null(bad);

    /* Start empty: 0 tokens at creation, refilling from there. */
    l = make_limiter(5, SEC, 10, SL_START_EMPTY, T0);
    assert_i64(sl_limiter_tokens(l, T0), 0);
    assert_false(sl_limiter_allow(l, 1, T0));
    assert_i64(sl_limiter_tokens(l, T0 + SEC), 5);
    assert_i64(sl_limiter_tokens(l, T0 + 100 * SEC), 10);
    assert_i64(sl_limiter_burst(l), 10);
    sl_rate rt = sl_limiter_rate(l);
    assert_i64(rt.limit, 5);
    assert_i64(rt.period, SEC);
    sl_limiter_destroy(l);
}

/* Debt is bounded: booking more than 100 years ahead is refused. */
static void reserve_overflow(void **state) {
    (void)state;
    const int64_t fifty_years = INT64_C(50) * 366 * 86400 * SEC;
    sl_limiter *l = make_limiter(1, fifty_years, 1, SL_START_EMPTY, T0);
    sl_reservation r = reserve(l, 1, T0);
    assert_i64(r.delay, fifty_years);
    sl_reservation r2 = reserve(l, 1, T0); /* exactly 100 years: the bound */
    assert_i64(r2.delay, 2 * fifty_years);
    sl_reservation r3;
    int rc = sl_limiter_reserve(l, 1, T0, -1, &r3);
    assert_int_equal(rc, SL_EOVERFLOW);
    assert_false(r3.ok);
    assert_i64(sl_limiter_tokens(l, T0), -2);
    sl_limiter_destroy(l);
}

/* ---- changing rate and burst while in use -------------------------------------- */

static void set_rate_and_burst(void **state) {
    (void)state;
    sl_limiter *l = make_limiter(10, SEC, 10, 0, T0);
    assert_true(sl_limiter_allow(l, 10, T0));
    /* at 250 ms: 2.5 tokens; halve the rate: the 2.5 tokens stay */
    int64_t t = T0 + 250 * MS;
    assert_i64(sl_limiter_tokens(l, t), 2);
    assert_int_equal(sl_limiter_set_rate(l, (sl_rate){5, SEC}, t), SL_OK);
    assert_i64(sl_limiter_tokens(l, t), 2);
    assert_true(sl_limiter_allow(l, 2, t));
    /* 0.5 left; at 5/s the next whole token is exactly 100 ms later */
    assert_false(sl_limiter_allow(l, 1, t + 100 * MS - 1));
    assert_true(sl_limiter_allow(l, 1, t + 100 * MS));
    t += 100 * MS;
    /* additive increase: 6/s; empty now, one token after 1/6 s (rounded up) */
    assert_int_equal(sl_limiter_set_rate(l, (sl_rate){6, SEC}, t), SL_OK);
    assert_false(sl_limiter_allow(l, 1, t + SEC / 6));
    assert_true(sl_limiter_allow(l, 1, t + SEC / 6 + 1));
    t += SEC / 6 + 1;
    /* a smaller burst clamps; a larger one again does not credit */
    t += 10 * SEC;
    assert_i64(sl_limiter_tokens(l, t), 10);
    assert_int_equal(sl_limiter_set_burst(l, 3, t), SL_OK);
    assert_i64(sl_limiter_tokens(l, t), 3);
    assert_i64(sl_limiter_burst(l), 3);
    assert_false(sl_limiter_allow(l, 4, t));
    assert_int_equal(sl_limiter_set_burst(l, 10, t), SL_OK);
    assert_i64(sl_limiter_tokens(l, t), 3);
    assert_i64(sl_limiter_tokens(l, t + SEC), 9);
    assert_i64(sl_limiter_tokens(l, t + 2 * SEC), 10);
    /* errors leave everything as it was */
    assert_int_equal(sl_limiter_set_rate(l, (sl_rate){0, SEC}, t), SL_ERATE);
    assert_int_equal(sl_limiter_set_rate(l, (sl_rate){1, -SEC}, t), SL_ERATE);
    assert_int_equal(sl_limiter_set_burst(l, 0, t), SL_EBURST);
    assert_int_equal(sl_limiter_set_rate(l, (sl_rate){1, INT64_MAX}, t), SL_EOVERFLOW);
    assert_i64(sl_limiter_rate(l).limit, 6);
    assert_i64(sl_limiter_rate(l).period, SEC);
    assert_i64(sl_limiter_burst(l), 10);
    assert_i64(sl_limiter_tokens(l, t), 3);
    sl_limiter_destroy(l);
}

/* A rate change keeps the debt of reservations already made; new ones pay
 * at the new rate. */
static void set_rate_in_debt(void **state) {
    (void)state;
    sl_limiter *l = make_limiter(10, SEC, 1, 0, T0);
    assert_true(sl_limiter_allow(l, 1, T0));
    sl_reservation r1 = reserve(l, 1, T0);
    assert_i64(r1.delay, 100 * MS);
    assert_int_equal(sl_limiter_set_rate(l, (sl_rate){1, SEC}, T0), SL_OK);
    assert_i64(sl_limiter_tokens(l, T0), -1);
    sl_reservation r2 = reserve(l, 1, T0);
    assert_i64(r2.delay, 2 * SEC);
    /* Rescaling a debt rounds toward minus infinity (more debt, never less).
     * 2 per 3 s: one token is 1.5e9 units; at 1 ns the bucket has 1 unit,
     * a reservation leaves 1 - 1.5e9 units. At 1/s that is -(1 - 2/3 ns)
     * tokens: -1e9 units after rounding down (toward zero would be -999999999
     * and credit 2/3 ns). One more token is then exactly 2 s away. */
    sl_limiter *m = make_limiter(2, 3 * SEC, 1, SL_START_EMPTY, T0);
    sl_reservation a = reserve(m, 1, T0 + 1);
    assert_i64(a.delay, 1500 * MS - 1);
    assert_int_equal(sl_limiter_set_rate(m, (sl_rate){1, SEC}, T0 + 1), SL_OK);
    sl_reservation b = reserve(m, 1, T0 + 1);
    assert_i64(b.delay, 2 * SEC);
    sl_limiter_destroy(m);
    sl_limiter_destroy(l);
}

/* AIMD on a random trace: halve the rate on "errors", add 1/s otherwise,
 * sometimes change the burst. A rate or burst change never changes the
 * whole tokens at that instant (except a clamp to a smaller burst), tokens
 * never exceed the burst, and what was admitted never exceeds the largest
 * burst plus the integral of the rate over time. */
static void aimd_trace(void **state) {
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15u;
    int64_t limit = 20, burst = 10;
    sl_limiter *l = make_limiter(limit, SEC, burst, 0, T0);
    int64_t t = T0;
    /* in tokens * 1e9: the initial full bucket plus the refill at each rate */
    __int128 budget = (__int128)burst * SEC;
    __int128 admitted = 0;
    for (int step = 0; step < 20000; step++) {
        int64_t dt = (int64_t)(helper_rand(&x) % (50 * MS));
        budget += (__int128)limit * dt;
        t += dt;
        int64_t before = sl_limiter_tokens(l, t);
        assert_le(before, burst);
        assert_le(0, before);
        uint64_t op = helper_rand(&x) % 10;
        if (op < 6) {
            int64_t n = 1 + (int64_t)(helper_rand(&x) % (uint64_t)burst);
            bool ok = sl_limiter_allow(l, n, t);
            assert_int_equal(ok, before >= n);
            if (ok) admitted += (__int128)n * SEC;
        } else if (op < 9) {
            limit = op == 6 ? (limit / 2 > 0 ? limit / 2 : 1) : limit + 1;
            assert_int_equal(sl_limiter_set_rate(l, (sl_rate){limit, SEC}, t), SL_OK);
            assert_i64(sl_limiter_tokens(l, t), before);
        } else {
            burst = 1 + (int64_t)(helper_rand(&x) % 40); /* more room, never more tokens */
            assert_int_equal(sl_limiter_set_burst(l, burst, t), SL_OK);
            assert_i64(sl_limiter_tokens(l, t), before < burst ? before : burst);
        }
        if (admitted > budget)
            fail_msg("step %d: admitted %lld token-ns > budget %lld", step, (long long)admitted,
                     (long long)budget);
    }
    sl_limiter_destroy(l);
}

/* ---- clocks going backwards ---------------------------------------------------- */

static void clock_backwards_credits_nothing(void **state) {
    (void)state;
    const int64_t B = T0 + 10 * SEC;
    sl_limiter *l = make_limiter(1, SEC, 2, 0, B);
    assert_true(sl_limiter_allow(l, 2, B));
    assert_false(sl_limiter_allow(l, 1, B - 5 * SEC));
    assert_i64(sl_limiter_tokens(l, B - 5 * SEC), 0);
    /* had `last` gone back to B - 5 s, this would find 5.999 tokens */
    assert_false(sl_limiter_allow(l, 1, B + SEC - 1));
    assert_true(sl_limiter_allow(l, 1, B + SEC));
    sl_limiter_destroy(l);

    /* Full, a take at an earlier time, then half a second after the latest. */
    l = make_limiter(1, SEC, 2, 0, B);
    assert_true(sl_limiter_allow(l, 1, B - 5 * SEC));
    assert_i64(sl_limiter_tokens(l, B + 500 * MS), 1);
    assert_false(sl_limiter_allow(l, 2, B + 500 * MS));
    assert_true(sl_limiter_allow(l, 2, B + SEC));
    sl_limiter_destroy(l);

    /* A rate or burst change at an earlier time does not move `last` back. */
    l = make_limiter(1, SEC, 2, 0, B);
    assert_true(sl_limiter_allow(l, 2, B));
    assert_int_equal(sl_limiter_set_rate(l, (sl_rate){2, SEC}, B - 5 * SEC), SL_OK);
    assert_int_equal(sl_limiter_set_burst(l, 3, B - 4 * SEC), SL_OK);
    assert_i64(sl_limiter_tokens(l, B), 0);
    assert_false(sl_limiter_allow(l, 1, B + 500 * MS - 1));
    assert_true(sl_limiter_allow(l, 1, B + 500 * MS));
    /* a cancel at an earlier time restores only what was booked */
    sl_reservation r = reserve(l, 1, B + 500 * MS);
    assert_i64(r.delay, 500 * MS);
    sl_limiter_cancel(l, &r, B - 3 * SEC);
    assert_i64(sl_limiter_tokens(l, B + 500 * MS), 0);
    assert_true(sl_limiter_allow(l, 1, B + SEC));
    sl_limiter_destroy(l);
}

/* A wait booked at an earlier time than the latest seen (another thread's
 * clock reading was newer) counts from the latest: its slot never comes
 * before its tokens exist. This is what let 321 of 320 slots through in
 * test_concurrency's limiter_threads. */
static void wait_booked_at_an_older_now(void **state) {
    (void)state;
    const int64_t B = T0 + 10 * SEC;
    sl_limiter *l = make_limiter(1000, SEC, 1, 0, B); /* one token a ms */
    assert_true(sl_limiter_allow(l, 1, B + 5 * MS));  /* last = B + 5 ms, empty */
    sl_reservation r = reserve(l, 1, B);              /* a reading 5 ms older */
    assert_i64(r.time_to_act, B + 6 * MS);            /* not B + 1 ms */
    assert_i64(r.delay, 6 * MS);
    /* and the deadline counts the same wait */
    sl_reservation q;
    assert_int_equal(sl_limiter_reserve(l, 1, B + MS, 5 * MS, &q), SL_EDEADLINE);
    assert_int_equal(sl_limiter_reserve(l, 1, B + MS, 6 * MS, &q), SL_OK);
    assert_i64(q.time_to_act, B + 7 * MS);
    /* a take that needs no wait takes the tokens that are there, and its
     * slot is the latest time seen (issue 15, S3); allow takes them too */
    sl_limiter_destroy(l);
    l = make_limiter(1000, SEC, 3, 0, B);
    assert_true(sl_limiter_allow(l, 1, B + 5 * MS));
    r = reserve(l, 1, B);
    assert_i64(r.delay, 5 * MS);
    assert_i64(r.time_to_act, B + 5 * MS);
    assert_true(sl_limiter_allow(l, 1, B));
    assert_false(sl_limiter_allow(l, 1, B));
    sl_limiter_destroy(l);
}

/* allow(0) is a peek: true even while in debt (x/time/rate says false
 * there), and it books nothing (library.md's differences). */
static void allow_zero_in_debt_is_true(void **state) {
    (void)state;
    sl_limiter *l = make_limiter(1, SEC, 1, 0, T0);
    reserve(l, 1, T0);
    sl_reservation r = reserve(l, 1, T0); /* one token of debt */
    assert_i64(r.time_to_act, T0 + SEC);
    assert_i64(sl_limiter_tokens(l, T0), -1);
    assert_true(sl_limiter_allow(l, 0, T0));
    assert_true(sl_limiter_allow(l, 0, T0 + SEC / 2));
    assert_i64(sl_limiter_tokens(l, T0 + SEC / 2), -1); /* nothing booked */
    assert_false(sl_limiter_allow(l, 1, T0 + 2 * SEC - 1));
    assert_true(sl_limiter_allow(l, 1, T0 + 2 * SEC));
    sl_limiter_destroy(l);
}

/* ---- cancel ---------------------------------------------------------------------- */

static void cancel_after_time_to_act_is_noop(void **state) {
    (void)state;
    sl_limiter *l = make_limiter(1, SEC, 1, 0, T0);
    assert_true(sl_limiter_allow(l, 1, T0));
    sl_reservation r = reserve(l, 1, T0);
    assert_i64(r.time_to_act, T0 + SEC);
    sl_limiter_cancel(l, &r, T0 + SEC); /* its time has come: the token is used */
    assert_i64(sl_limiter_tokens(l, T0 + SEC), 0);
    assert_false(sl_limiter_allow(l, 1, T0 + SEC));
    sl_limiter_cancel(l, &r, T0 + 1500 * MS);
    assert_false(sl_limiter_allow(l, 1, T0 + 2 * SEC - 1));
    assert_true(sl_limiter_allow(l, 1, T0 + 2 * SEC));
    sl_limiter_destroy(l);
    /* a reservation with no wait cannot be cancelled either */
    l = make_limiter(1, SEC, 1, 0, T0);
    r = reserve(l, 1, T0);
    assert_i64(r.delay, 0);
    sl_limiter_cancel(l, &r, T0);
    assert_i64(sl_limiter_tokens(l, T0), 0);
    sl_limiter_destroy(l);
}

/* x/time/rate's rule: cancelling r restores r.tokens minus the tokens that
 * reservations made after r count on, (last_event - r.time_to_act) * rate. */
static void cancel_with_later_reservations(void **state) {
    (void)state;
    /* 1/s, burst 3, emptied; r1 books 2 (due at 2 s), r2 books 1 (due at 3 s) */
    sl_limiter *l = make_limiter(1, SEC, 3, 0, T0);
    assert_true(sl_limiter_allow(l, 3, T0));
    sl_reservation r1 = reserve(l, 2, T0), r2 = reserve(l, 1, T0);
    assert_i64(r1.time_to_act, T0 + 2 * SEC);
    assert_i64(r2.time_to_act, T0 + 3 * SEC);
    assert_i64(sl_limiter_tokens(l, T0), -3);
    /* cancelling r1: r2 counts on 1 s worth (1 token) of it; 1 comes back */
    sl_limiter_cancel(l, &r1, T0);
    assert_i64(sl_limiter_tokens(l, T0), -2);
    sl_reservation r3 = reserve(l, 1, T0);
    assert_i64(r3.time_to_act, T0 + 3 * SEC);
    sl_limiter_destroy(l);

    /* The other order: r2 first gives back its token and moves last_event
     * back to r1's time, then r1 gives back both of its tokens. */
    l = make_limiter(1, SEC, 3, 0, T0);
    assert_true(sl_limiter_allow(l, 3, T0));
    r1 = reserve(l, 2, T0);
    r2 = reserve(l, 1, T0);
    sl_limiter_cancel(l, &r2, T0);
    assert_i64(sl_limiter_tokens(l, T0), -2);
    sl_limiter_cancel(l, &r1, T0);
    assert_i64(sl_limiter_tokens(l, T0), 0);
    assert_true(sl_limiter_allow(l, 1, T0 + SEC));
    sl_limiter_destroy(l);

    /* A later reservation that counts on all of r1: nothing comes back. */
    l = make_limiter(2, SEC, 1, 0, T0);
    assert_true(sl_limiter_allow(l, 1, T0));
    r1 = reserve(l, 1, T0);
    r2 = reserve(l, 1, T0);
    assert_i64(r1.time_to_act, T0 + 500 * MS);
    assert_i64(r2.time_to_act, T0 + SEC);
    sl_limiter_cancel(l, &r1, T0 + 100 * MS);
    assert_i64(sl_limiter_tokens(l, T0 + 100 * MS), -2); /* floor(-1.8) */
    assert_i64(sl_limiter_tokens(l, T0 + SEC), 0);
    sl_limiter_destroy(l);

    /* Partly: r2 was booked later in time, counting on part of r1. */
    l = make_limiter(1, SEC, 2, SL_START_EMPTY, T0);
    r1 = reserve(l, 2, T0);
    assert_i64(r1.time_to_act, T0 + 2 * SEC);
    r2 = reserve(l, 1, T0 + SEC);
    assert_i64(r2.time_to_act, T0 + 3 * SEC);
    sl_limiter_cancel(l, &r1, T0 + 1500 * MS);            /* 2 - (3 s - 2 s) * 1/s = 1 back */
    assert_i64(sl_limiter_tokens(l, T0 + 1500 * MS), -1); /* floor(-0.5) */
    assert_i64(sl_limiter_tokens(l, T0 + 2 * SEC), 0);
    assert_i64(sl_limiter_tokens(l, T0 + 3 * SEC), 1);
    sl_limiter_destroy(l);
}

/* Cancelling the same reservation again must not give back tokens it never
 * took (the first cancel moved last_event back, so the x/time/rate formula
 * would now "restore" more than r.tokens). */
static void cancel_twice_restores_once(void **state) {
    (void)state;
    sl_limiter *l = make_limiter(1, SEC, 3, 0, T0);
    assert_true(sl_limiter_allow(l, 3, T0));
    sl_reservation r = reserve(l, 1, T0);
    assert_i64(sl_limiter_tokens(l, T0), -1);
    sl_limiter_cancel(l, &r, T0);
    int64_t once = sl_limiter_tokens(l, T0);
    sl_limiter_cancel(l, &r, T0);
    int64_t twice = sl_limiter_tokens(l, T0);
    sl_limiter_destroy(l);
    assert_i64(once, 0);
    assert_i64(twice, 0);
}

/* ---- issue 15: S1-S4, each the minimal case found on random traces ---------- */

/* S1: cancel counts the span of later reservations at the rate r was booked
 * at, not the current one. 10/s burst 1: r0, r1 (+100 ms), r2 (+200 ms),
 * set_rate 1/s, cancel r1: r2 counts on all of r1 (100 ms at 10/s), so
 * nothing comes back and the next token is 3 s away (2.1 s before). */
static void s1_cancel_uses_the_booking_rate(void **state) {
    (void)state;
    sl_limiter *l = make_limiter(10, SEC, 1, 0, T0);
    reserve(l, 1, T0);
    sl_reservation r1 = reserve(l, 1, T0);
    sl_reservation r2 = reserve(l, 1, T0);
    assert_i64(r1.time_to_act, T0 + 100 * MS);
    assert_i64(r2.time_to_act, T0 + 200 * MS);
    assert_int_equal(sl_limiter_set_rate(l, (sl_rate){1, SEC}, T0), SL_OK);
    sl_limiter_cancel(l, &r1, T0);
    sl_reservation r3 = reserve(l, 1, T0);
    assert_i64(r3.delay, 3 * SEC);
    sl_limiter_destroy(l);
}

/* S2: last_event is the most recent reservation's slot, not the latest
 * one. 1/s burst 1: r0, r1 (+1 s), set_rate 10/s, r2 (+200 ms), cancel r2:
 * no reservation came after r2, so its token comes back (nothing before). */
static void s2_last_event_is_the_most_recent(void **state) {
    (void)state;
    sl_limiter *l = make_limiter(1, SEC, 1, 0, T0);
    reserve(l, 1, T0);
    sl_reservation r1 = reserve(l, 1, T0);
    assert_i64(r1.time_to_act, T0 + SEC);
    assert_int_equal(sl_limiter_set_rate(l, (sl_rate){10, SEC}, T0), SL_OK);
    sl_reservation r2 = reserve(l, 1, T0);
    assert_i64(r2.time_to_act, T0 + 200 * MS);
    sl_limiter_cancel(l, &r2, T0);
    sl_reservation r3 = reserve(l, 1, T0);
    assert_i64(r3.delay, 200 * MS); /* 300 ms before */
    sl_limiter_destroy(l);
}

/* S3: a reading older than the last update is timed as of that update,
 * also when no wait is needed: 1/s burst 1, r0 at 0, a burst change at 1 s
 * (the bucket is full again there), then a reservation read at 0: its slot
 * is 1 s, not 0 (two events at 0 with burst 1 before). allow at an old
 * reading still takes the tokens that are there (as the table does). */
static void s3_older_reading_timed_from_last(void **state) {
    (void)state;
    sl_limiter *l = make_limiter(1, SEC, 1, 0, T0);
    sl_reservation r0 = reserve(l, 1, T0);
    assert_i64(r0.time_to_act, T0);
    assert_int_equal(sl_limiter_set_burst(l, 1, T0 + SEC), SL_OK);
    sl_reservation r1 = reserve(l, 1, T0);
    assert_i64(r1.time_to_act, T0 + SEC);
    assert_i64(r1.delay, SEC);
    sl_reservation q;
    assert_int_equal(sl_limiter_reserve(l, 1, T0, 2 * SEC - 1, &q), SL_EDEADLINE);
    assert_int_equal(sl_limiter_reserve(l, 1, T0, 2 * SEC, &q), SL_OK);
    assert_i64(q.time_to_act, T0 + 2 * SEC);
    sl_limiter_destroy(l);

    l = make_limiter(1, SEC, 1, 0, T0);
    assert_true(sl_limiter_allow(l, 1, T0));
    assert_int_equal(sl_limiter_set_rate(l, (sl_rate){1, SEC}, T0 + SEC), SL_OK);
    assert_true(sl_limiter_allow(l, 1, T0)); /* the token is there as of T0 + 1 s */
    assert_false(sl_limiter_allow(l, 1, T0 + SEC));
    sl_limiter_destroy(l);
}

/* S4: the debt is bounded by 100 years of waiting only, whatever the
 * scaled size: 1/year burst 10, reserving 10 at a time, the 9th reservation
 * waits 80 years (refused before), the 11th 100, the 12th is refused. */
static void s4_debt_bound_is_100_years(void **state) {
    (void)state;
    const int64_t year = INT64_C(365) * 86400 * SEC;
    sl_limiter *l = make_limiter(1, year, 10, 0, T0);
    for (int i = 1; i <= 11; i++) {
        sl_reservation r = reserve(l, 10, T0);
        assert_i64(r.delay, (int64_t)(i - 1) * 10 * year);
    }
    sl_reservation r;
    assert_int_equal(sl_limiter_reserve(l, 10, T0, -1, &r), SL_EOVERFLOW);
    assert_false(r.ok);
    assert_i64(sl_limiter_tokens(l, T0), -100);
    sl_limiter_destroy(l);
}

/* ---- exact rates --------------------------------------------------------------- */

/* ceil(k * 2 s / 41) without overflow */
static int64_t kth_token(int64_t k) {
    return (int64_t)(((__int128)k * 2 * SEC + 40) / 41);
}

static void exact_fractional_rates(void **state) {
    (void)state;
    /* 41 per 2 s = 20.5/s: the k-th token arrives at exactly k * 2 s / 41
     * (the burst is large, so no fraction is lost to a full bucket) */
    sl_limiter *l = make_limiter(41, 2 * SEC, 1000000, SL_START_EMPTY, T0);
    for (int64_t k = 1; k <= 20000; k++) {
        int64_t at = T0 + kth_token(k);
        if (sl_limiter_allow(l, 1, at - 1) || !sl_limiter_allow(l, 1, at))
            fail_msg("token %lld not exactly at %lld ns", (long long)k, (long long)kth_token(k));
    }
    sl_limiter_destroy(l);

    l = make_limiter(41, 2 * SEC, 100000, SL_START_EMPTY, T0);
    assert_i64(sl_limiter_tokens(l, T0 + 2 * SEC), 41);
    assert_i64(sl_limiter_tokens(l, T0 + 2 * SEC - 1), 40);
    assert_i64(sl_limiter_tokens(l, T0 + 2000 * SEC), 41000);
    assert_i64(sl_limiter_tokens(l, T0 + 2000 * SEC - 1), 40999);
    sl_reservation r = reserve(l, 1, T0);
    assert_i64(r.delay, kth_token(1)); /* 48780488 ns, rounded up */
    sl_limiter_destroy(l);

    l = make_limiter(41, 2 * SEC, 41, SL_START_EMPTY, T0);
    r = reserve(l, 41, T0);
    assert_i64(r.delay, 2 * SEC);
    sl_limiter_destroy(l);

    /* 1 per 3 ns */
    l = make_limiter(1, 3, 1000, SL_START_EMPTY, T0);
    assert_i64(sl_limiter_tokens(l, T0 + 2999), 999);
    assert_i64(sl_limiter_tokens(l, T0 + 3000), 1000);
    sl_limiter_destroy(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_example),
        cmocka_unit_test(wait_fails_at_once_beyond_deadline),
        cmocka_unit_test(costs_and_errors),
        cmocka_unit_test(reserve_overflow),
        cmocka_unit_test(set_rate_and_burst),
        cmocka_unit_test(set_rate_in_debt),
        cmocka_unit_test(aimd_trace),
        cmocka_unit_test(clock_backwards_credits_nothing),
        cmocka_unit_test(wait_booked_at_an_older_now),
        cmocka_unit_test(cancel_after_time_to_act_is_noop),
        cmocka_unit_test(allow_zero_in_debt_is_true),
        cmocka_unit_test(cancel_with_later_reservations),
        cmocka_unit_test(cancel_twice_restores_once),
        cmocka_unit_test(exact_fractional_rates),
        cmocka_unit_test(s1_cancel_uses_the_booking_rate),
        cmocka_unit_test(s2_last_event_is_the_most_recent),
        cmocka_unit_test(s3_older_reading_timed_from_last),
        cmocka_unit_test(s4_debt_bound_is_100_years),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
