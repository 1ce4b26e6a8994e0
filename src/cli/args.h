/* args.h: command-line option parsing for the `sluice` subcommands: long
 * options (`--name value` or `--name=value`), and strict, bounded parsers for
 * the values they take (integers, exact decimals, rates, algorithm lists).
 *
 * Every parser prints its own error ("sluice sim race: --burst: ...") to
 * stderr and returns SL_EINVAL, the one exception to the CLI's convention of
 * a message in the caller's buffer (cli/error.h): a usage error goes
 * nowhere else. Callers test `< 0` and turn that into exit code 2. */
#ifndef SLUICE_CLI_ARGS_H
#define SLUICE_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/error.h"
#include "sluice/limit.h"

/* Exit codes of the command line. */
enum { EXIT_USAGE = 2 };

/* One long option. metavar NULL means a flag without a value. */
typedef struct sl__cli_opt {
    const char *name; /* without the leading "--" */
    const char *metavar;
} sl__cli_opt;

/* Iterates over argv[first..argc) against a NULL-name-terminated table.
 * `cmd` names the command in messages ("sluice sim race"). */
typedef struct sl__cli_args {
    const char *cmd;
    int argc;
    char **argv;
    int i;
    char name[64]; /* the option being parsed, for messages */
} sl__cli_args;

void sl__cli_args_init(sl__cli_args *a, const char *cmd, int argc, char **argv, int first);

/* Returns 1 with *index (into opts) and *value (NULL for flags) set, 0 at the
 * end of argv, SL_EINVAL after printing an error (unknown option, missing
 * value, a positional argument, a value given to a flag). "-h" is read as
 * "--help". */
int sl__cli_args_next(sl__cli_args *a, const sl__cli_opt *opts, int *index, const char **value);

/* Prints "cmd: --name: <formatted message> (see cmd --help)" to stderr. */
void sl__cli_args_print_error(const sl__cli_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* sl__cli_args_error(a, fmt, ...): prints as sl__cli_args_print_error and is
 * SL_EINVAL. A macro for the reason given at sl__cli_fail (cli/error.h). */
#define sl__cli_args_error(a, ...) (sl__cli_args_print_error((a), __VA_ARGS__), SL_EINVAL)

/* Parses a non-negative decimal such as "12", "0.250" with at most
 * `decimals` (0..9) digits after the point into an integer scaled by
 * 10^decimals ("0.250" with 9 decimals is 250000000). No sign, no exponent,
 * no spaces, at least one digit before the point and one after it. Returns 0,
 * or SL_EPARSE with *why set to a static message ("too large" for values
 * above max_scaled). Exact: no floating point. */
int sl__cli_parse_decimal(const char *s, size_t len, int decimals, int64_t max_scaled, int64_t *out,
                          const char **why);

/* Value parsers for options: each prints its error through sl__cli_args_error.
 *
 * Every one returns 0 with the value in *out, or SL_EINVAL with *out set to a
 * defined neutral value (0, {0, 0}, or an empty list: *n = 0): a caller that
 * reads *out before looking at the result reads no garbage. They
 * are warn_unused_result, and each returns the value in the unit the caller
 * stores (sl__cli_args_seconds gives nanoseconds, sl__cli_args_int32 an int), so no caller
 * converts or scales a value it has not checked. */
#define ARGS_CHECK __attribute__((warn_unused_result))
ARGS_CHECK int sl__cli_args_int(const sl__cli_args *a, const char *v, int64_t min, int64_t max,
                                int64_t *out);
/* A whole number in [min, max] into an int. */
ARGS_CHECK int sl__cli_args_int32(const sl__cli_args *a, const char *v, int min, int max, int *out);
ARGS_CHECK int sl__cli_args_u64(const sl__cli_args *a, const char *v, uint64_t *out);
/* A decimal scaled by 10^decimals, in [min, max] (scaled). `expected`
 * describes the accepted values in messages ("seconds from 0 to 3600"). */
ARGS_CHECK int sl__cli_args_decimal(const sl__cli_args *a, const char *v, int decimals, int64_t min,
                                    int64_t max, const char *expected, int64_t *out);
/* Seconds with at most 3 decimals, from min_ms to max_ms milliseconds
 * (0 <= min_ms <= max_ms <= ARGS_MAX_MS), as nanoseconds in *out_ns. */
#define ARGS_MAX_MS (INT64_MAX / 1000000)
ARGS_CHECK int sl__cli_args_seconds(const sl__cli_args *a, const char *v, int64_t min_ms,
                                    int64_t max_ms, const char *expected, int64_t *out_ns);
ARGS_CHECK int sl__cli_args_rate(const sl__cli_args *a, const char *v, sl_rate *out);
ARGS_CHECK int sl__cli_args_algorithm(const sl__cli_args *a, const char *v, sl_algorithm *out);
/* A comma-separated list of distinct algorithm names, in the given order. */
ARGS_CHECK int sl__cli_args_algorithms(const sl__cli_args *a, const char *v, sl_algorithm out[6],
                                       int *n);

/* Formats ns as seconds: the integer part, then the fraction with trailing
 * zeros removed but at least `min_decimals` digits ("0.200", "0.333333334").
 * Exact. Returns buf. */
char *sl__cli_fmt_seconds(int64_t ns, int min_decimals, char *buf, size_t size);

/* Formats a value scaled by 1000 with three decimals ("20.500"). */
char *sl__cli_fmt_milli(int64_t v, char *buf, size_t size);

#endif
