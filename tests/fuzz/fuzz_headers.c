/* fuzz_headers.c: libFuzzer target for libsluice-client's parsers of what a
 * server sends back, all of it untrusted: the HTTP-date and Retry-After
 * values (src/client/httpdate.c) and the RateLimit / RateLimit-Policy /
 * RateLimit-* / X-RateLimit-* fields read for pacing (src/client/quota.c).
 * The fields are fed the way the client feeds them (client.c decide()): the
 * answer's Date, if it parses, is the reference time. Nothing may crash,
 * read out of bounds (every field is an exact-size copy) or loop, and:
 *
 * - an HTTP-date that parses is a whole number of seconds, and the same
 *   instant written as an IMF-fixdate parses to the same value;
 * - a Retry-After that parses gives a delay from 0 to 10^9 s;
 * - a quota that is known has remaining >= 0, a reset from 0 to 10^9 s and
 *   limit >= -1 (-1: not said), and its pace lies between 0 and the reset.
 *
 * Input: the first byte picks the clock (when there is no Date), the rest is
 * up to ten field values separated by '\n', in the order of `names` below.
 * The seeds are in tests/fuzz/corpus/headers/. */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "client/quota.h"
#include "sluice/client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NFIELDS   10
#define MAX_DELAY (INT64_C(1000000000) * SL_NS_PER_SEC)

static const char *const names[NFIELDS] = {
    "Date",
    "Retry-After",
    "RateLimit",
    "RateLimit-Policy",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "X-RateLimit-Limit",
};

typedef struct answer {
    char *value[NFIELDS]; /* malloc'd, NUL-terminated, exact size; NULL = absent */
} answer;

static const char *field(void *ctx, const char *name) {
    answer *a = ctx;
    for (int k = 0; k < NFIELDS; k++)
        if (strcasecmp(names[k], name) == 0) return a->value[k];
    return NULL;
}

/* The date must parse back from its IMF-fixdate text to the same value. */
static void check_date(const char *text, size_t len) {
    /* an exact-size copy without a terminator: the parser must honour len */
    char *copy = malloc(len ? len : 1);
    if (!copy) return;
    if (len) memcpy(copy, text, len);
    int64_t t;
    int rc = sl_http_date_parse(copy, len, &t);
    free(copy);
    if (rc != SL_OK) return;
    if (t % SL_NS_PER_SEC != 0) abort();
    time_t secs = (time_t)(t / SL_NS_PER_SEC);
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) abort();
    static const char *const wd[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    char again[64];
    int n =
        snprintf(again, sizeof again, "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tm.tm_wday],
                 tm.tm_mday, mon[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    int64_t t2;
    if (n <= 0 || (size_t)n >= sizeof again) abort();
    if (sl_http_date_parse(again, (size_t)n, &t2) != SL_OK || t2 != t) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const int64_t clocks[4] = {
        0,
        INT64_C(1700000000) * SL_NS_PER_SEC,
        INT64_MAX / SL_NS_PER_SEC * SL_NS_PER_SEC,
        INT64_MIN / SL_NS_PER_SEC * SL_NS_PER_SEC,
    };
    int64_t now = clocks[data[0] & 3];
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    answer a = {{NULL}};
    for (int k = 0; k < NFIELDS && p <= end; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        check_date(p, n);
        /* a field value as an HTTP stack gives it: NUL-terminated (a NUL
         * inside simply ends it early) */
        a.value[k] = malloc(n + 1);
        if (!a.value[k]) break;
        memcpy(a.value[k], p, n);
        a.value[k][n] = '\0';
        if (!nl) break;
        p = nl + 1;
    }

    int64_t date = now;
    if (a.value[0] && sl_http_date_parse(a.value[0], strlen(a.value[0]), &date) != SL_OK)
        date = now;
    int64_t delay = -1;
    if (a.value[1] && sl_retry_after_parse(a.value[1], date, &delay) == SL_OK)
        if (delay < 0 || delay > MAX_DELAY) abort();

    sl__quota q;
    sl__quota_read(field, &a, date, &q);
    if (q.known) {
        if (q.remaining < 0 || q.reset < 0 || q.reset > MAX_DELAY || q.limit < -1) abort();
        int64_t pace = sl__quota_pace(&q);
        if (pace < 0 || pace > q.reset) abort();
    } else if (q.remaining != 0 || q.reset != 0 || q.limit != -1 || sl__quota_pace(&q) != 0) {
        abort();
    }
    for (int k = 0; k < NFIELDS; k++) free(a.value[k]);
    return 0;
}
