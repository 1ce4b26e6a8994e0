/* error.c: the message-and-code helper of the CLI's error convention (see
 * error.h). */
#include "cli/error.h"

#include <stdarg.h>
#include <stdio.h>

void sl__cli_fail_msg(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (errlen > 0) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
