/* client.c: the polite client (sluice/client.h): one libcurl easy handle per
 * client, reused for every attempt so connections are kept; the retry loop;
 * and the decision, taken as soon as the final header block has been read,
 * whether this answer is retried (its body is then read and dropped) or
 * returned (its body goes to the caller).
 *
 * Deciding at the end of the headers, before the body, is what lets the
 * client stream the returned body to on_body without keeping the bodies of
 * the answers it retries: everything the decision needs (status,
 * Retry-After, Date, RateLimit fields, the clock) is known by then. */
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/backoff.h"
#include "client/budget.h"
#include "client/hosts.h"
#include "client/quota.h"
#include "client/response.h"
#include "sluice/client.h"
#include "sluice/limit.h"
#include "sluice/limiter.h"
#include "sluice/sluice.h"
#include "util/units.h"

#define MILLI_PERIOD     (1000 * SL_NS_PER_SEC) /* rate r milli-req/s = r per 1000 s */
#define MAX_DURATION     (INT64_C(1000000000) * SL_NS_PER_SEC) /* ~31 years */
#define MAX_AIMD_RATE    INT64_C(1000000000)                   /* 10^6 requests per second */
#define DEFAULT_MAX_BODY ((size_t)16 << 20)

struct sl_client {
    CURL *curl;
    sl_client_options o;
    char *user_agent;
    const sl_clock *clock;
    sl__prng prng;
    sl__backoff backoff;
    sl__budget budget;
    sl__hosts hosts;
    sl_client_stats stats;
    sl_response *cur; /* the answer being read, reused across attempts */
    char curl_err[CURL_ERROR_SIZE];
    char err[CURL_ERROR_SIZE + 128];
};

/* One call of sl_client_do. */
typedef struct xfer {
    sl_client *c;
    const sl_client_request *req;
    const char *method;
    sl__host *host;
    bool safe;
    int attempt;
    int64_t deadline; /* client's clock; SL_NO_DEADLINE = none */
    /* the decision on the current attempt, taken at the end of its headers */
    bool decided;
    bool retry;
    int64_t decided_at;
    int64_t next_at; /* retry: when the next attempt starts */
    int64_t hint;    /* Retry-After in ns, -1 if none */
    sl_client_stop stop;
    /* body delivery failures */
    bool too_big, aborted, oom;
} xfer;

void sl_client_options_init(sl_client_options *o) {
    memset(o, 0, sizeof *o);
    o->max_attempts = 5;
    o->backoff_base = 400 * SL_NS_PER_MS;
    o->backoff_factor_milli = 2000;
    o->max_wait = 10 * SL_NS_PER_SEC;
    o->budget_ppm = 100000;
    o->budget_reserve = 10;
    o->max_body = DEFAULT_MAX_BODY;
    o->aimd = (sl_client_aimd){
        .start = 1000, .increase = 500, .decrease_ppm = 500000, .floor = 1000, .cap = 50000};
}

static int validate(const sl_client_options *o) {
    if (o->max_attempts < 1 || o->max_attempts > 1000) return SL_EINVAL;
    if (o->backoff_base <= 0 || o->backoff_base > MAX_DURATION) return SL_EINVAL;
    if (o->backoff_factor_milli < 1000 || o->backoff_factor_milli > 1000000) return SL_EINVAL;
    if (o->max_wait <= 0 || o->max_wait > MAX_DURATION) return SL_EINVAL;
    if (o->timeout < 0 || o->timeout > MAX_DURATION) return SL_EINVAL;
    if (o->connect_timeout < 0 || o->connect_timeout > MAX_DURATION) return SL_EINVAL;
    if (o->flags &
        ~(SL_CLIENT_RETRY_UNSAFE | SL_CLIENT_AIMD | SL_CLIENT_PACE | SL_CLIENT_NO_BUDGET))
        return SL_EINVAL;
    if (!(o->flags & SL_CLIENT_NO_BUDGET) &&
        (o->budget_ppm < 0 || o->budget_ppm > 1000000 || o->budget_reserve < 1 ||
         o->budget_reserve > 1000000000))
        return SL_EINVAL;
    if (o->flags & SL_CLIENT_AIMD) {
        const sl_client_aimd *a = &o->aimd;
        if (a->start <= 0 || a->floor <= 0 || a->cap <= 0 || a->floor > a->cap) return SL_ERATE;
        if (a->cap > MAX_AIMD_RATE || a->start < a->floor || a->start > a->cap) return SL_EINVAL;
        if (a->increase < 0 || a->increase > MAX_AIMD_RATE) return SL_EINVAL;
        if (a->decrease_ppm < 1 || a->decrease_ppm > 999999) return SL_EINVAL;
    }
    return SL_OK;
}

int sl_client_create(const sl_client_options *opts, sl_client **out) {
    if (!out) return SL_EINVAL;
    *out = NULL;
    sl_client_options o;
    if (opts)
        o = *opts;
    else
        sl_client_options_init(&o);
    int rc = validate(&o);
    if (rc) return rc;
    sl_client *c = calloc(1, sizeof *c);
    if (!c) return SL_ENOMEM;
    c->o = o;
    c->clock = o.clock ? o.clock : sl_clock_monotonic();
    sl__prng_seed(&c->prng, o.seed ? o.seed : sl__jitter_seed());
    c->backoff = (sl__backoff){o.backoff_base, o.backoff_factor_milli, o.max_wait};
    rc = sl__budget_init(&c->budget, o.budget_ppm, o.budget_reserve,
                         (o.flags & SL_CLIENT_NO_BUDGET) != 0);
    if (rc) return free(c), rc;
    if (o.user_agent) {
        c->user_agent = strdup(o.user_agent);
    } else {
        c->user_agent = malloc(64);
        if (c->user_agent) snprintf(c->user_agent, 64, "sluice-client/%s", SLUICE_VERSION);
    }
    c->o.user_agent = NULL; /* the copy above is what lives on */
    c->cur = sl__response_new();
    c->curl = curl_easy_init();
    if (!c->user_agent || !c->cur || !c->curl) {
        rc = c->curl || !c->user_agent || !c->cur ? SL_ENOMEM : SL_ETRANSFER;
        sl_client_destroy(c);
        return rc;
    }
    *out = c;
    return SL_OK;
}

void sl_client_destroy(sl_client *c) {
    if (!c) return;
    if (c->curl) curl_easy_cleanup(c->curl);
    sl__budget_free(&c->budget);
    sl__hosts_free(&c->hosts);
    sl_response_free(c->cur);
    free(c->user_agent);
    free(c);
}

const char *sl_client_errmsg(const sl_client *c) {
    return c->err;
}

void sl_client_stats_get(const sl_client *c, sl_client_stats *out) {
    *out = c->stats;
}

__attribute__((format(printf, 3, 4))) static int fail(sl_client *c, int code, const char *fmt,
                                                      ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return code;
}

/* "scheme://host:port" of an http(s) URL; SL_EINVAL for anything else. */
static int host_key(sl_client *c, const char *url, char *key, size_t size) {
    CURLU *u = curl_url();
    if (!u) return SL_ENOMEM;
    char *scheme = NULL, *host = NULL, *port = NULL;
    int rc = SL_OK;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
    if (uc != CURLUE_OK) {
        rc = fail(c, SL_EINVAL, "bad URL: %s", curl_url_strerror(uc));
    } else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
               curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
               curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        rc = fail(c, SL_EINVAL, "bad URL: %s", "no host");
    } else if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
        rc = fail(c, SL_EINVAL, "unsupported scheme '%s' (http and https only)", scheme);
    } else if ((size_t)snprintf(key, size, "%s://%s:%s", scheme, host, port) >= size) {
        rc = fail(c, SL_EINVAL, "bad URL: %s", "host name too long");
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return rc;
}

int64_t sl_client_host_rate(sl_client *c, const char *url) {
    char key[1100], err[sizeof c->err];
    memcpy(err, c->err, sizeof err); /* the message is about sl_client_do's failures */
    int rc = url ? host_key(c, url, key, sizeof key) : SL_EINVAL;
    memcpy(c->err, err, sizeof err);
    if (rc != SL_OK) return 0;
    sl__host *h = sl__hosts_get(&c->hosts, key, false);
    return h ? h->rate : 0;
}

static bool method_safe(const char *m) {
    /* safe to repeat: RFC 9110's idempotent methods (section 9.2.2), but
     * TRACE, which no one needs retried */
    static const char *const safe[] = {"GET", "HEAD", "OPTIONS", "PUT", "DELETE"};
    for (size_t i = 0; i < sizeof safe / sizeof *safe; i++)
        if (strcmp(m, safe[i]) == 0) return true;
    return false;
}

static bool has_idempotency_key(const char *const *headers) {
    static const char name[] = "Idempotency-Key:";
    for (; headers && *headers; headers++)
        if (strncasecmp(*headers, name, sizeof name - 1) == 0) return true;
    return false;
}

static int64_t now_of(const sl_client *c) {
    return c->clock->now(c->clock->ctx);
}

static void emit(xfer *x, sl_client_event_kind kind, int status, int64_t wait) {
    sl_client *c = x->c;
    if (!c->o.on_event) return;
    sl_client_event e = {
        .kind = kind,
        .url = x->req->url,
        .attempt = x->attempt,
        .status = status,
        .wait = wait,
        .hint = kind == SL_EVENT_PACE ? -1 : x->hint,
        .stop = kind == SL_EVENT_GIVE_UP ? x->stop : SL_STOP_DONE,
        .rate = x->host->rate,
    };
    c->o.on_event(c->o.event_ctx, &e);
}

static const char *field(void *ctx, const char *name) {
    return sl_response_header(ctx, name);
}

/* The final header block of an attempt has been read: adapt the host's rate
 * and pace to the answer, then decide whether it is retried and when. */
static void decide(xfer *x) {
    sl_client *c = x->c;
    sl_response *r = c->cur;
    sl__host *host = x->host;
    int64_t now = now_of(c);
    x->decided = true;
    x->decided_at = now;
    x->retry = false;
    x->hint = -1;
    x->stop = SL_STOP_DONE;

    /* The answer's Date is the reference for HTTP-date Retry-After and
     * timestamp resets: it cancels any skew between our clock and the
     * server's. */
    int64_t date;
    const char *d = sl_response_header(r, "Date");
    if (!d || sl_http_date_parse(d, strlen(d), &date) != SL_OK) date = sl_now();
    int64_t hint;
    const char *ra = sl_response_header(r, "Retry-After");
    if (ra && sl_retry_after_parse(ra, date, &hint) == SL_OK && hint > 0) x->hint = hint;

    if (host->pacer) {
        int64_t next = sl__aimd_next(&c->o.aimd, host->rate, r->status);
        if (next != host->rate &&
            sl_limiter_set_rate(host->pacer, (sl_rate){next, MILLI_PERIOD}, now) == SL_OK)
            host->rate = next;
    }
    if (c->o.flags & SL_CLIENT_PACE) {
        sl__quota q;
        sl__quota_read(field, r, date, &q);
        int64_t p = sl__quota_pace(&q);
        host->not_before = now + (p > c->o.max_wait ? c->o.max_wait : p);
    }

    if (r->status != 429 && r->status != 503) return;
    if (!x->safe) {
        x->stop = SL_STOP_UNSAFE;
        return;
    }
    if (x->attempt >= c->o.max_attempts) {
        x->stop = SL_STOP_ATTEMPTS;
        return;
    }
    if (x->hint > c->o.max_wait) {
        x->stop = SL_STOP_MAX_WAIT;
        return;
    }
    int64_t t = now + sl__retry_wait(&c->backoff, x->attempt, x->hint, &c->prng);
    if ((c->o.flags & SL_CLIENT_PACE) && host->not_before > t) t = host->not_before;
    if (x->deadline != SL_NO_DEADLINE && t >= x->deadline) {
        x->stop = SL_STOP_DEADLINE;
        return;
    }
    sl_reservation res = {.ok = false};
    if (host->pacer) {
        /* book the host's next slot for the moment the retry would go */
        int64_t max = x->deadline == SL_NO_DEADLINE ? -1 : x->deadline - t - 1;
        if (sl_limiter_reserve(host->pacer, 1, t, max, &res) != SL_OK) {
            x->stop = SL_STOP_DEADLINE;
            return;
        }
        t = res.time_to_act;
    }
    if (!sl__budget_take(&c->budget)) {
        c->stats.budget_refused++;
        if (res.ok) sl_limiter_cancel(host->pacer, &res, now);
        x->stop = SL_STOP_BUDGET;
        return;
    }
    x->retry = true;
    x->next_at = t;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud) {
    xfer *x = ud;
    size_t len = size * n;
    if (x->decided) return len; /* trailers */
    int rc = sl__response_header_line(x->c->cur, buf, len);
    if (rc < 0) {
        x->oom = true;
        return 0;
    }
    if (rc == 1) decide(x);
    return len;
}

static size_t on_write(char *buf, size_t size, size_t n, void *ud) {
    xfer *x = ud;
    sl_client *c = x->c;
    size_t len = size * n;
    if (!x->decided) decide(x); /* a body without a header block: cannot happen over HTTP/1+ */
    if (x->retry) return len;   /* drained, so the connection can be reused */
    if (x->req->on_body) {
        if (x->req->on_body(x->req->body_ctx, buf, len) != 0) {
            x->aborted = true;
            return 0;
        }
        return len;
    }
    if (sl__response_append(c->cur, buf, len, c->o.max_body) != 0) {
        x->too_big = true;
        return 0;
    }
    return len;
}

#define SETOPT(h, opt, val)                                                                        \
    do {                                                                                           \
        if (curl_easy_setopt(h, opt, val) != CURLE_OK) return SL_EINVAL;                           \
    } while (0)

/* Sets up the easy handle for one attempt. curl_easy_reset keeps the live
 * connections, so the next attempt reuses the connection of this one. */
static int setup(xfer *x, struct curl_slist *headers, int64_t now) {
    sl_client *c = x->c;
    CURL *h = c->curl;
    const sl_client_request *req = x->req;
    curl_easy_reset(h);
    c->curl_err[0] = '\0';
    SETOPT(h, CURLOPT_ERRORBUFFER, c->curl_err);
    SETOPT(h, CURLOPT_URL, req->url);
    SETOPT(h, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
    SETOPT(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    SETOPT(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    SETOPT(h, CURLOPT_USERAGENT, c->user_agent);
    SETOPT(h, CURLOPT_HTTPHEADER, headers);
    SETOPT(h, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    SETOPT(h, CURLOPT_HEADERFUNCTION, on_header);
    SETOPT(h, CURLOPT_HEADERDATA, x);
    SETOPT(h, CURLOPT_WRITEFUNCTION, on_write);
    SETOPT(h, CURLOPT_WRITEDATA, x);
    const char *m = x->method;
    bool head = strcmp(m, "HEAD") == 0;
    if (head) {
        SETOPT(h, CURLOPT_NOBODY, 1L); /* no body either way: a HEAD never sends one */
    } else if (strcmp(m, "POST") == 0) {
        SETOPT(h, CURLOPT_POST, 1L);
    } else if (strcmp(m, "GET") != 0) {
        SETOPT(h, CURLOPT_CUSTOMREQUEST, m);
    }
    if (!head && (req->body || strcmp(m, "POST") == 0)) {
        SETOPT(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        SETOPT(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        if (strcmp(m, "POST") != 0) SETOPT(h, CURLOPT_CUSTOMREQUEST, m);
    }
    if (x->deadline != SL_NO_DEADLINE) {
        int64_t left = x->deadline - now;
        if (left <= 0) return SL_EDEADLINE;
        SETOPT(h, CURLOPT_TIMEOUT_MS, (long)sl__ceil_ms(left));
    }
    if (c->o.connect_timeout > 0)
        SETOPT(h, CURLOPT_CONNECTTIMEOUT_MS, (long)sl__ceil_ms(c->o.connect_timeout));
    return SL_OK;
}

/* Waits for the host's pace before the first attempt: the slow-down time the
 * RateLimit fields asked for, and the AIMD pacer's next slot. */
static int pace(xfer *x) {
    sl_client *c = x->c;
    sl__host *host = x->host;
    int64_t now = now_of(c), t = now;
    if ((c->o.flags & SL_CLIENT_PACE) && host->not_before > t) t = host->not_before;
    if (x->deadline != SL_NO_DEADLINE && t >= x->deadline)
        return fail(c, SL_EDEADLINE, "%s", "the host's pace would exceed the deadline");
    if (host->pacer) {
        sl_reservation res;
        int64_t max = x->deadline == SL_NO_DEADLINE ? -1 : x->deadline - t - 1;
        int rc = sl_limiter_reserve(host->pacer, 1, t, max, &res);
        if (rc == SL_EDEADLINE)
            return fail(c, SL_EDEADLINE, "%s", "the host's pace would exceed the deadline");
        if (rc == SL_OK) t = res.time_to_act;
    }
    if (t > now) {
        x->attempt++; /* the event is about the attempt to come */
        emit(x, SL_EVENT_PACE, 0, t - now);
        x->attempt--;
        c->stats.paced++;
        c->stats.waited += t - now;
        c->clock->sleep_until(c->clock->ctx, t);
        c->cur->info.waited += t - now;
    }
    return SL_OK;
}

/* Creates the host's AIMD pacer on first use. */
static int host_ready(xfer *x, int64_t now) {
    sl_client *c = x->c;
    if (!(c->o.flags & SL_CLIENT_AIMD) || x->host->pacer) return SL_OK;
    int rc = sl_limiter_create((sl_rate){c->o.aimd.start, MILLI_PERIOD}, 1, 0, now < 0 ? 0 : now,
                               &x->host->pacer);
    if (rc) return fail(c, rc == SL_ENOMEM ? SL_ENOMEM : SL_EINVAL, "%s", sl_strerror(rc));
    x->host->rate = c->o.aimd.start;
    return SL_OK;
}

static int transfer_error(xfer *x, CURLcode cc) {
    sl_client *c = x->c;
    if (x->oom || cc == CURLE_OUT_OF_MEMORY) return fail(c, SL_ENOMEM, "%s", "out of memory");
    if (x->aborted) return fail(c, SL_ETRANSFER, "%s", "the body callback stopped the transfer");
    if (x->too_big) {
        char n[32];
        snprintf(n, sizeof n, "%zu", c->o.max_body);
        return fail(c, SL_ETRANSFER, "the body is larger than max_body (%s bytes)", n);
    }
    const char *why = c->curl_err[0] ? c->curl_err : curl_easy_strerror(cc);
    if (cc == CURLE_OPERATION_TIMEDOUT && x->deadline != SL_NO_DEADLINE)
        return fail(c, SL_EDEADLINE, "deadline reached: %s", why);
    if (cc == CURLE_URL_MALFORMAT || cc == CURLE_UNSUPPORTED_PROTOCOL)
        return fail(c, SL_EINVAL, "bad URL: %s", why);
    return fail(c, SL_ETRANSFER, "%s", why);
}

/* x's method, safety, host and deadline for its request, *t0 the time
 * they start from; 0, or the error (c->err written). The codes are spelt
 * out after fail(): the analyzer does not follow a variadic call, and x's
 * host is NULL on those paths. */
static int prepare(xfer *x, int64_t *t0) {
    sl_client *c = x->c;
    const sl_client_request *req = x->req;
    x->method = req->method ? req->method : (req->body ? "POST" : "GET");
    if (!*x->method || strpbrk(x->method, " \t\r\n")) {
        fail(c, SL_EINVAL, "bad method '%s'", x->method);
        return SL_EINVAL;
    }
    x->safe = method_safe(x->method) || has_idempotency_key(req->headers) ||
              ((req->flags | c->o.flags) & SL_CLIENT_RETRY_UNSAFE);
    char key[1100];
    int rc = host_key(c, req->url, key, sizeof key);
    if (rc) return rc;
    if (!(x->host = sl__hosts_get(&c->hosts, key, true))) {
        fail(c, SL_ENOMEM, "%s", "out of memory");
        return SL_ENOMEM;
    }
    *t0 = now_of(c);
    int64_t timeout = req->timeout > 0 ? req->timeout : c->o.timeout;
    if (timeout < 0) {
        fail(c, SL_EINVAL, "%s", "negative timeout");
        return SL_EINVAL;
    }
    x->deadline = timeout > 0 && timeout <= MAX_DURATION ? *t0 + timeout : SL_NO_DEADLINE;
    return host_ready(x, *t0);
}

/* The request's extra header lines as curl's list (*out, NULL for none;
 * the caller frees it); 0, or SL_ENOMEM with nothing to free. */
static int header_list(sl_client *c, const char *const *hs, struct curl_slist **out) {
    struct curl_slist *headers = NULL;
    for (const char *const *h = hs; h && *h; h++) {
        struct curl_slist *n = curl_slist_append(headers, *h);
        if (!n) {
            curl_slist_free_all(headers);
            return fail(c, SL_ENOMEM, "%s", "out of memory");
        }
        headers = n;
    }
    *out = headers;
    return 0;
}

/* The attempts of x, until an answer that is not retried: 0, or the error
 * (c->err written). *waited grows by the time slept between attempts. */
static int attempts(xfer *x, struct curl_slist *headers, int64_t *waited) {
    sl_client *c = x->c;
    for (;;) {
        x->attempt++;
        x->decided = x->retry = x->too_big = x->aborted = x->oom = false;
        x->hint = -1;
        sl__response_reset(c->cur);
        int rc = setup(x, headers, now_of(c));
        if (rc) {
            if (rc == SL_EDEADLINE) fail(c, rc, "%s", "deadline reached");
            if (rc == SL_EINVAL) fail(c, rc, "%s", "libcurl refused an option");
            return rc;
        }
        c->stats.attempts++;
        if (x->attempt > 1) c->stats.retries++;
        CURLcode cc = curl_easy_perform(c->curl);
        if (!x->decided && cc == CURLE_OK) {
            long code = 0;
            curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
            c->cur->status = (int)code;
            decide(x);
        }
        /* A retried answer whose drained body broke off is still a 429: go
         * on, unless the deadline is what broke it. */
        bool broke = cc != CURLE_OK && !(x->retry && cc != CURLE_OPERATION_TIMEDOUT);
        if (broke || !x->decided) return transfer_error(x, cc == CURLE_OK ? CURLE_RECV_ERROR : cc);
        if (!x->retry) return 0;
        emit(x, SL_EVENT_RETRY, c->cur->status, x->next_at - x->decided_at);
        int64_t now = now_of(c);
        if (x->next_at > now) {
            c->clock->sleep_until(c->clock->ctx, x->next_at);
            *waited += x->next_at - now;
            c->stats.waited += x->next_at - now;
        }
    }
}

int sl_client_do(sl_client *c, const sl_client_request *req, sl_response **out) {
    if (!c || !out) return SL_EINVAL;
    *out = NULL;
    c->err[0] = '\0';
    if (!req || !req->url) return fail(c, SL_EINVAL, "%s", "no URL");
    if (req->flags & ~SL_CLIENT_RETRY_UNSAFE) return fail(c, SL_EINVAL, "%s", "unknown flags");
    if (!c->cur && !(c->cur = sl__response_new())) return fail(c, SL_ENOMEM, "%s", "out of memory");
    sl__response_reset(c->cur);

    xfer x = {.c = c, .req = req, .hint = -1};
    int64_t t0 = 0; /* set by prepare on success */
    int rc = prepare(&x, &t0);
    if (rc) return rc;
    struct curl_slist *headers = NULL;
    if ((rc = header_list(c, req->headers, &headers))) return rc;

    if ((rc = pace(&x))) goto done;
    int64_t waited = c->cur->info.waited;
    c->stats.requests++;
    sl__budget_request(&c->budget);
    if ((rc = attempts(&x, headers, &waited))) goto done;
    sl_response *r = c->cur;
    r->info = (sl_response_info){.status = r->status,
                                 .attempts = x.attempt,
                                 .waited = waited,
                                 .elapsed = now_of(c) - t0,
                                 .stop = x.stop};
    if (x.stop != SL_STOP_DONE) emit(&x, SL_EVENT_GIVE_UP, r->status, 0);
    c->cur = NULL;
    *out = r;
    rc = SL_OK;
done:
    curl_slist_free_all(headers);
    return rc;
}

int sl_client_get(sl_client *c, const char *url, sl_response **out) {
    sl_client_request req = {.url = url};
    return sl_client_do(c, &req, out);
}
