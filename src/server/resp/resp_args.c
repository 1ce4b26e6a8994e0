/* resp_args.c: the RESP command files' error writer (resp_args.h). */
#include "server/resp/resp_args.h"

#include <stdarg.h>
#include <stdio.h>

void sl__resp_errorf(sl__buf *out, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sl__resp_error(out, msg);
}
