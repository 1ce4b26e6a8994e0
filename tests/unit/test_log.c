/* test_log.c: the budget of sl__log_limited (src/util/log.c), the log of
 * lines that clients can cause (shadow mode's would-be refusals, issue 12
 * item 15): at most SL__LOG_LIMITED_PER_SEC lines in one second of the
 * caller's clock, the first line after a drop says how many were dropped, a
 * clock that goes back opens no new second, and lines below the level are
 * neither written nor counted. stderr is redirected to a file and read back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "helpers.h"

#define T0 (INT64_C(1764620000) * SEC)

static char path[64];
static int saved = -1;

/* Redirects stderr to a fresh file. */
static void capture(void) {
    snprintf(path, sizeof path, "/tmp/sluice-test-log-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    saved = dup(STDERR_FILENO);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    close(fd);
}

/* Restores stderr; returns what was written (free it). */
static char *captured(void) {
    dup2(saved, STDERR_FILENO);
    close(saved);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(path);
    return strdup(buf);
}

static int lines_with(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static void test_budget(void **state) {
    (void)state;
    sl__log_set_level(SL__LOG_INFO);
    capture();
    for (int i = 0; i < 15; i++) sl__log_limited(T0 + i, SL__LOG_INFO, "flood %d", i);
    /* the next second: one line, saying that 5 were dropped */
    sl__log_limited(T0 + SEC, SL__LOG_INFO, "next");
    /* the clock goes back: still the same second (9 lines left in it) */
    for (int i = 0; i < 12; i++) sl__log_limited(T0 - SEC, SL__LOG_INFO, "back %d", i);
    /* below the level: neither written nor counted as dropped */
    sl__log_set_level(SL__LOG_WARN);
    for (int i = 0; i < 5; i++) sl__log_limited(T0 + 2 * SEC, SL__LOG_INFO, "quiet");
    sl__log_limited(T0 + 2 * SEC, SL__LOG_WARN, "warned");
    sl__log_set_level(SL__LOG_INFO);
    char *out = captured();
    assert_int_equal(lines_with(out, " flood "), SL__LOG_LIMITED_PER_SEC);
    assert_non_null(strstr(out, "flood 9\n"));
    assert_null(strstr(out, "flood 10"));
    assert_non_null(strstr(out, "info  next (5 similar lines before this one not logged)\n"));
    assert_int_equal(lines_with(out, " back "), SL__LOG_LIMITED_PER_SEC - 1);
    assert_null(strstr(out, "quiet"));
    assert_non_null(strstr(out, "warn  warned (3 similar lines before this one not logged)\n"));
    assert_int_equal(lines_with(out, "\n"), 2 * SL__LOG_LIMITED_PER_SEC + 1);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
