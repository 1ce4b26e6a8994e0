/* httpdate.c: HTTP-date (RFC 9110 section 5.6.7) and Retry-After (section
 * 10.2.3) values, parsed exactly: the three date forms a recipient must
 * accept, and delay-seconds. Pure functions, no clock, no locale. */
#include <stdbool.h>
#include <string.h>

#include "sluice/client.h"
#include "sluice/limit.h"

#define MAX_DELAY_SECONDS INT64_C(1000000000)

typedef struct cursor {
    const char *s;
    size_t len, i;
} cursor;

static bool at_end(const cursor *c) {
    return c->i >= c->len;
}

static bool eat(cursor *c, char ch) {
    if (at_end(c) || c->s[c->i] != ch) return false;
    c->i++;
    return true;
}

static int lower(int ch) {
    return ch >= 'A' && ch <= 'Z' ? ch + 32 : ch;
}

/* Reads letters; returns how many. */
static size_t word(cursor *c, const char **start) {
    *start = c->s + c->i;
    size_t n = 0;
    while (!at_end(c) && lower(c->s[c->i]) >= 'a' && lower(c->s[c->i]) <= 'z') c->i++, n++;
    return n;
}

/* Reads exactly `n` digits. */
static bool digits(cursor *c, int n, int *out) {
    int v = 0;
    for (int k = 0; k < n; k++) {
        if (at_end(c) || c->s[c->i] < '0' || c->s[c->i] > '9') return false;
        v = v * 10 + (c->s[c->i++] - '0');
    }
    *out = v;
    return true;
}

static bool same_word(const char *w, size_t n, const char *name) {
    if (strlen(name) != n) return false;
    for (size_t k = 0; k < n; k++)
        if (lower(w[k]) != lower(name[k])) return false;
    return true;
}

static const char *const short_days[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
static const char *const long_days[] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                        "Friday", "Saturday", "Sunday"};
static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

static bool is_day(const char *w, size_t n, const char *const *names) {
    for (int k = 0; k < 7; k++)
        if (same_word(w, n, names[k])) return true;
    return false;
}

static bool month(cursor *c, int *out) {
    const char *w;
    size_t n = word(c, &w);
    for (int k = 0; k < 12; k++)
        if (same_word(w, n, months[k])) return *out = k + 1, true;
    return false;
}

/* "HH:MM:SS"; 60 seconds is a leap second and counts as the next second. */
static bool time_of_day(cursor *c, int *h, int *m, int *s) {
    return digits(c, 2, h) && eat(c, ':') && digits(c, 2, m) && eat(c, ':') && digits(c, 2, s) &&
           *h <= 23 && *m <= 59 && *s <= 60;
}

static bool leap(int y) {
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard
 * Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int sl_http_date_parse(const char *text, size_t len, int64_t *unix_ns) {
    if (!text || !unix_ns) return SL_EPARSE;
    cursor c = {text, len, 0};
    while (!at_end(&c) && (text[c.i] == ' ' || text[c.i] == '\t')) c.i++;
    while (c.len > c.i && (text[c.len - 1] == ' ' || text[c.len - 1] == '\t')) c.len--;
    const char *w;
    size_t n = word(&c, &w);
    int day, mon, year, h, mi, s;
    if (eat(&c, ',')) {
        if (!eat(&c, ' ') || !digits(&c, 2, &day)) return SL_EPARSE;
        if (is_day(w, n, short_days)) {
            /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
            if (!eat(&c, ' ') || !month(&c, &mon) || !eat(&c, ' ') || !digits(&c, 4, &year))
                return SL_EPARSE;
        } else if (is_day(w, n, long_days)) {
            /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
            if (!eat(&c, '-') || !month(&c, &mon) || !eat(&c, '-') || !digits(&c, 2, &year))
                return SL_EPARSE;
            year += year >= 70 ? 1900 : 2000;
        } else {
            return SL_EPARSE;
        }
        if (!eat(&c, ' ') || !time_of_day(&c, &h, &mi, &s) || !eat(&c, ' ')) return SL_EPARSE;
        if (!same_word(c.s + c.i, c.len - c.i, "GMT")) return SL_EPARSE;
        c.i = c.len;
    } else {
        /* asctime: Sun Nov  6 08:49:37 1994 */
        if (!is_day(w, n, short_days) || !eat(&c, ' ') || !month(&c, &mon) || !eat(&c, ' '))
            return SL_EPARSE;
        if (eat(&c, ' ')) {
            if (!digits(&c, 1, &day)) return SL_EPARSE;
        } else if (!digits(&c, 2, &day)) {
            return SL_EPARSE;
        }
        if (!eat(&c, ' ') || !time_of_day(&c, &h, &mi, &s) || !eat(&c, ' ') ||
            !digits(&c, 4, &year))
            return SL_EPARSE;
    }
    if (!at_end(&c)) return SL_EPARSE;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int dim = mdays[mon - 1] + (mon == 2 && leap(year));
    if (day < 1 || day > dim) return SL_EPARSE;
    int64_t secs = days_from_civil(year, mon, day) * 86400 + h * 3600 + mi * 60 + s;
    /* int64 nanoseconds span 1677..2262; dates outside are clamped to it */
    const int64_t max_secs = INT64_MAX / SL_NS_PER_SEC, min_secs = INT64_MIN / SL_NS_PER_SEC;
    secs = secs > max_secs ? max_secs : (secs < min_secs ? min_secs : secs);
    *unix_ns = secs * SL_NS_PER_SEC;
    return SL_OK;
}

int sl_retry_after_parse(const char *value, int64_t now_unix_ns, int64_t *delay_ns) {
    if (!value || !delay_ns) return SL_EPARSE;
    size_t len = strlen(value), i = 0;
    while (i < len && (value[i] == ' ' || value[i] == '\t')) i++;
    while (len > i && (value[len - 1] == ' ' || value[len - 1] == '\t')) len--;
    if (i == len) return SL_EPARSE;
    if (value[i] >= '0' && value[i] <= '9') {
        /* delay-seconds = 1*DIGIT */
        int64_t secs = 0;
        for (; i < len; i++) {
            if (value[i] < '0' || value[i] > '9') return SL_EPARSE;
            if (secs < MAX_DELAY_SECONDS) secs = secs * 10 + (value[i] - '0');
        }
        if (secs > MAX_DELAY_SECONDS) secs = MAX_DELAY_SECONDS;
        *delay_ns = secs * SL_NS_PER_SEC;
        return SL_OK;
    }
    int64_t at;
    if (sl_http_date_parse(value + i, len - i, &at) != SL_OK) return SL_EPARSE;
    __int128 d = (__int128)at - now_unix_ns;
    if (d < 0) d = 0;
    if (d > MAX_DELAY_SECONDS * SL_NS_PER_SEC) d = MAX_DELAY_SECONDS * SL_NS_PER_SEC;
    *delay_ns = (int64_t)d;
    return SL_OK;
}
