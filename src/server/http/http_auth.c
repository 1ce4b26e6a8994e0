/* http_auth.c: GET /v1/auth, the decision endpoint for nginx's auth_request
 * (docs/nginx.md). nginx sends a subrequest carrying the original request's
 * headers plus the original method, URI and client address in headers of its
 * own (X-Original-Method, X-Original-URI, X-Real-IP by default); the request
 * rules (policy/rules.h) decide it, and the answer is:
 *
 *   200  allowed (or exempt): RateLimit-Policy / RateLimit list every
 *        enforced limit that applied; X-RateLimit-* and Sluice-Limit describe
 *        the one closest to refusing
 *   403  limited: the same fields, Retry-After, and Sluice-Limit naming the
 *        limit that refused (auth_request only passes 401 and 403 on; the
 *        nginx config turns this 403 into a 429)
 *   401  unknown API key, or none when one is required, once the limits
 *        that need no key (the per-IP fence) have passed: they are decided
 *        and charged first, and a 403 when they refuse
 *   400  the subrequest lacks what the rules need (nginx answers 500)
 *   500  an internal error
 *
 * The rules' answer lives on this stack frame; the engine call (one
 * allocation) copies the keys. When the decision does not complete inline
 * (the Redis store), the answer is copied to the heap until it has (its
 * keys in the arena are not used after preparing).
 *
 * An allowed answer that a leaky queue with `hold:` delayed waits for its
 * release time in the worker's hold (server/hold.h, http_hold.h), its
 * place reserved, the call and the policy set kept until it is written;
 * a closed connection cancels it. One done (auth_done) completes every
 * decided request, as in the other handlers: when it runs inline and holds
 * the answer, it moves the answer to the heap and reserves its place
 * itself (auth_reserve); the handler only reserves for a done that comes
 * later. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "policy/decide.h"
#include "policy/rules.h"
#include "policy/policy.h"
#include "policy/retry_stage.h"
#include "server/http/http.h"
#include "server/http/http_api.h"
#include "server/http/http_auth.h"
#include "server/http/http_hold.h"
#include "server/http/http_retry.h"
#include "server/hold.h"
#include "server/request.h"
#include "sluice/error.h"
#include "util/units.h"

#define SF_INT_MAX INT64_C(999999999999999)
#define FIELD_MAX  4096 /* one RateLimit-Policy or RateLimit value */

/* A small bounded writer for field values: at most cap - 1 bytes and a NUL
 * (cap > 0); what does not fit is dropped. */
typedef struct fw {
    char *p;
    size_t n, cap;
} fw;

static void fw_mem(fw *w, const char *s, size_t n) {
    size_t room = w->cap - 1 - w->n;
    if (n > room) n = room;
    for (size_t i = 0; i < n; i++) w->p[w->n + i] = s[i];
    w->n += n;
    w->p[w->n] = '\0';
}

static void fw_str(fw *w, const char *s) {
    fw_mem(w, s, strlen(s));
}

static void fw_u64(fw *w, uint64_t v) {
    char out[SL__DECIMAL_MAX];
    fw_mem(w, out, sl__decimal_u64(out, v));
}

static uint64_t sf_int(int64_t v) {
    return v < 0 ? 0 : v > SF_INT_MAX ? (uint64_t)SF_INT_MAX : (uint64_t)v;
}

/* The policy's name as configured (a tier variant "api:pro" shows as "api"),
 * as an sf-string: names are [a-z0-9_.-], nothing to escape. */
static void fw_name(fw *w, const sl__policy *p) {
    fw_mem(w, "\"", 1);
    fw_mem(w, p->cfg.name, p->base_len);
    fw_mem(w, "\"", 1);
}

/* Whether item i is reported to the client: decided, enforced (a shadow
 * limit is a dry run: never shown), and the first item of its policy. */
static bool shown(const sl__rules_answer *a, size_t i) {
    const sl__policy_item *it = &a->items[i];
    if (!it->decided || it->shadow || atomic_load(&it->policy->lim.shadow)) return false;
    for (size_t j = 0; j < i; j++)
        if (a->items[j].policy == it->policy && a->items[j].decided && !a->items[j].shadow)
            return false;
    return true;
}

static void write_limits(sl__buf *out, const sl__rules_answer *a, bool limited, size_t bind,
                         int64_t now) {
    char pol[FIELD_MAX], st[FIELD_MAX];
    fw wp = {pol, 0, sizeof pol}, ws = {st, 0, sizeof st};
    pol[0] = st[0] = '\0';
    for (size_t i = 0; i < a->n; i++) {
        if (!shown(a, i)) continue;
        const sl__policy_item *it = &a->items[i];
        const sl_decision *d = &it->decision;
        uint64_t q, w;
        sl__policy_quota(it->policy, now, &q, &w);
        if (wp.n) fw_str(&wp, ", ");
        fw_name(&wp, it->policy);
        fw_str(&wp, ";q=");
        fw_u64(&wp, q);
        fw_str(&wp, ";w=");
        fw_u64(&wp, w);
        fw_str(&wp, ";sluice-rate=\"");
        fw_str(&wp, it->policy->rate_text); /* the policy layer's, as /v1/check's */
        fw_str(&wp, "\"");
        int64_t t = sl__ceil_s(d->reset_after);
        if (!d->allowed && d->retry_after >= 0) {
            t = sl__ceil_s(d->retry_after);
            if (t < 1) t = 1;
        }
        if (ws.n) fw_str(&ws, ", ");
        fw_name(&ws, it->policy);
        fw_str(&ws, ";r=");
        fw_u64(&ws, sf_int(d->remaining));
        fw_str(&ws, ";t=");
        fw_u64(&ws, sf_int(t));
    }
    if (wp.n) {
        sl__http_header_line(out, "RateLimit-Policy", pol);
        sl__http_header_line(out, "RateLimit", st);
    }
    if (bind < a->n) {
        const sl__policy_item *it = &a->items[bind];
        const sl_decision *d = &it->decision;
        char num[24], name[SL__POLICY_NAME_MAX + 1];
        snprintf(num, sizeof num, "%lld", (long long)(d->limit > 0 ? d->limit : 0));
        sl__http_header_line(out, "X-RateLimit-Limit", num);
        snprintf(num, sizeof num, "%lld", (long long)(d->remaining > 0 ? d->remaining : 0));
        sl__http_header_line(out, "X-RateLimit-Remaining", num);
        snprintf(num, sizeof num, "%lld", (long long)sl__ceil_s(d->reset_after));
        sl__http_header_line(out, "X-RateLimit-Reset", num);
        snprintf(name, sizeof name, "%.*s", (int)it->policy->base_len, it->policy->cfg.name);
        sl__http_header_line(out, "Sluice-Limit", name);
    }
    if (limited) {
        /* Retry-After: when every enforced limit that said no would say yes
         * (the longest wait among them), whole seconds rounded up, >= 1. */
        int64_t retry = -1;
        for (size_t i = 0; i < a->n; i++) {
            const sl__policy_item *it = &a->items[i];
            if (it->decided && !it->shadowed && !it->decision.allowed &&
                it->decision.retry_after > retry)
                retry = it->decision.retry_after;
        }
        if (retry >= 0) {
            char num[24];
            int64_t s = sl__ceil_s(retry);
            snprintf(num, sizeof num, "%lld", (long long)(s < 1 ? 1 : s));
            sl__http_header_line(out, "Retry-After", num);
        }
    }
    /* shadow limits that would have refused: for the proxy's access log */
    char sh[FIELD_MAX];
    fw wsh = {sh, 0, sizeof sh};
    sh[0] = '\0';
    for (size_t i = 0; i < a->n; i++) {
        if (!a->items[i].shadowed) continue;
        if (wsh.n) fw_str(&wsh, ", ");
        fw_mem(&wsh, a->items[i].policy->cfg.name, a->items[i].policy->base_len);
    }
    if (wsh.n) sl__http_header_line(out, "Sluice-Shadow-Limited", sh);
}

/* The limit the X-RateLimit fields, Sluice-Limit and the body describe: the
 * one that refused, or the shown one with the fewest requests left. */
static size_t binding(const sl__rules_answer *a, bool limited) {
    if (limited && a->refused < a->n) return a->refused;
    size_t bind = a->n;
    for (size_t i = 0; i < a->n; i++)
        if (shown(a, i) &&
            (bind == a->n || a->items[i].decision.remaining < a->items[bind].decision.remaining))
            bind = i;
    return bind;
}

static void fw_i64(fw *w, int64_t v) {
    if (v < 0) {
        fw_str(w, "-");
        fw_u64(w, v == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-v);
    } else {
        fw_u64(w, (uint64_t)v);
    }
}

static int64_t ms_up(int64_t ns) {
    return ns < 0 ? -1 : ns / SL_NS_PER_MS + (ns % SL_NS_PER_MS != 0);
}

/* A JSON string of static ASCII text (codes and messages of this file and
 * the rules): quotes, backslashes and control characters escaped anyway. */
static void fw_json_text(fw *w, const char *s) {
    fw_str(w, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            fw_mem(w, e, 2);
        } else if (c < 0x20 || c >= 0x7f) {
            fw_str(w, "?");
        } else {
            fw_mem(w, (const char *)&c, 1);
        }
    }
    fw_str(w, "\"");
}

/* The body, without allocating: the decision of the binding limit in
 * /v1/check's form, {"allowed":true[,"exempt":"..."]} without one, or an
 * error. */
/* POST /v1/graphql by rules (http_graphql.c): the query's cost. */
static void query_cost(fw *w, const sl__rules_answer *a) {
    if (!a->query_costed) return;
    fw_str(w, ",\"cost\":");
    fw_u64(w, a->query_cost.points);
    fw_str(w, ",\"objects\":");
    fw_u64(w, a->query_cost.objects);
    fw_str(w, ",\"requests\":");
    fw_u64(w, a->query_cost.requests);
}

static void json_answer(fw *w, const sl__rules_answer *a, size_t bind, int status) {
    if (status != 200 && status != 403) {
        fw_str(w, "{\"error\":");
        fw_json_text(w, a->reason ? a->reason : "internal");
        fw_str(w, ",\"message\":");
        fw_json_text(w, a->message ? a->message : "");
        query_cost(w, a);
        fw_str(w, "}");
        return;
    }
    if (bind >= a->n) {
        fw_str(w, "{\"allowed\":true");
        if (a->verdict == SL__VERDICT_EXEMPT) {
            fw_str(w, ",\"exempt\":");
            fw_json_text(w, a->reason);
        }
        query_cost(w, a);
        fw_str(w, "}");
        return;
    }
    const sl__policy_item *it = &a->items[bind];
    const sl_decision *d = &it->decision;
    fw_str(w, d->allowed ? "{\"allowed\":true,\"limit\":" : "{\"allowed\":false,\"limit\":");
    fw_i64(w, d->limit);
    fw_str(w, ",\"remaining\":");
    fw_i64(w, d->remaining);
    fw_str(w, ",\"retry_after_ms\":");
    fw_i64(w, ms_up(d->retry_after));
    fw_str(w, ",\"reset_after_ms\":");
    fw_i64(w, ms_up(d->reset_after));
    if (d->delay > 0) {
        fw_str(w, ",\"delay_ms\":");
        fw_i64(w, ms_up(d->delay));
    }
    fw_str(w, ",\"policy\":");
    fw_name(w, it->policy);
    if (a->tier_name) {
        fw_str(w, ",\"tier\":\"");
        fw_str(w, a->tier_name);
        fw_str(w, "\"");
    }
    if (status == 403 && a->reason && !strcmp(a->reason, "cost_exceeds_limit")) {
        /* retry_after_ms is -1 ("never"): say why, as /v1/check's 400 does */
        fw_str(w, ",\"error\":");
        fw_json_text(w, a->reason);
        fw_str(w, ",\"message\":");
        fw_json_text(w, a->message);
    }
    query_cost(w, a);
    fw_str(w, "}");
}

/* The answer for a decided (or refused before any limit) request. */
static void write_auth(sl__buf *out, sl__rules_answer *a, bool keep, bool head, int64_t now,
                       sl__store_from from) {
    int status;
    switch (a->verdict) {
    case SL__VERDICT_ALLOW:
    case SL__VERDICT_EXEMPT:
        status = 200;
        break;
    case SL__VERDICT_LIMITED:
        status = 403;
        break;
    case SL__VERDICT_UNAUTHORIZED:
        status = 401;
        break;
    case SL__VERDICT_BAD_REQUEST: /* a GraphQL query over max_cost: 413, as by policy */
        status = a->reason && strcmp(a->reason, "query_too_costly") == 0 ? 413 : 400;
        break;
    default:
        status = 500;
        break;
    }
    bool limited = status == 403;
    size_t bind = binding(a, limited);
    char body[640];
    fw wb = {body, 0, sizeof body};
    body[0] = '\0';
    json_answer(&wb, a, bind, status);

    sl__http_begin(out, status);
    if (status == 200 || status == 403) write_limits(out, a, limited, bind, now);
    if (a->verdict == SL__VERDICT_EXEMPT) sl__http_header_line(out, "Sluice-Exempt", a->reason);
    if (status == 401) sl__http_header_line(out, "WWW-Authenticate", "Bearer realm=\"sluice\"");
    const char *fallback = sl__store_fallback_name(from);
    if (fallback) sl__http_header_line(out, "Sluice-Fallback", fallback);
    sl__http_header_line(out, "Cache-Control", "no-store");
    sl__http_end(out, keep, "application/json", body, wb.n);
    if (head) out->len -= wb.n;
}

/* Counts a request whose API key was refused (unknown, or missing where
 * required), whether the fence then refused it (403) or not (401). */
static void count_key_refusal(sl__worker_stats *st, const sl__rules_answer *a) {
    if (!st) return;
    if (a->key_refused == SL__KEY_UNKNOWN)
        atomic_fetch_add_explicit(&st->unknown_keys, 1, memory_order_relaxed);
    else if (a->key_refused == SL__KEY_MISSING)
        atomic_fetch_add_explicit(&st->missing_keys, 1, memory_order_relaxed);
}

/* /v1/auth: the rules' answer and where it goes, kept with the engine
 * call (its keys live in the call, its arena only while preparing). */
typedef struct auth_ctx {
    sl__reply reply;
    bool keep, head;
    int64_t now;
    sl__rules_answer *a; /* the handler's, or a heap copy once waiting */
    bool heap;
    /* held answers (http_hold.h) */
    sl__hold *hold;          /* the worker's, or NULL: never held */
    sl__policy_set *set;     /* the request's: retained while held */
    bool *ran;               /* the handler's flag while it starts the decision: done ran */
    sl__decide_call *call;   /* the call (its keys, the answer's place) */
    sl__worker_stats *stats; /* the worker's (held, released, ...), or NULL */
    sl__hold_item *held;
    sl__retry_stage retry; /* a limit's retry_budget:, before the decision */
} auth_ctx;

/* The whole answer of an internal error: every field the writers read is
 * set (an answer on the stack is not zeroed). */
static void auth_error(sl__rules_answer *a, const char *message) {
    a->verdict = SL__VERDICT_ERROR;
    a->reason = "internal";
    a->message = message;
    a->n = a->refused = 0;
    a->query_costed = false;
}

/* The answer moves off the handler's frame (done comes later, or holds it
 * past the handler): a heap copy without the keys (the call has them);
 * ac->a NULL when there is no memory for it (done answers an error). */
static void auth_keep(auth_ctx *ac) {
    sl__rules_answer *copy = malloc(sizeof *copy);
    if (copy) {
        memcpy(copy, ac->a, sizeof *copy);
        copy->arena = NULL;
        for (size_t i = 0; i < copy->n; i++) copy->items[i].key = NULL;
    }
    ac->a = copy;
    ac->heap = copy != NULL;
}

/* No memory to keep the answer: an internal error is the answer. */
static void auth_oom(auth_ctx *ac, sl__decide_call *c) {
    sl__rules_answer e;
    auth_error(&e, "out of memory");
    write_auth(sl__reply_out(&ac->reply), &e, sl__reply_keep(&ac->reply, ac->keep), ac->head,
               ac->now, c->from);
    sl__reply_end(&ac->reply);
    sl__decide_call_free(c);
}

/* Writes the answer where it goes and frees what the request kept. */
static void auth_finish(auth_ctx *ac, sl__decide_call *c) {
    write_auth(sl__reply_out(&ac->reply), ac->a, sl__reply_keep(&ac->reply, ac->keep), ac->head,
               ac->now, c->from);
    sl__reply_end(&ac->reply);
    if (ac->heap) free(ac->a);
    if (ac->held) sl__policy_set_release(ac->set);
    sl__decide_call_free(c);
}

/* Counts in the worker's held answers (stats.h). */
#define HOLD_COUNT(ac, field)                                                                      \
    do {                                                                                           \
        if ((ac)->stats) sl__counter_add(&(ac)->stats->field, 1);                                  \
    } while (0)

/* The hold's release: the answer's time came. */
static void auth_release(void *arg) {
    auth_ctx *ac = arg;
    HOLD_COUNT(ac, held_released);
    auth_finish(ac, ac->call);
}

/* Its connection closed while held: nothing is written. */
static void auth_cancel(void *arg) {
    auth_ctx *ac = arg;
    HOLD_COUNT(ac, held_cancelled);
    sl__hold_cancel(ac->hold, ac->held);
    if (ac->heap) free(ac->a);
    sl__policy_set_release(ac->set);
    sl__decide_call_free(ac->call);
}

/* Holds the allowed answer (its place reserved) until item i's release
 * time, or refuses it at once when the hold is full. */
static void auth_hold(auth_ctx *ac, sl__decide_call *c, size_t i, int64_t delay) {
    const char *tenant;
    size_t tlen;
    sl__http_hold_tenant(ac->a, &tenant, &tlen);
    /* the queue: the policy's name, a NUL, its key (copied by the hold) */
    size_t nlen = strlen(ac->a->items[i].policy->cfg.name), klen = c->items[i].keylen;
    char small[256], *group = nlen + 1 + klen <= sizeof small ? small : malloc(nlen + 1 + klen);
    if (group) {
        memcpy(group, ac->a->items[i].policy->cfg.name, nlen + 1);
        memcpy(group + nlen + 1, c->items[i].key, klen);
    }
    sl__hold_entry e = {.group = group,
                        .group_len = nlen + 1 + klen,
                        .tenant = tenant,
                        .tenant_len = tlen,
                        .weight = sl__http_hold_weight(ac->a, i),
                        .release = ac->now + delay,
                        .per_tenant = sl__http_hold_per_tenant(ac->a, i),
                        .fn = auth_release,
                        .arg = ac};
    ac->call = c;
    bool held = group && sl__reply_on_close(&ac->reply, auth_cancel, ac) &&
                sl__hold_push(ac->hold, &e, &ac->held) == 0;
    if (group != small) free(group);
    if (held) {
        sl__policy_set_retain(ac->set);
        HOLD_COUNT(ac, held);
        return;
    }
    sl__reply_on_close(&ac->reply, NULL, NULL);
    HOLD_COUNT(ac, held_refused);
    sl__http_hold_refuse(ac->a, i, delay);
    auth_finish(ac, c);
}

/* The server's capacity shed the request (shedding:, decided by the
 * engine with its limits): 403 with Sluice-Shed: 1 and Retry-After
 * (nginx's auth_request turns a 503 into a 500: the recipe maps this 403
 * to 503), counted for the first limit's policy. */
static void auth_shed(auth_ctx *ac, sl__decide_call *c) {
    sl_priority prio = c->priority;
    atomic_fetch_add_explicit(&ac->a->items[0].policy->shed[prio], 1, memory_order_relaxed);
    int64_t secs = c->shed_retry < 0 ? 1 : sl__ceil_s(c->shed_retry);
    if (secs < 1) secs = 1;
    char body[192], retry[24];
    int n = snprintf(body, sizeof body,
                     "{\"error\":\"shed\",\"message\":\"the server is over capacity: %s "
                     "requests are shed (retry after %lld s)\"}",
                     sl_priority_name(prio), (long long)secs);
    snprintf(retry, sizeof retry, "%lld", (long long)secs);
    sl__buf *out = sl__reply_out(&ac->reply);
    sl__http_begin(out, 403);
    sl__http_header_line(out, "Retry-After", retry);
    sl__http_header_line(out, "Sluice-Shed", "1");
    sl__http_header_line(out, "Cache-Control", "no-store");
    sl__http_end(out, sl__reply_keep(&ac->reply, ac->keep), "application/json", body, (size_t)n);
    if (ac->head) out->len -= (size_t)n;
    sl__reply_end(&ac->reply);
    if (ac->heap) free(ac->a);
    sl__decide_call_free(c);
}

/* done runs inline and holds the answer past the handler: the answer moves
 * to the heap and its place is reserved now (the handler is still running,
 * its slot valid: reply.h). false: no memory for one of them; the error
 * answer is written (into the handler's output when no place could be
 * reserved, the held answer dropped) and the call freed. */
static bool auth_reserve(auth_ctx *ac, sl__decide_call *c) {
    sl__buf *out = sl__reply_out(&ac->reply); /* the handler's */
    auth_keep(ac);
    if (sl__reply_wait(&ac->reply)) {
        if (ac->a) return true;
        auth_oom(ac, c); /* into its place */
        return false;
    }
    sl__rules_answer e;
    auth_error(&e, "out of memory");
    write_auth(out, &e, ac->keep, ac->head, ac->now, SL__FROM_REDIS);
    sl__reply_end(&ac->reply);
    if (ac->heap) free(ac->a);
    sl__decide_call_free(c);
    return false;
}

/* The one completion of a decided /v1/auth request: the answer written
 * inline or in its reserved place, refused by the hold, or held. */
static void auth_done(sl__decide_call *c) {
    auth_ctx *ac = sl__decide_call_user(c);
    bool inline_ = ac->ran != NULL;
    if (ac->ran) *ac->ran = true;
    ac->ran = NULL;
    if (!ac->a) { /* there was no memory to keep the answer */
        auth_oom(ac, c);
        return;
    }
    if (c->shed) { /* the engine's capacity shed it: nothing was decided */
        auth_shed(ac, c);
        return;
    }
    sl__rules_finish(ac->a, c);
    int64_t delay;
    size_t i = ac->hold ? sl__http_hold_pick(ac->a, &delay) : ac->a->n;
    if (i < ac->a->n && !sl__http_hold_fits(ac->a, i, delay)) {
        HOLD_COUNT(ac, held_refused);
        sl__http_hold_refuse(ac->a, i, delay);
    } else if (i < ac->a->n) {
        if (!inline_ || auth_reserve(ac, c)) auth_hold(ac, c, i, delay);
        return;
    }
    auth_finish(ac, c);
}

/* A limit's retry budget refused the retry: 403 (what nginx's auth_request
 * passes) with Sluice-Retry-Budget: exhausted, which the nginx recipe maps
 * to 429; nothing is decided. */
static void auth_retry_refused(sl__retry_stage *st) {
    auth_ctx *ac = st->arg;
    sl__http_retry_refused(sl__reply_out(&ac->reply), 403, ac->head,
                           sl__reply_keep(&ac->reply, ac->keep), st->call.limit->name, &st->call);
    sl__reply_end(&ac->reply);
    if (ac->heap) free(ac->a);
    sl__decide_call_free(st->decide);
}

/* The first enforced limit of a with a retry budget, or a->n. */
static size_t budget_item(const sl__rules_answer *a) {
    for (size_t i = 0; i < a->n; i++)
        if (!a->items[i].shadow && !a->items[i].policy->cfg.shadow && a->items[i].policy->retry)
            return i;
    return a->n;
}

bool sl__http_auth_handle(const sl__request_ctx *rq, const sl__http_request *req, sl__buf *out,
                          bool keep) {
    return sl__http_auth_decide(rq, req, out, keep, NULL);
}

bool sl__http_auth_decide(const sl__request_ctx *rq, const sl__http_request *req, sl__buf *out,
                          bool keep, const sl__rules_query *query) {
    const sl__rules *rules = rq->policies ? sl__policy_set_rules(rq->policies) : NULL;
    sl__req_header hs[SL__HTTP_MAX_HEADERS];
    size_t nh = req->nheaders < SL__HTTP_MAX_HEADERS ? req->nheaders : SL__HTTP_MAX_HEADERS;
    for (size_t i = 0; i < nh; i++)
        hs[i] = (sl__req_header){req->headers[i].name, req->headers[i].value,
                                 req->headers[i].name_len, req->headers[i].value_len};
    int64_t now = rq->now;
    bool head = req->method == SL__HTTP_HEAD;
    sl__rules_answer a;
    char arena[SL__RULES_ARENA]; /* the keys: the call copies them */
    a.arena = arena;
    if (!rules) {
        auth_error(&a, "no policy set");
        write_auth(out, &a, keep, head, now, SL__FROM_REDIS);
        return keep;
    }
    sl__request r;
    sl__rules_from_proxy(rules, hs, nh, &r);
    r.query = query;
    sl__decide_call *c = sl__rules_prepare(rules, &r, rq->policies, &a, sizeof(auth_ctx));
    count_key_refusal(rq->stats, &a);
    if (!c) { /* the answer is final: nothing to decide, or an error */
        write_auth(out, &a, keep, head, now, SL__FROM_REDIS);
        return keep;
    }
    const char *header = NULL;
    sl__decide_capacity *cap = sl__policy_set_shed(rq->policies, &header);
    if (cap) /* the first matching rule's priority:, else the header's; lives with the set */
        sl__decide_call_shed(
            c, cap, a.priority >= 0 ? (sl_priority)a.priority : sl__http_priority(req, header));
    auth_ctx *ac = sl__decide_call_user(c);
    *ac = (auth_ctx){.keep = keep,
                     .head = head,
                     .now = now,
                     .a = &a,
                     .hold = rq->slot ? rq->hold : NULL,
                     .set = rq->policies,
                     .stats = rq->stats};
    c->done = auth_done;
    bool answered, ran = false;
    ac->ran = &ran;
    sl__reply_begin(&ac->reply, rq->slot, out, &answered);
    size_t b = budget_item(&a);
    if (b < a.n) /* retry_budget: first the budget (policy/retry_stage.h), then the limits */
        sl__engine_decide_retry(&ac->retry, a.items[b].policy->retry, (const char *)c->items[b].key,
                                c->items[b].keylen,
                                sl__http_retry_marked(req, a.items[b].policy->cfg.retry.header), c,
                                rq->decider, now, auth_retry_refused, ac);
    else
        sl__engine_decide(rq->decider, c, now);
    /* done (or the budget's refusal) ran inline: it wrote the answer, or
       holds it in the place it reserved; the call, and ac with it, may be gone */
    if (answered || ran) return keep;
    ac->ran = NULL;
    auth_keep(ac); /* done comes later */
    if (!sl__reply_wait(&ac->reply)) {
        auth_error(&a, "out of memory");
        write_auth(out, &a, keep, head, now, SL__FROM_REDIS);
    }
    return keep;
}
