/* test_cli_args.c: the `sluice` command line's option parsing (src/cli/args.c)
 * and every subcommand's use of it. Issue 12 item 18: a value whose parse
 * had failed was scaled before the error was looked at (signed overflow
 * under UBSan, a random failure of sim_cli). Here every option that takes a
 * number is given bad values, through the subcommands' own entry points:
 * each must end in a usage error (2), never in undefined behaviour (this
 * test runs under ASan+UBSan with pattern-initialised locals, where the old
 * code overflowed at once). The parsers themselves: a failure leaves a
 * defined neutral value; seconds come back as exact nanoseconds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/fetch.h"
#include "cli/sim.h"

typedef int (*main_fn)(const char *cmd, int argc, char **argv, int first);

/* Runs fn(cmd, {"sluice", "sub", opt, value, extra...}) and returns its code. */
static int run(main_fn fn, const char *opt, const char *value, const char *extra) {
    char *argv[8];
    int argc = 0;
    argv[argc++] = (char *)"sluice";
    argv[argc++] = (char *)"sub";
    argv[argc++] = (char *)opt;
    if (value) argv[argc++] = (char *)value;
    if (extra) argv[argc++] = (char *)extra;
    argv[argc] = NULL;
    return fn("sluice test", argc, argv, 2);
}

/* Values no numeric option accepts: every one fails in a different place of
 * the parser (sign, garbage, too many decimals, overflow, empty). */
static const char *const bad_values[] = {
    "-1", "x", "1.2345678901", "99999999999999999999999", "", "1e3", "0x10", " 1",
};

static void check_bad_values(main_fn fn, const char *const *opts, size_t nopts, const char *extra) {
    for (size_t i = 0; i < nopts; i++)
        for (size_t k = 0; k < sizeof bad_values / sizeof *bad_values; k++) {
            int rc = run(fn, opts[i], bad_values[k], extra);
            if (rc != EXIT_USAGE)
                fail_msg("%s '%s': exit %d, want %d", opts[i], bad_values[k], rc, EXIT_USAGE);
        }
}

static void sim_herd_bad_numbers(void **state) {
    (void)state;
    static const char *const opts[] = {"--workers", "--rate",     "--burst", "--retry-after",
                                       "--jitter",  "--duration", "--seed"};
    check_bad_values(sl__cli_sim_herd_main, opts, sizeof opts / sizeof *opts, NULL);
    /* and out of range, in both directions */
    assert_int_equal(run(sl__cli_sim_herd_main, "--retry-after", "0", NULL), EXIT_USAGE);
    assert_int_equal(run(sl__cli_sim_herd_main, "--jitter", "3600.001", NULL), EXIT_USAGE);
    assert_int_equal(run(sl__cli_sim_herd_main, "--duration", "0.000", NULL), EXIT_USAGE);
}

static void sim_aimd_bad_numbers(void **state) {
    (void)state;
    static const char *const opts[] = {"--start", "--increase", "--decrease", "--floor", "--cap",
                                       "--rate",  "--burst",    "--duration", "--seed"};
    check_bad_values(sl__cli_sim_aimd_main, opts, sizeof opts / sizeof *opts, NULL);
    assert_int_equal(run(sl__cli_sim_aimd_main, "--duration", "3600.001", NULL), EXIT_USAGE);
}

static void sim_race_bad_numbers(void **state) {
    (void)state;
    static const char *const opts[] = {"--rate", "--burst", "--mean-rate", "--seed",
                                       "--algorithms"};
    check_bad_values(sl__cli_sim_race_main, opts, sizeof opts / sizeof *opts, NULL);
}

static void fetch_bad_numbers(void **state) {
    (void)state;
    /* a URL nobody listens on: every case must fail before any request */
    static const char *const opts[] = {"--max-time", "-m",        "--max-attempts", "--max-wait",
                                       "--backoff",  "--count",   "--rate",         "--seed",
                                       "--budget",   "--aimd-max"};
    check_bad_values(sl__cli_fetch_main, opts, sizeof opts / sizeof *opts, "http://127.0.0.1:1/");
    assert_int_equal(run(sl__cli_fetch_main, "--max-attempts", "1001", "http://127.0.0.1:1/"),
                     EXIT_USAGE);
    assert_int_equal(run(sl__cli_fetch_main, "--max-wait", "0", "http://127.0.0.1:1/"), EXIT_USAGE);
}

static void fetch_aimd_max(void **state) {
    (void)state;
    char *argv[10];
    /* --aimd-max without --aimd, and below the start */
    assert_int_equal(run(sl__cli_fetch_main, "--aimd-max", "50", "http://127.0.0.1:1/"),
                     EXIT_USAGE);
    int n = 0;
    argv[n++] = (char *)"sluice";
    argv[n++] = (char *)"fetch";
    argv[n++] = (char *)"--aimd";
    argv[n++] = (char *)"--rate";
    argv[n++] = (char *)"20";
    argv[n++] = (char *)"--aimd-max";
    argv[n++] = (char *)"10";
    argv[n++] = (char *)"http://127.0.0.1:1/";
    argv[n] = NULL;
    assert_int_equal(sl__cli_fetch_main("sluice fetch", n, argv, 2), EXIT_USAGE);
}

static void parsers_leave_defined_values(void **state) {
    (void)state;
    char *argv[] = {(char *)"sluice", NULL};
    sl__cli_args a;
    sl__cli_args_init(&a, "sluice test", 1, argv, 1);
    int64_t i64 = 77;
    int i32 = 77;
    uint64_t u64 = 77;
    sl_rate r = {7, 7};
    sl_algorithm alg = SL_GCRA;
    sl_algorithm algs[6];
    int nalgs = 3;
    assert_int_equal(sl__cli_args_int(&a, "-5", 0, 10, &i64), SL_EINVAL);
    assert_int_equal(i64, 0);
    assert_int_equal(sl__cli_args_int32(&a, "11", 0, 10, &i32), SL_EINVAL);
    assert_int_equal(i32, 0);
    assert_int_equal(sl__cli_args_u64(&a, "1x", &u64), SL_EINVAL);
    assert_int_equal(u64, 0);
    i64 = 77;
    assert_int_equal(sl__cli_args_decimal(&a, "0.1234", 3, 0, 1000, "x", &i64), SL_EINVAL);
    assert_int_equal(i64, 0);
    i64 = 77;
    assert_int_equal(sl__cli_args_seconds(&a, "-1", 0, 3600000, "x", &i64), SL_EINVAL);
    assert_int_equal(i64, 0);
    assert_int_equal(sl__cli_args_rate(&a, "5/parsec", &r), SL_EINVAL);
    assert_int_equal(r.limit, 0);
    assert_int_equal(r.period, 0);
    assert_int_equal(sl__cli_args_algorithm(&a, "nope", &alg), SL_EINVAL);
    assert_int_equal(sl__cli_args_algorithms(&a, "gcra,gcra", algs, &nalgs), SL_EINVAL);
    assert_int_equal(nalgs, 0);
    nalgs = 3;
    assert_int_equal(sl__cli_args_algorithms(&a, "gcra,,token_bucket", algs, &nalgs), SL_EINVAL);
    assert_int_equal(nalgs, 0);

    /* seconds: exact nanoseconds; the bound is clamped so the product fits */
    assert_int_equal(sl__cli_args_seconds(&a, "0.001", 1, 3600000, "x", &i64), 0);
    assert_int_equal(i64, SL_NS_PER_MS);
    assert_int_equal(sl__cli_args_seconds(&a, "3600", 1, 3600000, "x", &i64), 0);
    assert_int_equal(i64, 3600 * SL_NS_PER_SEC);
    assert_int_equal(sl__cli_args_seconds(&a, "9223372036.854", 0, INT64_MAX, "x", &i64), 0);
    assert_int_equal(i64, ARGS_MAX_MS * SL_NS_PER_MS);
    assert_int_equal(sl__cli_args_seconds(&a, "9223372036.855", 0, INT64_MAX, "x", &i64),
                     SL_EINVAL);
    assert_int_equal(i64, 0);
    assert_int_equal(sl__cli_args_int32(&a, "1000", 1, 1000, &i32), 0);
    assert_int_equal(i32, 1000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_herd_bad_numbers), cmocka_unit_test(sim_aimd_bad_numbers),
        cmocka_unit_test(sim_race_bad_numbers), cmocka_unit_test(fetch_bad_numbers),
        cmocka_unit_test(fetch_aimd_max),       cmocka_unit_test(parsers_leave_defined_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
