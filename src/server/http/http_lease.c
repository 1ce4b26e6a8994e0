/* http_lease.c: the HTTP routes of concurrency limits (docs/http-api.md,
 * docs/protection.md): POST /v1/acquire?policy=P&key=K,
 * POST /v1/release?policy=P&key=K&lease=ID and POST /v1/renew (same
 * parameters). Each starts one lease operation through the worker's
 * decider (policy/lease_set.h) and writes its answer in done, inline or in
 * the place reserved among the connection's answers (server/reply.h). */
#include "server/http/http_lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/lease_set.h"
#include "server/http/http.h"
#include "server/reply.h"
#include "policy/decide.h"
#include "policy/policy.h"
#include "server/request.h"
#include "sluice/error.h"
#include "util/units.h"

#define KEY_MAX 1024 /* as /v1/check */

typedef struct lease_ctx {
    sl__reply reply;
    sl__lease_call call;
    bool keep;
    sl__policy_set *set; /* held: the limit lives until done */
    char key[];          /* the key's bytes */
} lease_ctx;

static bool path_is(const sl__http_request *r, const char *p) {
    size_t n = strlen(p);
    return r->path_len == n && memcmp(r->path, p, n) == 0;
}

static void send_json(sl__buf *out, bool keep, int status, const sl__buf *body, const char *retry) {
    sl__http_begin(out, status);
    if (retry) sl__http_header_line(out, "Retry-After", retry);
    sl__http_header_line(out, "Cache-Control", "no-store");
    sl__http_end(out, keep, "application/json", body->data, body->len);
}

static void send_error(sl__buf *out, bool keep, int status, const char *code, const char *msg) {
    sl__buf b;
    sl__buf_init(&b);
    sl__http_error_json(&b, code, msg);
    send_json(out, keep, status, &b, NULL);
    sl__buf_free(&b);
}

/* 1 to 3600000 (an hour), digits only, into ns. */
static bool parse_ms(const char *s, size_t n, int64_t *out) {
    if (n < 1 || n > 7) return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > 3600000) return false;
    *out = v * SL_NS_PER_MS;
    return true;
}

static void put_fallback(sl__buf *b, sl__store_from from) {
    const char *name = sl__store_fallback_name(from);
    if (name) sl__buf_printf(b, ",\"fallback\":\"%s\"", name);
}

static void write_acquire(sl__buf *out, bool keep, const sl__lease_call *c) {
    const sl_acquire *a = &c->acq;
    if (c->rc != SL_OK && c->rc != SL_ENOMEM) {
        send_error(out, keep, c->rc == SL_EKEY ? 400 : 500, "internal", sl_strerror(c->rc));
        return;
    }
    sl__buf b;
    sl__buf_init(&b);
    sl__buf_printf(&b, "{\"allowed\":%s,\"policy\":", a->acquired ? "true" : "false");
    sl__http_json_string(&b, c->limit->name, strlen(c->limit->name));
    if (a->acquired)
        sl__buf_printf(&b, ",\"lease\":\"%016llx\",\"lease_ms\":%lld",
                       (unsigned long long)a->lease.id,
                       (long long)sl__ceil_ms(a->lease.expires - c->now));
    sl__buf_printf(&b,
                   ",\"limit\":%lld,\"remaining\":%lld,\"in_flight\":%lld,\"retry_after_ms\":%lld",
                   (long long)a->limit, (long long)a->remaining, (long long)a->in_flight,
                   (long long)(a->acquired ? 0 : sl__ceil_ms(a->retry_after)));
    if (c->rc == SL_ENOMEM) sl__buf_puts(&b, ",\"full\":true");
    put_fallback(&b, c->from);
    sl__buf_puts(&b, "}");
    char retry[24];
    int64_t secs = (a->retry_after + SL_NS_PER_SEC - 1) / SL_NS_PER_SEC;
    snprintf(retry, sizeof retry, "%lld", (long long)(secs < 1 ? 1 : secs));
    if (b.failed)
        send_error(out, keep, 500, "internal", "out of memory");
    else
        send_json(out, keep, a->acquired ? 200 : 429, &b, a->acquired ? NULL : retry);
    sl__buf_free(&b);
}

static void write_unknown(sl__buf *out, bool keep, const sl__lease_call *c) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "no lease %016llx held for this key by policy %s (never acquired, already released, "
             "or expired)",
             (unsigned long long)c->id, c->limit->name);
    send_error(out, keep, 404, "unknown_lease", msg);
}

static void write_release(sl__buf *out, bool keep, const sl__lease_call *c) {
    bool failed = c->from != SL__FROM_REDIS;
    if (c->rc == SL_ELEASE && !failed) return write_unknown(out, keep, c);
    if (c->rc != SL_OK && c->rc != SL_ELEASE) {
        send_error(out, keep, c->rc == SL_EKEY ? 400 : 500, "internal", sl_strerror(c->rc));
        return;
    }
    sl__buf b;
    sl__buf_init(&b);
    bool done = c->rc == SL_OK;
    if (c->op == SL__LEASE_RELEASE)
        sl__buf_printf(&b, "{\"released\":%s,\"policy\":", done ? "true" : "false");
    else
        sl__buf_printf(&b, "{\"renewed\":%s,\"policy\":", done ? "true" : "false");
    sl__http_json_string(&b, c->limit->name, strlen(c->limit->name));
    if (c->op == SL__LEASE_RENEW && done)
        sl__buf_printf(&b, ",\"lease\":\"%016llx\",\"lease_ms\":%lld", (unsigned long long)c->id,
                       (long long)sl__ceil_ms(c->lease.expires - c->now));
    if (c->op == SL__LEASE_RELEASE && c->in_flight >= 0)
        sl__buf_printf(&b, ",\"in_flight\":%lld", (long long)c->in_flight);
    put_fallback(&b, c->from);
    sl__buf_puts(&b, "}");
    if (b.failed)
        send_error(out, keep, 500, "internal", "out of memory");
    else
        send_json(out, keep, 200, &b, NULL);
    sl__buf_free(&b);
}

static void lease_done(sl__lease_call *c) {
    lease_ctx *x = c->arg;
    sl__lease_count(c);
    sl__buf *out = sl__reply_out(&x->reply);
    bool keep = sl__reply_keep(&x->reply, x->keep);
    if (c->op == SL__LEASE_ACQUIRE)
        write_acquire(out, keep, c);
    else
        write_release(out, keep, c);
    sl__reply_end(&x->reply);
    sl__policy_set_release(x->set);
    free(x);
}

/* A lease route's query parameters, read and checked. */
typedef struct lease_args {
    char name[SL__POLICY_NAME_MAX + 2];
    size_t name_len;
    char key[KEY_MAX + 1];
    size_t key_len;
    uint64_t id;     /* release, renew: the lease */
    int64_t latency; /* release: latency_ms in ns, 0 when not given */
} lease_args;

/* 405 to anything but POST (HEAD: its headers only). */
static void refuse_method(const sl__http_request *r, sl__buf *out, bool keep) {
    sl__buf b;
    sl__buf_init(&b);
    sl__http_error_json(&b, "method_not_allowed", "this endpoint does not take that method");
    sl__http_begin(out, 405);
    sl__http_header_line(out, "Allow", "POST");
    sl__http_end(out, keep, "application/json", b.data, b.len);
    if (r->method == SL__HTTP_HEAD) out->len -= b.len; /* the headers only */
    sl__buf_free(&b);
}

/* policy= and key= (every route), lease= (release, renew), latency_ms=
 * (release, optional) into *a; false after writing the 400. */
static bool read_args(const sl__http_request *r, sl__lease_op op, lease_args *a, sl__buf *out,
                      bool keep) {
    long n = sl__http_query_param(r->query, r->query_len, "policy", a->name, sizeof a->name);
    if (n == -1) {
        send_error(out, keep, 400, "missing_policy", "the policy parameter is required");
        return false;
    }
    if (n < 0 || n > SL__POLICY_NAME_MAX) {
        send_error(out, keep, 400, "bad_policy",
                   "the policy parameter is malformed (a bad %-escape, or %00) or longer than 63 "
                   "bytes");
        return false;
    }
    a->name_len = (size_t)n;
    long k = sl__http_query_param(r->query, r->query_len, "key", a->key, sizeof a->key);
    if (k < 0) {
        if (k == -1)
            send_error(out, keep, 400, "missing_key", "the key parameter is required");
        else
            send_error(out, keep, 400, "bad_key",
                       "the key parameter is malformed (a bad %-escape, or %00: a key cannot "
                       "contain NUL) or longer than 1024 bytes");
        return false;
    }
    a->key_len = (size_t)k;
    a->id = 0;
    if (op != SL__LEASE_ACQUIRE) {
        char idbuf[24];
        long m = sl__http_query_param(r->query, r->query_len, "lease", idbuf, sizeof idbuf);
        if (m < 0 || !sl__lease_id_parse(idbuf, (size_t)m, &a->id)) {
            send_error(out, keep, 400, m == -1 ? "missing_lease" : "bad_lease",
                       "the lease parameter is required: the id /v1/acquire answered (1 to 16 "
                       "hex digits)");
            return false;
        }
    }
    a->latency = 0;
    if (op == SL__LEASE_RELEASE) {
        char lbuf[24];
        long m = sl__http_query_param(r->query, r->query_len, "latency_ms", lbuf, sizeof lbuf);
        if (m == -2 || (m >= 0 && !parse_ms(lbuf, (size_t)m, &a->latency))) {
            send_error(out, keep, 400, "bad_latency",
                       "latency_ms must be a whole number of milliseconds from 1 to 3600000");
            return false;
        }
    }
    return true;
}

/* The concurrency limit a names; NULL after writing the 400 (a rate limit
 * of that name) or 404. */
static sl__lease_limit *find_limit(const sl__request_ctx *rq, const lease_args *a, sl__buf *out,
                                   bool keep) {
    sl__lease_limit *l =
        sl__lease_set_find(sl__policy_set_leases(rq->policies), a->name, a->name_len);
    if (l) return l;
    char msg[160];
    bool rate = sl__policy_find(rq->policies, a->name, a->name_len) != NULL;
    snprintf(msg, sizeof msg,
             rate ? "policy \"%s\" is a rate limit, not a concurrency limit: use /v1/check"
                  : "no concurrency limit named \"%s\"",
             a->name);
    send_error(out, keep, rate ? 400 : 404, rate ? "not_a_concurrency_limit" : "unknown_policy",
               msg);
    return NULL;
}

bool sl__http_lease_handle(const sl__request_ctx *rq, const sl__http_request *r, sl__buf *out,
                           bool keep) {
    sl__lease_op op = path_is(r, "/v1/acquire")   ? SL__LEASE_ACQUIRE
                      : path_is(r, "/v1/release") ? SL__LEASE_RELEASE
                                                  : SL__LEASE_RENEW;
    if (r->method != SL__HTTP_POST) {
        refuse_method(r, out, keep);
        return keep;
    }
    lease_args a;
    if (!read_args(r, op, &a, out, keep)) return keep;
    sl__lease_limit *l = find_limit(rq, &a, out, keep);
    if (!l) return keep;
    lease_ctx *x = malloc(sizeof *x + a.key_len + 1);
    if (!x) {
        send_error(out, keep, 500, "internal", "out of memory");
        return keep;
    }
    memset(x, 0, sizeof *x);
    memcpy(x->key, a.key, a.key_len + 1);
    x->keep = keep;
    x->set = rq->policies;
    sl__policy_set_retain(x->set);
    x->call = (sl__lease_call){.op = op,
                               .limit = l,
                               .key = x->key,
                               .keylen = a.key_len,
                               .id = a.id,
                               .latency = a.latency,
                               .now = rq->now,
                               .done = lease_done,
                               .arg = x};
    bool answered;
    sl__reply_begin(&x->reply, rq->slot, out, &answered);
    sl__lease_start(rq->decider, &x->call);
    if (!answered && !sl__reply_wait(&x->reply))
        send_error(out, keep, 500, "internal", "out of memory");
    return keep;
}
