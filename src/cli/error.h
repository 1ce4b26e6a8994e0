/* error.h: the command line's one internal error convention (issue 14 item
 * 4). A function that can fail returns 0 (or a count, or 1 for "done, stop
 * here" where its header says so) on success and a negative SL_E* code of
 * include/sluice/error.h on failure, with the message in the caller's
 * buffer (`char *err, size_t errlen`, always NUL-terminated, cut to fit);
 * callers test `< 0` and print the buffer. The codes the CLI uses:
 *   SL_EINVAL    a bad argument or file: a path that cannot be opened or
 *                written, inconsistent options (and every usage error)
 *   SL_EPARSE    text that could not be read (a trace line, a number)
 *   SL_ENOMEM    an allocation failed
 *   SL_ETOOMANY  more than a bound (requests, keys, chart marks)
 *   SL_EOVERFLOW a run longer than the time domain
 *   or the code a library call returned (sl_table_check, sl_fairq_*, ...).
 * The option parsers of args.h are the one kind that print their message
 * themselves (to stderr, prefixed by the command), as a usage error goes
 * nowhere else; they still return SL_EINVAL / SL_EPARSE. */
#ifndef SLUICE_CLI_ERROR_H
#define SLUICE_CLI_ERROR_H

#include <stddef.h>

#include "sluice/error.h"

/* Writes the printf-style message to err (errlen bytes, may be 0). */
void sl__cli_fail_msg(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* sl__cli_fail(code, err, errlen, fmt, ...): writes the message as
 * sl__cli_fail_msg and is code (a negative SL_E*), for `return
 * sl__cli_fail(...)`. A macro, so that the code is visible where it is
 * returned (clang's analyzer does not follow a variadic call's result). */
#define sl__cli_fail(code, err, errlen, ...)                                                       \
    (sl__cli_fail_msg((err), (errlen), __VA_ARGS__), (code))

#endif
