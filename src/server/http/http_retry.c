/* http_retry.c: retry budgets over HTTP (http_retry.h). */
#include "server/http/http_retry.h"

#include <stdio.h>
#include <string.h>

#include "util/units.h"

sl_priority sl__http_priority(const sl__http_request *r, const char *header) {
    const sl__http_field *h = sl__http_header(r, header);
    sl_priority p = SL_PRIORITY_DEFAULT;
    if (h) sl_priority_parse(h->value, h->value_len, &p);
    return p;
}

bool sl__http_retry_marked(const sl__http_request *r, const char *header) {
    const sl__http_field *h = sl__http_header(r, header);
    if (!h || h->value_len == 0 || h->value_len > 19) return false;
    bool nonzero = false;
    for (size_t i = 0; i < h->value_len; i++) {
        char c = h->value[i];
        if (c < '0' || c > '9') return false;
        nonzero |= c != '0';
    }
    return nonzero;
}

long long sl__http_retry_after_s(const sl__retry_call *c) {
    int64_t ns = c->d.retry_after < 0 ? c->limit->opts.window : c->d.retry_after;
    int64_t s = sl__ceil_s(ns);
    return s < 1 ? 1 : (long long)s;
}

void sl__http_retry_refused(sl__buf *out, int status, bool head, bool keep, const char *policy,
                            const sl__retry_call *c) {
    sl__buf body;
    sl__buf_init(&body);
    long long secs = sl__http_retry_after_s(c);
    sl__buf_puts(&body, "{\"error\":\"retry_budget\",\"message\":");
    char msg[160];
    snprintf(msg, sizeof msg, "retries of this key are over the retry budget of policy %s", policy);
    sl__http_json_string(&body, msg, strlen(msg));
    sl__buf_puts(&body, ",\"policy\":");
    sl__http_json_string(&body, policy, strlen(policy));
    sl__buf_printf(&body,
                   ",\"retries\":%lld,\"budget\":%lld,\"first_attempts\":%lld,"
                   "\"retry_after_ms\":%lld",
                   (long long)c->d.retries, (long long)c->d.budget, (long long)c->d.firsts,
                   c->d.retry_after < 0 ? -1LL : (long long)sl__ceil_ms(c->d.retry_after));
    const char *fb = sl__store_fallback_name(c->from);
    if (fb) sl__buf_printf(&body, ",\"fallback\":\"%s\"", fb);
    sl__buf_puts(&body, "}");
    char retry[24];
    snprintf(retry, sizeof retry, "%lld", secs);
    sl__http_begin(out, status);
    sl__http_header_line(out, "Retry-After", retry);
    sl__http_header_line(out, "Sluice-Retry-Budget", "exhausted");
    sl__http_header_line(out, "Cache-Control", "no-store");
    sl__http_end(out, keep, "application/json", body.data, body.len);
    if (head) out->len -= body.len;
    sl__buf_free(&body);
}
