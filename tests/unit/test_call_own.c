/* test_call_own.c: sl__decide_call_new_own (policy/decide.h): the caller's own
 * first bytes of a call's user area are left as they are (a domain call writes
 * its state at once, and no longer pays for zeroing 10 KiB per request), the
 * rest is zeroed even in a call reused from the thread's cache, and `own` past
 * the user bytes is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "policy/decide.h"

static sl_decide_limit lim;

static sl_decide_call *one(size_t user, size_t own) {
    sl_decide_item it = {.limit = &lim, .key = "k", .keylen = 1, .cost = 1};
    return own == SIZE_MAX ? sl__decide_call_new(&it, 1, NULL, NULL, user)
                           : sl__decide_call_new_own(&it, 1, NULL, NULL, user, own);
}

static void test_own_bytes(void **state) {
    (void)state;
    enum { USER = 4096, OWN = 3000 };
    /* dirty calls go back to the cache */
    sl_decide_call *c[4];
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
    sl_decide_call *z = one(USER, SIZE_MAX);
    const unsigned char *u = sl__decide_call_user(z);
    for (size_t k = 0; k < USER; k++) assert_int_equal(u[k], 0);
    sl__decide_call_free(z);
    assert_null(one(16, 17));
    sl_decide_call *all = one(16, 16);
    assert_non_null(all);
    sl__decide_call_free(all);
}

int main(void) {
    sl__decide_limit_init(&lim, false);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_own_bytes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
