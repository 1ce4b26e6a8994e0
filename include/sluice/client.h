/* sluice/client.h: libsluice-client, the polite HTTP client (on libcurl).
 * Link with `pkg-config --libs sluice-client`.
 *
 * sl_client_do() sends one request and retries 429 and 503 answers the way
 * the seed's section 09 asks:
 *
 * - Retry-After is honoured in both forms (delay-seconds and HTTP-date, RFC
 *   9110 section 10.2.3); the client waits the hint plus a uniform random
 *   extra of up to the hint again, so that clients told the same thing do
 *   not come back together (the thundering herd);
 * - without a hint: exponential backoff with full jitter, a uniform wait in
 *   [0, min(max_wait, base * factor^(attempt-1))): 400 ms, 800 ms, 1.6 s, ...
 *   capped at 10 s by default;
 * - it gives up after max_attempts (default 5) and returns the last answer;
 * - only requests that are safe to repeat are retried: GET, HEAD, OPTIONS,
 *   PUT, DELETE, or any request carrying an Idempotency-Key header, unless
 *   the caller opts in with SL_CLIENT_RETRY_UNSAFE;
 * - the body of an answer that is retried is read and dropped, so the
 *   connection is reused (one libcurl easy handle per client);
 * - an overall deadline per call: a wait that would end after it is not
 *   started, and each transfer is given only the time that is left;
 * - a retry budget: retries may add at most budget_ppm (default 10 %) of the
 *   requests, plus a reserve (default 10); a libsluice token bucket whose
 *   clock is the number of requests sent (see docs/client.md);
 * - AIMD (SL_CLIENT_AIMD): a rate per host (scheme, host and port), in
 *   milli-requests per second, raised by `increase` after each 2xx/3xx and
 *   cut by `decrease_ppm` after each 429 or 503, within [floor, cap]; the
 *   client paces itself with an sl_limiter (burst 1) and
 *   sl_limiter_set_rate();
 * - SL_CLIENT_PACE: slows down before the wall using the RateLimit /
 *   RateLimit-Policy (IETF draft) or X-RateLimit-* fields of the answers.
 *
 * Every wait goes through an injectable sl_clock, and jitter comes from a
 * seedable PRNG, so the whole behaviour is testable without sleeping.
 *
 * Threads: an sl_client is used by one thread at a time (like a CURL easy
 * handle); use one client per thread. libcurl must be initialised before
 * threads start if your libcurl is not thread-safe to initialise
 * (curl_global_init; libcurl >= 7.84 with CURL_VERSION_THREADSAFE is). */
#ifndef SLUICE_CLIENT_H
#define SLUICE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/clock.h"
#include "sluice/error.h"
#include "sluice/export.h"
#include "sluice/limit.h" /* SL_NS_PER_SEC, SL_NS_PER_MS */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_client sl_client;
typedef struct sl_response sl_response;

/* Flags (sl_client_options.flags; SL_CLIENT_RETRY_UNSAFE also per request). */
#define SL_CLIENT_RETRY_UNSAFE 0x1u /* also retry methods that are not safe to repeat */
#define SL_CLIENT_AIMD         0x2u /* pace each host with an AIMD rate */
#define SL_CLIENT_PACE         0x4u /* slow down before the wall (RateLimit fields) */
#define SL_CLIENT_NO_BUDGET    0x8u /* no retry budget: only max_attempts bounds retries */

/* AIMD parameters. Rates in milli-requests per second (1000 = 1/s): the
 * limiter's rate is the exact fraction sl_rate{rate, 1000 s}. */
typedef struct sl_client_aimd {
    int64_t start;        /* first rate of a host; default 1000 (1/s) */
    int64_t increase;     /* added after each 2xx or 3xx answer; default 500 (+0.5/s) */
    int64_t decrease_ppm; /* factor after each 429 or 503, in millionths, 1..999999;
                             default 500000 (halve); the product is rounded down */
    int64_t floor;        /* never below; default 1000 (1/s) */
    int64_t cap;          /* never above; default 50000 (50/s) */
} sl_client_aimd;

/* What the client reports while it works (sl_client_options.on_event). */
typedef enum sl_client_event_kind {
    SL_EVENT_RETRY = 1, /* attempt got `status`; the client waits `wait`, then retries */
    SL_EVENT_GIVE_UP,   /* attempt got a 429/503 that is not retried; `stop` says why */
    SL_EVENT_PACE       /* before `attempt`: waiting `wait` for the host's pace */
} sl_client_event_kind;

/* Why sl_client_do() returned the answer it returned. */
typedef enum sl_client_stop {
    SL_STOP_DONE = 0, /* the answer was neither 429 nor 503: nothing to retry */
    SL_STOP_ATTEMPTS, /* max_attempts answers were 429/503 */
    SL_STOP_UNSAFE,   /* the request is not safe to repeat (method, no Idempotency-Key) */
    SL_STOP_BUDGET,   /* the retry budget is spent */
    SL_STOP_DEADLINE, /* the next attempt would start after the deadline */
    SL_STOP_MAX_WAIT  /* Retry-After asks for longer than max_wait */
} sl_client_stop;

typedef struct sl_client_event {
    sl_client_event_kind kind;
    const char *url;     /* the request's URL; lives during the callback */
    int attempt;         /* 1-based: the attempt this is about */
    int status;          /* RETRY, GIVE_UP: the answer's HTTP status; PACE: 0 */
    int64_t wait;        /* RETRY, PACE: ns until the next attempt; GIVE_UP: 0 */
    int64_t hint;        /* RETRY, GIVE_UP: the Retry-After delay in ns, -1 if none */
    sl_client_stop stop; /* GIVE_UP: why; otherwise SL_STOP_DONE */
    int64_t rate;        /* the host's AIMD rate now (milli-req/s); 0 without AIMD */
} sl_client_event;

typedef struct sl_client_options {
    int max_attempts;             /* attempts per request, >= 1; default 5 */
    int64_t backoff_base;         /* ns, > 0: the first backoff bound; default 400 ms */
    int64_t backoff_factor_milli; /* growth per attempt in thousandths, >= 1000; default 2000 */
    int64_t max_wait;             /* ns, > 0: the longest single wait, and the backoff's cap;
                                     a Retry-After beyond it is not waited for
                                     (SL_STOP_MAX_WAIT); default 10 s */
    int64_t timeout;              /* ns: overall deadline of each call; 0 = none (default) */
    int64_t connect_timeout;      /* ns: per connection attempt; 0 = libcurl's (default) */
    int64_t budget_ppm;           /* retries per request earned, in millionths, 0..10^6;
                                     default 100000 (10 %) */
    int64_t budget_reserve;       /* retries available before any is earned, and the most
                                     that can be saved up, >= 1; default 10 */
    size_t max_body;              /* bytes of a body kept in memory (no on_body); default 16 MiB */
    unsigned flags;               /* SL_CLIENT_*; default 0 */
    sl_client_aimd aimd;          /* used with SL_CLIENT_AIMD */
    const sl_clock *clock;        /* waits and deadlines; NULL = sl_clock_monotonic() */
    uint64_t seed;                /* jitter PRNG seed; 0 = a random seed (default) */
    const char *user_agent;       /* copied; NULL = "sluice-client/<version>" */
    /* Called for every event, from inside sl_client_do(), on its thread; may
     * be NULL. It must not call back into the same client. */
    void (*on_event)(void *ctx, const sl_client_event *e);
    void *event_ctx;
} sl_client_options;

/* Fills *o with the defaults above. Start from this, then change fields. */
SL_API void sl_client_options_init(sl_client_options *o);

/* Creates a client (opts NULL = the defaults; the struct is copied, the
 * clock must outlive the client). Returns 0 and *out (free with
 * sl_client_destroy), SL_EINVAL (a field out of range), SL_ERATE (AIMD rates
 * not positive, or floor > cap), SL_ENOMEM, or SL_ETRANSFER (libcurl could
 * not be initialised). */
SL_API int sl_client_create(const sl_client_options *opts, sl_client **out);

/* Frees the client, its connections and its per-host state. */
SL_API void sl_client_destroy(sl_client *c);

/* One request. Pointers are borrowed for the duration of sl_client_do(). */
typedef struct sl_client_request {
    const char *method;         /* NULL = "GET", or "POST" when body is not NULL */
    const char *url;            /* http:// or https:// */
    const char *const *headers; /* "Name: value" lines, NULL-terminated; may be NULL */
    const void *body;           /* request body, or NULL */
    size_t body_len;            /* bytes of body */
    int64_t timeout;            /* ns; 0 = the client's timeout */
    unsigned flags;             /* SL_CLIENT_RETRY_UNSAFE for this request */
    /* Receives the body of the answer that is returned (never of one that
     * is retried), in pieces. Return 0 to go on, anything else to abort
     * (sl_client_do then returns SL_ETRANSFER). NULL: the body is kept in
     * the response (at most max_body bytes). */
    int (*on_body)(void *ctx, const void *data, size_t len);
    void *body_ctx;
} sl_client_request;

/* Sends the request, retrying as described at the top of this file.
 * Redirects are not followed (a 3xx is returned, as curl does without -L);
 * transfer failures are not retried.
 * Returns 0 and *out for any HTTP answer, including a 429 the client gave up
 * on (free it with sl_response_free). Otherwise *out is NULL and the code is
 * SL_EINVAL (no URL, or a URL libcurl cannot use: see sl_client_errmsg),
 * SL_EDEADLINE (the deadline passed before an answer: while pacing or during
 * a transfer), SL_ETRANSFER (connection, TLS or protocol failure, a body
 * larger than max_body, or on_body aborted), SL_ENOMEM. */
SL_API int sl_client_do(sl_client *c, const sl_client_request *req, sl_response **out);

/* sl_client_do() with a GET of url and everything else default. */
SL_API int sl_client_get(sl_client *c, const char *url, sl_response **out);

/* A sentence about the last failure of sl_client_do() (libcurl's text for
 * transfer errors), or "" after a success. Owned by the client, valid until
 * its next call. */
SL_API const char *sl_client_errmsg(const sl_client *c);

/* The AIMD rate (milli-requests per second) of the host of `url`, or 0 when
 * AIMD is off or the client has not talked to that host yet. */
SL_API int64_t sl_client_host_rate(sl_client *c, const char *url);

typedef struct sl_client_stats {
    uint64_t requests;       /* sl_client_do() calls that sent something */
    uint64_t attempts;       /* HTTP requests sent, retries included */
    uint64_t retries;        /* attempts beyond the first */
    uint64_t budget_refused; /* retries the budget refused */
    uint64_t paced;          /* attempts that waited for the host's pace */
    int64_t waited;          /* ns spent waiting (backoff, hints and pacing) */
} sl_client_stats;

SL_API void sl_client_stats_get(const sl_client *c, sl_client_stats *out);

/* ---- the answer ---------------------------------------------------------- */

typedef struct sl_response_info {
    int status;          /* HTTP status of the last answer */
    int attempts;        /* attempts made, >= 1 */
    int64_t waited;      /* ns waited between and before attempts */
    int64_t elapsed;     /* ns from the call to the end of the last answer (client's clock) */
    sl_client_stop stop; /* why this answer was returned */
} sl_response_info;

SL_API void sl_response_info_get(const sl_response *r, sl_response_info *out);
SL_API int sl_response_status(const sl_response *r);

/* The value of the first header field called `name` (case-insensitive),
 * without surrounding whitespace, or NULL. Lives as long as r. At most 256
 * fields and 100 KiB of them are kept. */
SL_API const char *sl_response_header(const sl_response *r, const char *name);

/* The body kept in memory (empty when on_body received it), NUL-terminated
 * for convenience; *len (may be NULL) gets its length. Lives as long as r. */
SL_API const char *sl_response_body(const sl_response *r, size_t *len);

SL_API void sl_response_free(sl_response *r);

/* ---- header values (pure functions, usable with any HTTP stack) ------------ */

/* Parses an HTTP-date (RFC 9110 section 5.6.7: IMF-fixdate, and the obsolete
 * RFC 850 and asctime forms) of `len` bytes into ns since the Unix epoch,
 * clamped to the years 1677..2262 that int64 nanoseconds hold. A two-digit
 * RFC 850 year is 19xx from 70 up, 20xx below. Returns 0 or SL_EPARSE. */
SL_API int sl_http_date_parse(const char *text, size_t len, int64_t *unix_ns);

/* Parses a Retry-After value: delay-seconds, or an HTTP-date read relative
 * to `now_unix_ns` (the answer's Date field when it has one: that cancels
 * any skew between the two clocks). *delay_ns gets the delay, 0 for a date
 * in the past; seconds beyond 10^9 are clamped to 10^9 s. Returns 0 or
 * SL_EPARSE. */
SL_API int sl_retry_after_parse(const char *value, int64_t now_unix_ns, int64_t *delay_ns);

#ifdef __cplusplus
}
#endif
#endif
