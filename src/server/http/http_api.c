/* http_api.c: the routes of sluiced's HTTP API (DESIGN.md section 2,
 * docs/http-api.md): /v1/check (GET, HEAD, POST), /healthz, /readyz,
 * /healthcheck (envoyproxy/ratelimit's),
 * /metrics, /v1/top, /v1/reload. Every answer is complete in `out`; the
 * return value says whether the connection stays open. sl__http_api_handle
 * routes in two steps: route_handler (the endpoints whose handler writes
 * its own answer: decisions, leases, reloads, the operator's pages), then
 * route_page (the pages answered here, or 404); 405 for either. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/decide.h"
#include "policy/domains.h"
#include "policy/policy.h"
#include "policy/retry_stage.h"
#include "server/admin/admin.h"
#include "server/http/http.h"
#include "server/http/http_api.h"
#include "server/http/http_graphql.h"
#include "server/request.h"
#include "server/http/http_lease.h"
#include "server/http/http_retry.h"
#include "sluice/error.h"
#include "util/units.h"

#include "server/http/http_ops.h" /* /v1/stats, /ui/ */

#define KEY_MAX  1024
#define COST_MAX INT64_C(1000000000000)
#define TOP_MAX  100

typedef struct answer {
    sl__buf body;
    int status;
    const char *content_type;
} answer;

static void json_error(answer *a, int status, const char *code, const char *message) {
    a->status = status;
    a->content_type = "application/json";
    sl__http_error_json(&a->body, code, message);
}

/* Writes the answer; HEAD gets the same headers without the body. */
static void send_answer(sl__buf *out, const sl__http_request *req, answer *a, bool keep,
                        const char *extra_name, const char *extra_value) {
    sl__http_begin(out, a->status);
    if (extra_name) sl__http_header_line(out, extra_name, extra_value);
    sl__http_end(out, keep, a->content_type, a->body.data, a->body.len);
    if (req->method == SL__HTTP_HEAD) out->len -= a->body.len;
}

static bool path_is(const sl__http_request *r, const char *p) {
    size_t n = strlen(p);
    return r->path_len == n && memcmp(r->path, p, n) == 0;
}

/* Parses the n bytes at s as a non-negative decimal integer <= COST_MAX:
 * digits only (no sign, no fraction, no exponent), in a query as in JSON. */
static bool parse_cost(const char *s, size_t n, int64_t *out) {
    if (!n) return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
        if (v > COST_MAX) return false;
    }
    *out = v;
    return true;
}

typedef struct check_args {
    char policy[SL__POLICY_NAME_MAX + 2];
    char key[KEY_MAX + 1];
    size_t key_len;
    int64_t cost;
} check_args;

#define BAD_POLICY_TEXT                                                                            \
    "the policy parameter is malformed (a bad %-escape, or %00) or longer than 63 bytes"

/* The policy parameter of a query into buf (SL__POLICY_NAME_MAX + 2 bytes):
 * its length, or -1 (absent) / -2 (malformed, or longer than any policy
 * name: a 400, not a 404, as docs/http-api.md says). */
static long policy_param(const sl__http_request *r, char *buf, size_t size) {
    long n = sl__http_query_param(r->query, r->query_len, "policy", buf, size);
    return n > SL__POLICY_NAME_MAX ? -2 : n;
}

/* policy, key and cost in one pass over the query (sl__http_query_params) */
static bool args_from_query(const sl__http_request *r, check_args *c, answer *a) {
    char cost[32];
    sl__http_param ps[3] = {
        {.name = "policy", .name_len = 6, .buf = c->policy, .size = sizeof c->policy},
        {.name = "key", .name_len = 3, .buf = c->key, .size = sizeof c->key},
        {.name = "cost", .name_len = 4, .buf = cost, .size = sizeof cost},
    };
    sl__http_query_params(r->query, r->query_len, ps, 3);
    long n = ps[0].len > SL__POLICY_NAME_MAX ? -2 : ps[0].len; /* as policy_param */
    if (n == -1)
        return json_error(a, 400, "missing_policy", "the policy parameter is required"), false;
    if (n < 0) return json_error(a, 400, "bad_policy", BAD_POLICY_TEXT), false;
    n = ps[1].len;
    if (n == -1) return json_error(a, 400, "missing_key", "the key parameter is required"), false;
    if (n < 0)
        return json_error(a, 400, "bad_key",
                          "the key parameter is malformed (a bad %-escape, or %00: a key cannot "
                          "contain NUL) or longer than 1024 bytes"),
               false;
    c->key_len = (size_t)n;
    c->cost = 1;
    n = ps[2].len;
    if (n == -2 || (n >= 0 && !parse_cost(cost, (size_t)n, &c->cost)))
        return json_error(a, 400, "bad_cost", "cost must be an integer from 0 to 10^12"), false;
    return true;
}

#define NUL_TEXT                                                                                   \
    "the body contains a NUL character (\\u0000 or a 0 byte): keys and policy names cannot "       \
    "contain NUL"

/* [s, end) is JSON whitespace only. */
static bool only_ws(const char *s, const char *end) {
    for (; s && s < end; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return false;
    return true;
}

static bool is_json(const sl__http_request *r) {
    const sl__http_field *h = sl__http_header(r, "Content-Type");
    if (!h) return false;
    size_t n = strlen("application/json");
    return h->value_len >= n && strncasecmp(h->value, "application/json", n) == 0 &&
           (h->value_len == n || h->value[n] == ';' || h->value[n] == ' ');
}

static bool args_from_json(const sl__http_request *r, check_args *c, answer *a) {
    if (!is_json(r))
        return json_error(a, 415, "unsupported_media_type", "send Content-Type: application/json"),
               false;
    /* cJSON reads strings up to a NUL, ignores what follows the object and
     * keeps numbers as doubles: the raw bytes are looked at first (NUL,
     * trailing bytes, and the text of "cost", which must be an integer as
     * in the query: "1e2" or "3.0" are refused). */
    const char *cost_text;
    size_t cost_len;
    sl__json_scan sc = sl__http_json_scan(r->body, r->body_len, "cost", &cost_text, &cost_len);
    if (sc == SL__JSON_NUL) return json_error(a, 400, "nul_byte", NUL_TEXT), false;
    if (sc == SL__JSON_TRAILING)
        return json_error(a, 400, "bad_json", "the body has bytes after the JSON object"), false;
    const char *end = NULL;
    cJSON *j = sc == SL__JSON_OK ? cJSON_ParseWithLengthOpts(r->body, r->body_len, &end, 0) : NULL;
    if (j && !only_ws(end, r->body + r->body_len)) {
        cJSON_Delete(j);
        return json_error(a, 400, "bad_json", "the body has bytes after the JSON object"), false;
    }
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return json_error(a, 400, "bad_json", "the body is not a JSON object"), false;
    }
    bool ok = false;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "policy");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "key");
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(j, "cost");
    if (!cJSON_IsString(p))
        json_error(a, 400, "missing_policy", "\"policy\" must be a string");
    else if (strlen(p->valuestring) > SL__POLICY_NAME_MAX)
        json_error(a, 400, "bad_policy", "\"policy\" is too long");
    else if (!cJSON_IsString(k))
        json_error(a, 400, "missing_key", "\"key\" must be a string");
    else if (strlen(k->valuestring) > KEY_MAX)
        json_error(a, 400, "bad_key", "\"key\" is longer than 1024 bytes");
    else if (cost && !cJSON_IsNull(cost) &&
             (!cJSON_IsNumber(cost) || !cost_text || !parse_cost(cost_text, cost_len, &c->cost)))
        json_error(a, 400, "bad_cost",
                   "\"cost\" must be an integer from 0 to 10^12, written with digits only");
    else {
        strcpy(c->policy, p->valuestring);
        c->key_len = strlen(k->valuestring);
        memcpy(c->key, k->valuestring, c->key_len + 1);
        if (!cost || cJSON_IsNull(cost)) c->cost = 1;
        ok = true;
    }
    cJSON_Delete(j);
    return ok;
}

/* Says where a decision came from when it was not Redis's own answer: a
 * field written over the closing brace of the len bytes at body (room for
 * SOURCE_MAX more); returns the new length. */
#define SOURCE_MAX 24
static size_t decision_source(char *body, size_t len, sl__store_from from) {
    static const char *const field[SL__FROM_COUNT] = {
        [SL__FROM_DENY_CACHE] = ",\"cached\":true}",
        [SL__FROM_OPEN] = ",\"fallback\":\"open\"}",
        [SL__FROM_CLOSED] = ",\"fallback\":\"closed\"}",
        [SL__FROM_LOCAL] = ",\"fallback\":\"local\"}",
    };
    if (from <= SL__FROM_REDIS || from >= SL__FROM_COUNT || !len) return len;
    size_t n = strlen(field[from]);
    memcpy(body + len - 1, field[from], n); /* over the closing brace */
    return len - 1 + n;
}

/* The answer to /v1/check for a decision (rc from the policy check). The
 * body is made on the stack (a policy name is at most SL__POLICY_NAME_MAX
 * bytes): no allocation per answer. */
static void write_decision(sl__buf *out, bool head, bool keep, const sl__policy *p, int rc,
                           const sl_decision *d, bool shadowed, int64_t cost, sl__store_from from,
                           int64_t now) {
    if (rc != SL_OK) {
        answer a = {.status = 200, .content_type = "application/json"};
        sl__buf_init(&a.body);
        char msg[200];
        if (rc == SL_ECOST)
            snprintf(msg, sizeof msg,
                     "cost %lld can never pass: policy %s allows at most %lld at once",
                     (long long)cost, p->cfg.name, (long long)d->limit);
        else
            snprintf(msg, sizeof msg, "%s", sl_strerror(rc));
        json_error(&a, rc == SL_ECOST ? 400 : 500,
                   rc == SL_ECOST ? "cost_exceeds_limit" : "internal", msg);
        sl__http_begin(out, a.status);
        sl__http_end(out, keep, a.content_type, a.body.data, a.body.len);
        if (head) out->len -= a.body.len;
        sl__buf_free(&a.body);
        return;
    }
    char body[SL__HTTP_DECISION_JSON_MAX(SL__POLICY_NAME_MAX) + SOURCE_MAX];
    size_t pl = p->name_len ? p->name_len : strlen(p->cfg.name); /* 0: a policy made by hand */
    size_t len = sl__http_decision_json_at(body, p->cfg.name, pl, d, shadowed);
    len = decision_source(body, len, from);
    sl__http_policy_view view = {.name = p->cfg.name,
                                 .rate = p->rate_text,
                                 .name_len = p->name_len,
                                 .rate_len = p->rate_len,
                                 .plain = p->text_plain};
    sl__policy_quota(p, now, &view.q, &view.w);
    sl__http_begin(out, d->allowed ? 200 : 429);
    sl__http_ratelimit_fields(out, &view, d);
    static const char no_store[] = "Cache-Control: no-store\r\n";
    sl__buf_append(out, no_store, sizeof no_store - 1);
    sl__http_end_json(out, keep, body, len);
    if (head) out->len -= len;
}

/* A request the server's capacity shed (shedding:, sluice/shed.h): 503
 * with Retry-After (whole seconds, at least 1), counted by policy and
 * priority. */
static void write_shed(sl__buf *out, bool head, bool keep, sl__policy *p, sl_priority prio,
                       int64_t retry_after) {
    atomic_fetch_add_explicit(&p->shed[prio], 1, memory_order_relaxed);
    answer a = {.status = 503, .content_type = "application/json"};
    sl__buf_init(&a.body);
    char msg[160], retry[24];
    int64_t secs = retry_after < 0 ? 1 : sl__ceil_s(retry_after);
    if (secs < 1) secs = 1;
    snprintf(msg, sizeof msg,
             "the server is over capacity: %s requests are shed (retry after %lld s)",
             sl_priority_name(prio), (long long)secs);
    json_error(&a, 503, "shed", msg);
    snprintf(retry, sizeof retry, "%lld", (long long)secs);
    sl__http_begin(out, a.status);
    sl__http_header_line(out, "Retry-After", retry);
    sl__http_end(out, keep, a.content_type, a.body.data, a.body.len);
    if (head) out->len -= a.body.len;
    sl__buf_free(&a.body);
}

/* /v1/check: one item of a policy, decided by the engine (with the
 * server's shedding capacity first, when there is one); the answer is
 * written in done (reply.h). */
typedef struct check_ctx {
    sl__reply reply;
    bool keep, head;
    int64_t now;           /* when the request was decided (a monthly quota's w depends on it) */
    sl__retry_stage retry; /* the policy's retry budget (retry_budget:), before the decision */
} check_ctx;

static void check_done(sl__decide_call *c) {
    check_ctx *cc = sl__decide_call_user(c);
    const sl__decide_item *it = &c->items[0];
    sl__buf *out = sl__reply_out(&cc->reply);
    bool keep = sl__reply_keep(&cc->reply, cc->keep);
    if (c->shed)
        write_shed(out, cc->head, keep, sl__policy_of(it->limit), c->priority, c->shed_retry);
    else
        write_decision(out, cc->head, keep, sl__policy_of(it->limit), c->rc, &it->decision,
                       it->shadowed, it->cost, c->from, cc->now);
    sl__reply_end(&cc->reply);
    sl__decide_call_free(c);
}

/* The retry budget refused a retry: 429, and it is not decided. */
static void check_retry_refused(sl__retry_stage *st) {
    check_ctx *cc = st->arg;
    sl__buf *out = sl__reply_out(&cc->reply);
    sl__http_retry_refused(out, 429, cc->head, sl__reply_keep(&cc->reply, cc->keep),
                           st->call.limit->name, &st->call);
    sl__reply_end(&cc->reply);
    sl__decide_call_free(st->decide);
}

static void handle_check(const sl__request_ctx *rq, const sl__http_request *r, sl__buf *out,
                         bool keep) {
    answer a = {.status = 200, .content_type = "application/json"};
    sl__buf_init(&a.body);
    check_args c;
    bool ok = r->method == SL__HTTP_POST ? args_from_json(r, &c, &a) : args_from_query(r, &c, &a);
    if (!ok) {
        send_answer(out, r, &a, keep, NULL, NULL);
        sl__buf_free(&a.body);
        return;
    }
    sl__policy *p = sl__policy_find(rq->policies, c.policy, strlen(c.policy));
    if (!p) {
        char msg[128];
        snprintf(msg, sizeof msg, "no policy named \"%s\"", c.policy);
        json_error(&a, 404, "unknown_policy", msg);
        send_answer(out, r, &a, keep, NULL, NULL);
        sl__buf_free(&a.body);
        return;
    }
    sl__buf_free(&a.body);
    bool head = r->method == SL__HTTP_HEAD;
    sl__decide_item item = sl__policy_use(p, c.key, c.key_len, c.cost, false);
    sl__decide_call *call = sl__decide_call_new(&item, 1, NULL, NULL, sizeof(check_ctx));
    if (!call) {
        sl_decision none = {0};
        write_decision(out, head, keep, p, SL_ENOMEM, &none, false, c.cost, SL__FROM_REDIS, 0);
        return;
    }
    int64_t now = rq->now;
    check_ctx *cc = sl__decide_call_user(call);
    cc->keep = keep;
    cc->head = head;
    cc->now = now;
    const char *header = NULL;
    sl__decide_capacity *cap = sl__policy_set_shed(rq->policies, &header);
    if (cap) sl__decide_call_shed(call, cap, sl__http_priority(r, header)); /* lives with the set */
    sl__decide_call_hold(call, rq->policies);
    call->done = check_done;
    bool answered;
    sl__reply_begin(&cc->reply, rq->slot, out, &answered);
    /* retry_budget: first the budget (policy/retry_stage.h), then the policy */
    sl__engine_decide_retry(&cc->retry, p->retry, (const char *)call->items[0].key, c.key_len,
                            p->retry && sl__http_retry_marked(r, p->cfg.retry.header), call,
                            rq->decider, now, check_retry_refused, cc);
    if (!answered && !sl__reply_wait(&cc->reply)) {
        sl_decision none = {0};
        write_decision(out, head, keep, p, SL_ENOMEM, &none, false, c.cost, SL__FROM_REDIS, 0);
    }
}

/* /v1/top's n (how many keys, default 20); false when it is not 1..TOP_MAX. */
static bool top_n(const sl__http_request *r, int64_t *want) {
    char nbuf[16];
    *want = 20;
    long m = sl__http_query_param(r->query, r->query_len, "n", nbuf, sizeof nbuf);
    return m == -1 ||
           (m >= 0 && parse_cost(nbuf, (size_t)m, want) && *want >= 1 && *want <= TOP_MAX);
}

/* GET /v1/top?domain=D[&rule=R][&n=N]: the descriptors refused most often
 * by Envoy's rules (policy/domains.h). Rules and keys are printable ASCII. */
static void handle_top_domain(const sl__request_ctx *rq, const sl__http_request *r, answer *a) {
    char domain[SL__DOMAIN_TOP_TEXT + 2], rule[SL__DOMAIN_TOP_TEXT + 2];
    long dn = sl__http_query_param(r->query, r->query_len, "domain", domain, sizeof domain);
    if (dn < 0)
        return json_error(a, 400, "bad_domain", "the domain parameter is malformed or too long");
    long rn = sl__http_query_param(r->query, r->query_len, "rule", rule, sizeof rule);
    if (rn == -2)
        return json_error(a, 400, "bad_rule", "the rule parameter is malformed or too long");
    int64_t want;
    if (!top_n(r, &want)) return json_error(a, 400, "bad_n", "n must be an integer from 1 to 100");
    static _Thread_local sl__domain_top_item items[TOP_MAX]; /* large: not on the stack */
    long k = sl__domain_set_top(rq->domains, domain, (size_t)dn, rn >= 0 ? rule : NULL,
                                rn >= 0 ? (size_t)rn : 0, items, (size_t)want);
    if (k < 0) return json_error(a, 404, "unknown_domain", "no such domain in the rule files");
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "domain", domain); /* a domain of the rule files: UTF-8 */
    for (long i = 0; i < k; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "rule", items[i].rule);
        cJSON_AddStringToObject(o, "key", items[i].key);
        cJSON_AddNumberToObject(o, "rejected", (double)items[i].count);
        cJSON_AddNumberToObject(o, "error", (double)items[i].error);
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddItemToObject(root, "top", arr);
    char *text = cJSON_PrintUnformatted(root);
    if (text) sl__buf_puts(&a->body, text);
    cJSON_free(text);
    cJSON_Delete(root);
}

/* /v1/top: keys are any bytes (NUL included, from RESP), written as JSON
 * strings that stay valid UTF-8 (invalid bytes become U+FFFD). */
static void handle_top(const sl__request_ctx *rq, const sl__http_request *r, answer *a) {
    char name[SL__POLICY_NAME_MAX + 2];
    if (sl__http_query_param(r->query, r->query_len, "domain", name, sizeof name) != -1)
        return handle_top_domain(rq, r, a);
    long n = policy_param(r, name, sizeof name);
    if (n == -1) return json_error(a, 400, "missing_policy", "the policy parameter is required");
    if (n < 0) return json_error(a, 400, "bad_policy", BAD_POLICY_TEXT);
    sl__policy *p = sl__policy_find(rq->policies, name, (size_t)n);
    if (!p) return json_error(a, 404, "unknown_policy", "no such policy");
    int64_t want;
    if (!top_n(r, &want)) return json_error(a, 400, "bad_n", "n must be an integer from 1 to 100");
    /* by=rejected (default): the rejected-keys sketch; by=near: the keys
       allowed near their limit (decide.h, SL__NEAR_DIVISOR) */
    char by[16];
    long bn = sl__http_query_param(r->query, r->query_len, "by", by, sizeof by);
    bool near = bn == 4 && memcmp(by, "near", 4) == 0;
    if (bn != -1 && !near && !(bn == 8 && memcmp(by, "rejected", 8) == 0))
        return json_error(a, 400, "bad_by", "by must be rejected or near");
    sl__topk_item items[TOP_MAX];
    size_t k = sl__topk_list(near ? p->lim.near : p->lim.top, items, (size_t)want);
    sl__buf_puts(&a->body, "{\"policy\":");
    sl__http_json_string(&a->body, p->cfg.name, strlen(p->cfg.name));
    sl__buf_puts(&a->body, near ? ",\"by\":\"near\",\"top\":[" : ",\"top\":[");
    for (size_t i = 0; i < k; i++) {
        sl__buf_puts(&a->body, i ? ",{\"key\":" : "{\"key\":");
        sl__http_json_string(&a->body, items[i].key, items[i].keylen);
        sl__buf_printf(&a->body,
                       near ? ",\"near\":%llu,\"error\":%llu}"
                            : ",\"rejected\":%llu,\"error\":%llu}",
                       (unsigned long long)items[i].count, (unsigned long long)items[i].error);
    }
    sl__buf_puts(&a->body, "]}");
    if (a->body.failed) {
        sl__buf_reset(&a->body);
        json_error(a, 500, "internal", "out of memory");
    }
}

/* The endpoints whose own handler writes the answer into out (a decision,
 * a lease, a reload, the operator's pages). true: r was handled, *keep_out
 * what the handler returned; false: not one of them, or (*allow set) one of
 * them asked with a method it does not take. */
static bool route_handler(const sl__request_ctx *rq, const sl__http_request *r, sl__buf *out,
                          bool keep, const char **allow, bool *keep_out) {
    bool get = r->method == SL__HTTP_GET || r->method == SL__HTTP_HEAD;
    bool post = r->method == SL__HTTP_POST;
    *keep_out = keep;
    if (path_is(r, "/v1/check")) {
        if (get || post) {
            handle_check(rq, r, out, keep);
            return true;
        }
        *allow = "GET, HEAD, POST";
    } else if (path_is(r, "/v1/acquire") || path_is(r, "/v1/release") || path_is(r, "/v1/renew")) {
        *keep_out = sl__http_lease_handle(rq, r, out, keep);
        return true;
    } else if (path_is(r, "/v1/auth")) {
        if (get) {
            *keep_out = sl__http_auth_handle(rq, r, out, keep);
            return true;
        }
        *allow = "GET, HEAD";
    } else if (path_is(r, "/v1/graphql")) {
        if (post) {
            *keep_out = sl__http_graphql_handle(rq, r, out, keep);
            return true;
        }
        *allow = "POST";
    } else if (path_is(r, "/json")) {
        if (post) {
            *keep_out = sl__http_json_handle(rq, r, out, keep);
            return true;
        }
        *allow = "POST";
    } else if (path_is(r, "/v1/reload")) {
        if (post) { /* the main loop reloads (reload.c) */
            sl__admin_reload(rq->admin, rq->slot, r, keep, out);
            return true;
        }
        *allow = "POST";
    } else if (path_is(r, "/v1/ramp")) {
        if (post) { /* ramp_up restarts (admin.h) */
            sl__admin_ramp(rq->admin, rq->slot, r, keep, out);
            return true;
        }
        *allow = "POST";
    } else if (sl__http_ops_path(r)) { /* /v1/stats, /ui/ (http_ops.h) */
        *keep_out = sl__http_ops_handle(rq, r, out, keep);
        return true;
    }
    return false;
}

/* The endpoints answered here, into a (health, readiness, /metrics,
 * /v1/top; else 404). Returns the Allow value when r's method is not one
 * the endpoint takes (GET, HEAD), else NULL. */
static const char *route_page(const sl__request_ctx *rq, const sl__http_request *r, answer *a) {
    bool get = r->method == SL__HTTP_GET || r->method == SL__HTTP_HEAD;
    bool page = path_is(r, "/healthz") || path_is(r, "/healthcheck") || path_is(r, "/readyz") ||
                path_is(r, "/metrics") || path_is(r, "/v1/top");
    if (!page) {
        json_error(a, 404, "not_found", "no such endpoint; see docs/http-api.md");
        return NULL;
    }
    if (!get) return "GET, HEAD";
    if (path_is(r, "/healthz")) {
        sl__buf_puts(&a->body, "{\"status\":\"ok\"}");
    } else if (path_is(r, "/healthcheck")) { /* envoyproxy/ratelimit's: OK, or 500 */
        a->content_type = "text/plain; charset=utf-8";
        bool draining = sl__admin_draining(rq->admin);
        if (draining) a->status = 500;
        if (!draining) sl__buf_puts(&a->body, "OK");
    } else if (path_is(r, "/readyz")) {
        a->status = sl__admin_ready(rq->admin, &a->body);
    } else if (path_is(r, "/metrics")) {
        a->content_type = "text/plain; version=0.0.4; charset=utf-8";
        sl__admin_metrics(rq->admin, &a->body);
    } else {
        handle_top(rq, r, a);
    }
    return NULL;
}

bool sl__http_api_handle(const sl__request_ctx *rq, const sl__http_request *r, sl__buf *out,
                         bool keep) {
    const char *allow = NULL;
    bool keep_out;
    if (route_handler(rq, r, out, keep, &allow, &keep_out)) return keep_out;
    answer a = {.status = 200, .content_type = "application/json"};
    sl__buf_init(&a.body);
    if (!allow) allow = route_page(rq, r, &a);
    if (allow) {
        sl__buf_reset(&a.body);
        json_error(&a, 405, "method_not_allowed", "this endpoint does not take that method");
    }
    send_answer(out, r, &a, keep, allow ? "Allow" : NULL, allow);
    sl__buf_free(&a.body);
    return keep;
}
