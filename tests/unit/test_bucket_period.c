/* test_bucket_period.c: the longest periods the docs promise (issue 12 item
 * 17). docs/configuration.md and docs/semantics.md said every rate may have
 * a period up to 36600d, but a bucket keeps burst x period / gcd in 64 bits
 * (at most 2^61 ns), so `1/36600d` is refused for a bucket. The docs now give
 * the buckets' bound, 26687d at burst 1; this test holds the code to those
 * numbers, and sluiced's message for a refused bucket period to naming them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "policy/config.h"
#include "sluice/sluice.h"

#define DAY (86400 * SL_NS_PER_SEC)

static const sl_algorithm buckets[] = {SL_TOKEN_BUCKET, SL_GCRA, SL_LEAKY_QUEUE};
static const sl_algorithm windows[] = {SL_FIXED_WINDOW, SL_SLIDING_WINDOW, SL_SLIDING_LOG};

static int validate(sl_algorithm alg, int64_t limit, int64_t period, int64_t burst) {
    sl_params p = {.algorithm = alg, .rate = {limit, period}, .burst = burst};
    return sl_params_validate(&p);
}

static void documented_bounds(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        /* windows: any period up to 36600 days */
        assert_int_equal(validate(windows[i], 1, 36600 * DAY, 0), SL_OK);
        assert_int_equal(validate(windows[i], 1, 36600 * DAY + 1, 0), SL_EOVERFLOW);
        /* buckets at burst 1: up to 26687 days (2^61 ns is 26687.99 days) */
        assert_int_equal(validate(buckets[i], 1, 26687 * DAY, 1), SL_OK);
        assert_int_equal(validate(buckets[i], 1, INT64_C(1) << 61, 1), SL_OK);
        assert_int_equal(validate(buckets[i], 1, (INT64_C(1) << 61) + 1, 1), SL_EOVERFLOW);
        assert_int_equal(validate(buckets[i], 1, 26688 * DAY, 1), SL_EOVERFLOW);
        assert_int_equal(validate(buckets[i], 1, 36600 * DAY, 1), SL_EOVERFLOW);
        /* a larger burst shortens it; a limit sharing factors lengthens nothing
         * past 36600d, but divides the period first */
        assert_int_equal(validate(buckets[i], 1, 13343 * DAY, 2), SL_OK);
        assert_int_equal(validate(buckets[i], 1, 13344 * DAY, 2), SL_EOVERFLOW);
        assert_int_equal(validate(buckets[i], 2, 36600 * DAY, 1), SL_OK); /* p = 18300d */
    }
}

static void config_message_names_the_bucket_bound(void **state) {
    (void)state;
    static const char text[] = "policies:\n"
                               "  - name: a\n"
                               "    algorithm: token_bucket\n"
                               "    rate: 1/36600d\n"
                               "    burst: 1\n"
                               "  - name: b\n"
                               "    algorithm: fixed_window\n"
                               "    rate: 1/36600d\n"
                               "  - name: c\n"
                               "    algorithm: gcra\n"
                               "    rate: 1/26687d\n"
                               "    burst: 1\n";
    sl__config *c = NULL;
    static sl__config_errors e;
    assert_int_equal(sl__config_parse(text, sizeof text - 1, "t.yaml", &c, &e), SL_EPARSE);
    assert_null(c);
    for (size_t i = 0; i < e.n && i < SL__CONFIG_MAX_ERRORS; i++) print_message("  %s\n", e.msg[i]);
    assert_int_equal(e.n, 1); /* only the bucket of 36600d */
    assert_non_null(strstr(e.msg[0], "t.yaml:4: policies[0].rate: 1/36600d"));
    assert_non_null(strstr(e.msg[0], "26687d"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(documented_bounds),
        cmocka_unit_test(config_message_names_the_bucket_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
