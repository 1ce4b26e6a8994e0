/* test_sim_trace.c: the simulator's traces: CSV parsing (exact times, the
 * original time text kept, defaults, header and comments, stable sorting),
 * every error with its file:line, the bounds, and the built-in traces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/trace.h"
#include "helpers.h"

static int parse(const char *text, sl__cli_trace *t, char *err, size_t errlen) {
    return sl__cli_trace_parse("t.csv", text, strlen(text), t, err, errlen);
}

static void parses_fields_defaults_and_exact_times(void **state) {
    (void)state;
    const char *text = "# a comment\n"
                       "\n"
                       "time,key,cost\n"
                       "0.250,alice,2\n"
                       "  1.50 ,  bob  \r\n"
                       "3\n"
                       "0.000000001,alice,0\n"
                       "1000000,z,1000000000";
    sl__cli_trace t;
    char err[256];
    assert_int_equal(parse(text, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 5);
    assert_int_equal(t.nkeys, 4); /* alice, bob, k, z */
    /* sorted by time */
    assert_int_equal(t.reqs[0].t, 1);
    assert_string_equal(t.reqs[0].text, "0.000000001");
    assert_int_equal(t.reqs[0].cost, 0);
    assert_int_equal(t.reqs[1].t, 250000000);
    assert_string_equal(t.reqs[1].text, "0.250");
    assert_string_equal(t.keys[t.reqs[1].key], "alice");
    assert_int_equal(t.reqs[1].cost, 2);
    assert_int_equal(t.reqs[1].line, 4);
    assert_int_equal(t.reqs[2].t, 1500000000);
    assert_string_equal(t.reqs[2].text, "1.50"); /* exactly as written, blanks trimmed */
    assert_string_equal(t.keys[t.reqs[2].key], "bob");
    assert_int_equal(t.reqs[2].cost, 1);
    assert_int_equal(t.reqs[3].t, 3 * SEC);
    assert_string_equal(t.keys[t.reqs[3].key], "k");
    assert_int_equal(t.reqs[4].t, TRACE_MAX_TIME);
    assert_int_equal(t.reqs[4].cost, TRACE_MAX_COST);
    sl__cli_trace_free(&t);
}

static void sorts_stably(void **state) {
    (void)state;
    const char *text = "2,a\n1,b\n2,c\n1,d\n0.5,e\n2,f\n";
    sl__cli_trace t;
    char err[256];
    assert_int_equal(parse(text, &t, err, sizeof err), 0);
    const char *want[] = {"e", "b", "d", "a", "c", "f"};
    for (int i = 0; i < 6; i++) assert_string_equal(t.keys[t.reqs[i].key], want[i]);
    assert_int_equal(t.reqs[3].line, 1);
    assert_int_equal(t.reqs[4].line, 3);
    sl__cli_trace_free(&t);
}

static void short_headers(void **state) {
    (void)state;
    sl__cli_trace t;
    char err[256];
    assert_int_equal(parse("time\n1\n", &t, err, sizeof err), 0);
    assert_int_equal(t.n, 1);
    sl__cli_trace_free(&t);
    assert_int_equal(parse("#x\ntime,key\n1,a\n", &t, err, sizeof err), 0);
    assert_int_equal(t.n, 1);
    sl__cli_trace_free(&t);
    /* a header is only a header on the first line with data */
    assert_int_equal(parse("1\ntime,key,cost\n", &t, err, sizeof err), SL_EPARSE);
    assert_string_equal(err, "t.csv:2: time 'time': not a number (expected seconds such as 0.250)");
}

static void errors_say_file_and_line(void **state) {
    (void)state;
    static const struct {
        const char *text, *err;
    } cases[] = {
        {"1\n-0.5\n", "t.csv:2: time '-0.5': negative (expected seconds such as 0.250)"},
        {"0.1234567891\n",
         "t.csv:1: time '0.1234567891': more than 9 decimal places (expected seconds such as "
         "0.250)"},
        {"abc\n", "t.csv:1: time 'abc': not a number (expected seconds such as 0.250)"},
        {"1.\n", "t.csv:1: time '1.': not a number (expected seconds such as 0.250)"},
        {".5\n", "t.csv:1: time '.5': not a number (expected seconds such as 0.250)"},
        {"1e3\n", "t.csv:1: time '1e3': not a number (expected seconds such as 0.250)"},
        {"+1\n", "t.csv:1: time '+1': not a number (expected seconds such as 0.250)"},
        {"1000000.000000001\n",
         "t.csv:1: time '1000000.000000001': beyond 1000000 s (expected seconds such as 0.250)"},
        {"99999999999999999999999\n",
         "t.csv:1: time '99999999999999999999999': beyond 1000000 s (expected seconds such as "
         "0.250)"},
        {",a\n", "t.csv:1: time '': empty (expected seconds such as 0.250)"},
        {"1,a,2,3\n", "t.csv:1: too many fields (expected time[,key[,cost]])"},
        {"1,a,x\n", "t.csv:1: cost 'x': not a number (expected a whole number)"},
        {"1,a,1.5\n", "t.csv:1: cost '1.5': not a whole number (expected a whole number)"},
        {"1,a,-1\n", "t.csv:1: cost '-1': negative (expected a whole number)"},
        {"1,a,1000000001\n",
         "t.csv:1: cost '1000000001': above 1000000000 (expected a whole number)"},
        {"1,a,\n", "t.csv:1: cost '': empty (expected a whole number)"},
        {"1,a b\n", "t.csv:1: key may only hold visible ASCII characters other than '\"' and ','"},
        {"1,\"a\"\n",
         "t.csv:1: key may only hold visible ASCII characters other than '\"' and ','"},
        {"# only comments\n\n", "t.csv: no requests in the trace"},
        {"", "t.csv: no requests in the trace"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl__cli_trace t;
        char err[256] = "";
        /* a bad line is SL_EPARSE, a file without requests SL_EINVAL */
        int want = strstr(cases[i].err, "no requests") ? SL_EINVAL : SL_EPARSE;
        assert_int_equal(parse(cases[i].text, &t, err, sizeof err), want);
        assert_string_equal(err, cases[i].err);
        assert_null(t.reqs); /* nothing left allocated */
    }
}

static void nul_byte_and_long_lines(void **state) {
    (void)state;
    sl__cli_trace t;
    char err[256];
    assert_int_equal(sl__cli_trace_parse("t.csv", "1\n2\0\n", 5, &t, err, sizeof err), SL_EPARSE);
    assert_string_equal(err, "t.csv:2: NUL byte in line");

    char line[TRACE_MAX_LINE + 8];
    memset(line, ' ', sizeof line);
    memcpy(line, "1", 1);
    line[TRACE_MAX_LINE] = '\n'; /* exactly the longest line */
    line[TRACE_MAX_LINE + 1] = '\0';
    assert_int_equal(parse(line, &t, err, sizeof err), 0);
    sl__cli_trace_free(&t);
    line[TRACE_MAX_LINE] = ' ';
    line[TRACE_MAX_LINE + 1] = '\n';
    line[TRACE_MAX_LINE + 2] = '\0';
    assert_int_equal(parse(line, &t, err, sizeof err), SL_EPARSE);
    assert_string_equal(err, "t.csv:1: line longer than 1024 bytes");

    char key[TRACE_MAX_KEY_LEN + 16];
    snprintf(key, sizeof key, "1,%0*d\n", TRACE_MAX_KEY_LEN, 0);
    assert_int_equal(parse(key, &t, err, sizeof err), 0);
    sl__cli_trace_free(&t);
    snprintf(key, sizeof key, "1,%0*d\n", TRACE_MAX_KEY_LEN + 1, 0);
    assert_int_equal(parse(key, &t, err, sizeof err), SL_EPARSE);
    assert_string_equal(err, "t.csv:1: key longer than 256 bytes");
}

static void bounds_on_keys_and_requests(void **state) {
    (void)state;
    /* one more distinct key than allowed */
    size_t cap = (TRACE_MAX_KEYS + 1) * 16;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t len = 0;
    for (int i = 0; i <= TRACE_MAX_KEYS; i++)
        len += (size_t)snprintf(text + len, cap - len, "1,k%d\n", i);
    sl__cli_trace t;
    char err[256];
    assert_int_equal(sl__cli_trace_parse("t.csv", text, len, &t, err, sizeof err), SL_ETOOMANY);
    assert_string_equal(err, "t.csv:10001: more than 10000 distinct keys");
    free(text);

    /* one more request than allowed */
    len = (size_t)(TRACE_MAX_REQUESTS + 1) * 2;
    text = malloc(len);
    assert_non_null(text);
    for (size_t i = 0; i < len; i += 2) text[i] = '0', text[i + 1] = '\n';
    assert_int_equal(sl__cli_trace_parse("t.csv", text, len, &t, err, sizeof err), SL_ETOOMANY);
    assert_string_equal(err, "t.csv:1000001: more than 1000000 requests");
    assert_int_equal(sl__cli_trace_parse("t.csv", text, len - 2, &t, err, sizeof err), 0);
    assert_int_equal(t.n, TRACE_MAX_REQUESTS);
    sl__cli_trace_free(&t);
    free(text);
}

static void loads_files_and_reports_missing_ones(void **state) {
    (void)state;
    sl__cli_trace t;
    char err[512];
    assert_int_equal(sl__cli_trace_load_file("/nonexistent/x.csv", &t, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "/nonexistent/x.csv: cannot open: No such file or directory");
    char path[] = "/tmp/test_sim_trace_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs("time,key,cost\n0.5,a\n0.25,b,3\n", fp);
    fclose(fp);
    assert_int_equal(sl__cli_trace_load_file(path, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.reqs[0].text, "0.25");
    assert_int_equal(t.reqs[0].cost, 3);
    assert_string_equal(t.name, strrchr(path, '/') + 1);
    sl__cli_trace_free(&t);
    remove(path);
}

static void builtin_traces(void **state) {
    (void)state;
    sl__cli_trace t;
    char err[256];
    assert_int_equal(sl__cli_trace_builtin_find("bursty"), TRACE_BURSTY);
    assert_int_equal(sl__cli_trace_builtin_find("edge"), TRACE_EDGE);
    assert_int_equal(sl__cli_trace_builtin_find("steady"), TRACE_STEADY);
    assert_int_equal(sl__cli_trace_builtin_find("poisson"), TRACE_POISSON);
    assert_int_equal(sl__cli_trace_builtin_find("bursty.csv"), TRACE_NONE);

    assert_int_equal(sl__cli_trace_builtin_make(TRACE_BURSTY, 6000, 1, &t, err, sizeof err), 0);
    assert_in_range(t.n, 55, 65); /* "about 60 requests in 10 s" */
    assert_true(t.reqs[t.n - 1].t < 10 * SEC);
    char buf[40];
    assert_string_equal(sl__cli_trace_time_text(&t.reqs[0], buf, sizeof buf), "0.100");
    sl__cli_trace_free(&t);

    assert_int_equal(sl__cli_trace_builtin_make(TRACE_EDGE, 6000, 1, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 20); /* two bursts of 10 around the 5 s edge */
    int before = 0;
    for (size_t i = 0; i < t.n; i++) before += t.reqs[i].t < 5 * SEC;
    assert_int_equal(before, 10);
    assert_true(t.reqs[19].t - t.reqs[0].t < SEC / 2);
    sl__cli_trace_free(&t);

    assert_int_equal(sl__cli_trace_builtin_make(TRACE_STEADY, 6000, 1, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 80); /* 8 per second for 10 s */
    for (size_t i = 1; i < t.n; i++) assert_int_equal(t.reqs[i].t - t.reqs[i - 1].t, SEC / 8);
    sl__cli_trace_free(&t);

    /* poisson: deterministic per seed, near the mean rate, ms resolution */
    sl__cli_trace a, b, c;
    assert_int_equal(sl__cli_trace_builtin_make(TRACE_POISSON, 6000, 7, &a, err, sizeof err), 0);
    assert_int_equal(sl__cli_trace_builtin_make(TRACE_POISSON, 6000, 7, &b, err, sizeof err), 0);
    assert_int_equal(sl__cli_trace_builtin_make(TRACE_POISSON, 6000, 8, &c, err, sizeof err), 0);
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++) assert_int_equal(a.reqs[i].t, b.reqs[i].t);
    bool differ = a.n != c.n;
    for (size_t i = 0; !differ && i < a.n; i++) differ = a.reqs[i].t != c.reqs[i].t;
    assert_true(differ);
    assert_in_range(a.n, 30, 90);
    for (size_t i = 0; i < a.n; i++) assert_int_equal(a.reqs[i].t % 1000000, 0);
    sl__cli_trace_free(&a);
    sl__cli_trace_free(&b);
    sl__cli_trace_free(&c);
    assert_int_equal(sl__cli_trace_builtin_make(TRACE_POISSON, 200000, 1, &a, err, sizeof err), 0);
    assert_in_range(a.n, 1800, 2200); /* 200/s for 10 s */
    sl__cli_trace_free(&a);
}

static void decimal_parser(void **state) {
    (void)state;
    int64_t v;
    const char *why;
    assert_int_equal(sl__cli_parse_decimal("0.250", 5, 9, INT64_MAX, &v, &why), 0);
    assert_int_equal(v, 250000000);
    assert_int_equal(sl__cli_parse_decimal("12", 2, 3, INT64_MAX, &v, &why), 0);
    assert_int_equal(v, 12000);
    assert_int_equal(sl__cli_parse_decimal("0.5", 3, 6, 999999, &v, &why), 0);
    assert_int_equal(v, 500000);
    assert_int_equal(sl__cli_parse_decimal("1", 1, 6, 999999, &v, &why), SL_EPARSE);
    assert_string_equal(why, "too large");
    assert_int_equal(sl__cli_parse_decimal("9223372036854775808", 19, 0, INT64_MAX, &v, &why),
                     SL_EPARSE);
    assert_string_equal(why, "too large");
    assert_int_equal(sl__cli_parse_decimal("9223372036854775807", 19, 0, INT64_MAX, &v, &why), 0);
    assert_int_equal(v, INT64_MAX);
    char buf[40];
    assert_string_equal(sl__cli_fmt_seconds(200000000, 3, buf, sizeof buf), "0.200");
    assert_string_equal(sl__cli_fmt_seconds(333333334, 3, buf, sizeof buf), "0.333333334");
    assert_string_equal(sl__cli_fmt_seconds(2 * SEC, 0, buf, sizeof buf), "2");
    assert_string_equal(sl__cli_fmt_seconds(2 * SEC, 3, buf, sizeof buf), "2.000");
    assert_string_equal(sl__cli_fmt_milli(21437, buf, sizeof buf), "21.437");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_fields_defaults_and_exact_times),
        cmocka_unit_test(sorts_stably),
        cmocka_unit_test(short_headers),
        cmocka_unit_test(errors_say_file_and_line),
        cmocka_unit_test(nul_byte_and_long_lines),
        cmocka_unit_test(bounds_on_keys_and_requests),
        cmocka_unit_test(loads_files_and_reports_missing_ones),
        cmocka_unit_test(builtin_traces),
        cmocka_unit_test(decimal_parser),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
