/* quota.h: what a server says about the client's remaining allowance, read
 * from the answer's fields, and how long to hold back so the client slows
 * down before the wall instead of running into 429s.
 *
 * Sources, first found wins:
 *   1. RateLimit: "p";r=R;t=T (IETF draft-ietf-httpapi-ratelimit-headers 07+,
 *      sluiced's form; with several policies the one with the fewest r left),
 *      and q from RateLimit-Policy: "p";q=Q;w=W for the same policy;
 *   2. RateLimit-Remaining / RateLimit-Reset / RateLimit-Limit (older drafts);
 *   3. X-RateLimit-Remaining / X-RateLimit-Reset / X-RateLimit-Limit; a reset
 *      above 10^9 is a Unix timestamp (GitHub's convention), otherwise
 *      seconds from now. */
#ifndef SLUICE_CLIENT_QUOTA_H
#define SLUICE_CLIENT_QUOTA_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sl__quota {
    bool known;        /* remaining and reset were found */
    int64_t remaining; /* requests left now */
    int64_t reset;     /* ns until the allowance is back */
    int64_t limit;     /* the quota, or -1 when not said */
} sl__quota;

/* Looks a field up by name (case-insensitive); NULL when absent. */
typedef const char *(*sl__field_fn)(void *ctx, const char *name);

/* Reads the fields. now_unix_ns converts Unix-timestamp resets (the answer's
 * Date when it has one). Malformed fields are ignored. */
void sl__quota_read(sl__field_fn get, void *ctx, int64_t now_unix_ns, sl__quota *out);

/* How long to wait before the next request: 0 while more than a tenth of
 * the quota is left (or, without a quota, while anything is left); near the
 * wall, what is left spread evenly until the reset, reset / (remaining + 1)
 * rounded up; with nothing left, the reset. */
int64_t sl__quota_pace(const sl__quota *q);

#endif
