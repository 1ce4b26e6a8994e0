/* test_units.c: the shared integer primitives of src/util/units.h: a
 * duration rounded up to ms or s (0 and negatives count as none, no
 * overflow at INT64_MAX) and decimal formatting at the edges of int64 and
 * uint64, at every length (each power of ten and its neighbours) and on
 * random values against snprintf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "sluice/limit.h"
#include "util/units.h"

static void ceil_rounds_up(void **state) {
    (void)state;
    assert_int_equal(sl__ceil_ms(0), 0);
    assert_int_equal(sl__ceil_ms(-1), 0);
    assert_int_equal(sl__ceil_ms(INT64_MIN), 0);
    assert_int_equal(sl__ceil_ms(1), 1);
    assert_int_equal(sl__ceil_ms(SL_NS_PER_MS), 1);
    assert_int_equal(sl__ceil_ms(SL_NS_PER_MS + 1), 2);
    assert_int_equal(sl__ceil_s(1), 1);
    assert_int_equal(sl__ceil_s(SL_NS_PER_SEC), 1);
    assert_int_equal(sl__ceil_s(SL_NS_PER_SEC + 1), 2);
    assert_int_equal(sl__ceil_s(3 * SL_NS_PER_SEC - 1), 3);
    /* (ns + unit - 1) / unit would overflow here */
    assert_int_equal(sl__ceil_s(INT64_MAX), INT64_MAX / SL_NS_PER_SEC + 1);
    assert_int_equal(sl__ceil_units(INT64_MAX, 1), INT64_MAX);
    assert_int_equal(sl__ceil_units(999, 1000), 1);
}

static void check(size_t (*f)(char *, uint64_t), uint64_t v, const char *want) {
    char buf[SL__DECIMAL_MAX + 1];
    size_t n = f(buf, v);
    assert_true(n <= SL__DECIMAL_MAX);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void checki(int64_t v, const char *want) {
    char buf[SL__DECIMAL_MAX + 1];
    size_t n = sl__decimal_i64(buf, v);
    assert_true(n <= SL__DECIMAL_MAX);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void decimal_edges(void **state) {
    (void)state;
    check(sl__decimal_u64, 0, "0");
    check(sl__decimal_u64, 9, "9");
    check(sl__decimal_u64, 10, "10");
    check(sl__decimal_u64, UINT64_MAX, "18446744073709551615");
    checki(0, "0");
    checki(-1, "-1");
    checki(1234567890, "1234567890");
    checki(INT64_MAX, "9223372036854775807");
    checki(INT64_MIN, "-9223372036854775808");
}

/* Each length of the writer's digit count: 10^k - 1, 10^k, 10^k + 1, and
 * random values of every bit length, against printf's. */
static void decimal_lengths(void **state) {
    (void)state;
    char want[32];
    uint64_t p = 1, x = UINT64_C(0x9e3779b97f4a7c15);
    for (int k = 0; k < 20; k++, p *= 10) {
        uint64_t around[3] = {p - 1, p, p + 1};
        for (int i = 0; i < 3; i++) {
            snprintf(want, sizeof want, "%llu", (unsigned long long)around[i]);
            check(sl__decimal_u64, around[i], want);
        }
    }
    for (int i = 0; i < 64 * 200; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t v = x >> (i % 64);
        snprintf(want, sizeof want, "%llu", (unsigned long long)v);
        check(sl__decimal_u64, v, want);
        snprintf(want, sizeof want, "%lld", (long long)(int64_t)v);
        checki((int64_t)v, want);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ceil_rounds_up),
        cmocka_unit_test(decimal_edges),
        cmocka_unit_test(decimal_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
