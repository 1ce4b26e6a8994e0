/* sluice/error.h: the one table of error codes every libsluice call returns.
 *
 * Convention: functions return int, 0 on success, a negative SL_E* code on
 * failure. sl_strerror() turns a code into a stable English sentence. */
#ifndef SLUICE_ERROR_H
#define SLUICE_ERROR_H

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    SL_OK = 0,
    SL_EINVAL = -1,      /* an argument is out of range or inconsistent */
    SL_ERATE = -2,       /* rate limit or period is zero or negative */
    SL_EBURST = -3,      /* burst is zero or negative (bucket algorithms) */
    SL_ECOST = -4,       /* cost is negative, or larger than can ever pass */
    SL_EOVERFLOW = -5,   /* the parameters' products do not fit exact 64-bit arithmetic */
    SL_ENOMEM = -6,      /* an allocation failed; nothing was changed */
    SL_EDEADLINE = -7,   /* the reserved slot lies beyond the caller's deadline */
    SL_EKEY = -8,        /* key longer than SL_KEY_MAX */
    SL_ETOOMANY = -9,    /* more checks in one call than SL_CHECK_MAX */
    SL_EPARSE = -10,     /* text could not be parsed (rate, duration, size, name) */
    SL_EALGORITHM = -11, /* unknown algorithm */
    SL_ETRANSFER = -12,  /* libsluice-client: an HTTP transfer failed (see sl_client_errmsg) */
    SL_ELEASE = -13      /* no such lease held (never acquired, released, or expired) */
};

/* Returns a static, never-NULL description of `code` (unknown codes get a
 * generic text). The pointer lives forever; do not free it. */
SL_API const char *sl_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
