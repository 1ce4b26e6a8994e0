/* config.c: the YAML loader of the sluiced configuration (config.h), and the
 * configuration's defaults and bounds. docs/configuration.md is the user's
 * side of this file and of its sections (config_parse.h lists where each
 * is read): keep them in step.
 *
 * The text is read as a stream of libyaml events and checked against the
 * schema as it goes (yaml_reader.h). No document tree is built: memory is
 * the policies plus a reader whose nesting is bounded by SL__YAML_MAX_DEPTH,
 * and the work is linear in the input, whatever the input. Every problem becomes one
 * "file:line: field: message" (the line of the offending node, 1-based) and
 * parsing goes on, so one run reports all of them; only a YAML syntax error,
 * too deep a nesting or an allocation failure stops it.
 *
 * Choices (see docs/configuration.md):
 * - Scalars are typed by this schema, not by YAML 1.1 resolution, so `off`,
 *   `no` and `on` are never booleans by accident: booleans are exactly
 *   `true` / `false`, numbers are unquoted decimal digits.
 * - A key whose value is empty or null (`policies:`) is the same as an
 *   absent key for sections; a scalar field with no value is an error.
 * - Unknown keys, duplicate keys and aliases (*ref) are errors; anchors
 *   without aliases are harmless and ignored.
 * - A key is either read and used or refused: a config never silently
 *   means less than it says.
 * - `domains:` names envoyproxy/ratelimit rule files; they are loaded and
 *   checked with the config (policy/domains_read.c), each of their errors
 *   reported at the domains: line as "rule-file:line: field: message", and
 *   the config owns them. */
#include "policy/config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "policy/apikeys.h"
#include "policy/config_parse.h"
#include "policy/domains.h"
#include "sluice/error.h"
#include "util/file_read.h"

#define DEFAULT_SOURCE "<embedded default>"

enum {
    TOP_LISTEN,
    TOP_WORKERS,
    TOP_STORE,
    TOP_DOMAINS,
    TOP_POLICIES,
    TOP_LIMITS,
    TOP_LOG_LEVEL,
    /* who is counted (docs/identity.md) */
    TOP_IDENTITY,
    TOP_TIERS,
    TOP_QUOTAS,
    TOP_COSTS,
    TOP_EXEMPT,
    TOP_RULES,
    TOP_SHADOW,
    TOP_ADMIN,
    TOP_QUOTA_MODE,
    TOP_CHARGE_REFUSED_HITS,
    TOP_SHEDDING
};

static const char *const top_keys[] = {"listen",
                                       "workers",
                                       "store",
                                       "domains",
                                       "policies",
                                       "limits",
                                       "log_level",
                                       "identity",
                                       "tiers",
                                       "quotas",
                                       "costs",
                                       "exempt",
                                       "rules",
                                       "shadow",
                                       "admin",
                                       "quota_mode",
                                       "charge_refused_hits",
                                       "shedding"};

static const char *const log_levels[] = {"error", "warn", "info", "debug"};
_Static_assert(SL__LOG_ERROR == 0 && SL__LOG_WARN == 1 && SL__LOG_INFO == 2 && SL__LOG_DEBUG == 3,
               "log_levels is in sl_log_level order");

/* Where a key that is unknown in one place does belong (for the message). */
static const sl__yaml_home key_homes[] = {
    {"http", "under listen"},
    {"grpc", "under listen"},
    {"resp", "under listen"},
    {"type", "under store"},
    {"max_memory", "under store"},
    {"redis", "under store"},
    {"url", "under store.redis"},
    {"cluster", "under store.redis"},
    {"timeout", "under store.redis"},
    {"expected_instances", "under store.redis"},
    {"sync", "under store.redis"},
    {"sync_interval", "under store.redis"},
    {"prefix", "under store.redis"},
    {"breaker_failures", "under store.redis"},
    {"breaker_cooldown", "under store.redis"},
    {"breaker_window", "under store.redis"},
    {"deny_cache", "under store.redis"},
    {"module", "under store.redis"},
    {"on_failure", "in a policy or under store.redis"},
    {"name", "in a policy (policies: - name: ...)"},
    {"algorithm", "in a policy (policies: - name: ...)"},
    {"rate", "in a policy (policies: - name: ...)"},
    {"burst", "in a policy (policies: - name: ...)"},
    {"count_rejected", "in a policy (policies: - name: ...)"},
    {"start", "in a policy (policies: - name: ...)"},
    {"shadow", "in a policy (policies: - name: ...)"},
    {"delay_after", "in a leaky_queue policy (policies: - name: ...)"},
    {"refill", "in a token_bucket policy (policies: - name: ...)"},
    {"max_header_bytes", "under limits"},
    {"max_body_bytes", "under limits"},
    {"max_resp_frame", "under limits"},
    {"max_connections", "under limits"},
    {"idle_timeout", "under limits"},
    {"header_timeout", "under limits"},
    {"command_timeout", "under limits"},
    {"drain_timeout", "under limits"},
    {"max_pending_output", "under limits"},
    {"max_pending_output_total", "under limits"},
    {"max_held", "under limits"},
    {"hold_per_tenant", "in a leaky_queue policy with hold: (policies: - name: ...)"},
    {"hold_weights", "in a leaky_queue policy with hold: (policies: - name: ...)"},
    {"hold", "in a leaky_queue policy (policies: - name: ...)"},
    {"listen", "at the top level"},
    {"workers", "at the top level"},
    {"store", "at the top level"},
    {"domains", "at the top level"},
    {"policies", "at the top level"},
    {"limits", "at the top level"},
    {"log_level", "at the top level"},
    {"trusted_proxies", "under identity"},
    {"forwarded_header", "under identity"},
    {"ipv4_prefix", "under identity"},
    {"ipv6_prefix", "under identity"},
    {"client_ip_header", "under identity"},
    {"method_header", "under identity"},
    {"uri_header", "under identity"},
    {"api_keys", "under identity"},
    {"file", "under identity.api_keys"},
    {"bearer", "under identity.api_keys"},
    {"required", "under identity.api_keys"},
    {"limit", "in a quota (quotas: - name: ...) or a tier"},
    {"per", "in a quota (quotas: - name: ...)"},
    {"cidrs", "under exempt"},
    {"paths", "under exempt"},
    {"by", "in a rule's limit (rules: - limits: - policy: ...)"},
    {"policy", "in a rule's limit (rules: - limits: - policy: ...)"},
    {"identity", "at the top level"},
    {"tiers", "at the top level"},
    {"quotas", "at the top level"},
    {"costs", "at the top level"},
    {"exempt", "at the top level"},
    {"rules", "at the top level"},
    {"admin", "at the top level"},
    {"reload", "under admin"},
    {"reload_token", "under admin"},
};

/* workers: auto or a number */
static void top_workers(sl__config_parser *p, const char *path) {
    uint64_t u;
    if (sl__yaml_is_scalar(&p->y) && strcmp(sl__yaml_text(&p->y), "auto") == 0)
        p->cfg->workers = 0;
    else if (sl__yaml_uint(&p->y, path, "auto or a number from 1 to 256", 1, 256, &u))
        p->cfg->workers = (unsigned)u;
}

/* envoyproxy/ratelimit rule files: loaded and checked at the end of the
 * parse (sl__domain_rules_load). A relative path is relative to the config
 * file's directory. */
static void top_domains(sl__config_parser *p, const char *path) {
    sl__config *c = p->cfg;
    const char *s = sl__yaml_scalar(&p->y, path, "a directory or file of rule files");
    if (!s) return;
    c->domains_line = p->y.key_line;
    const char *slash = strrchr(p->y.source, '/');
    int dir = s[0] != '/' && p->y.source[0] != '<' && slash ? (int)(slash - p->y.source + 1) : 0;
    if ((size_t)snprintf(c->domains, sizeof c->domains, "%.*s%s", dir, p->y.source, s) >=
        sizeof c->domains) {
        sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                       "the path is too long (at most %zu bytes)", sizeof c->domains - 1);
        c->domains[0] = '\0';
    }
}

static void top_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    sl__config *c = p->cfg;
    (void)obj;
    int i;
    bool flag;
    switch (key) {
    case TOP_LISTEN:
        sl__config_listen(p, path);
        break;
    case TOP_WORKERS:
        top_workers(p, path);
        break;
    case TOP_STORE:
        sl__config_store(p, path);
        break;
    case TOP_DOMAINS:
        top_domains(p, path);
        break;
    case TOP_POLICIES:
        sl__config_policies(p, path);
        break;
    case TOP_LIMITS:
        sl__config_limits(p, path);
        break;
    case TOP_LOG_LEVEL:
        i = sl__yaml_enum(y, path, "log level", log_levels, COUNT(log_levels));
        if (i >= 0) c->log_level = (sl__log_level)i; /* log_levels is in its order */
        break;
    case TOP_IDENTITY:
        sl__config_identity(p, path);
        break;
    case TOP_TIERS:
        sl__config_tiers(p, path);
        break;
    case TOP_QUOTAS:
        sl__config_quotas(p, path);
        break;
    case TOP_COSTS:
        sl__config_costs(p, path);
        break;
    case TOP_EXEMPT:
        sl__config_exempt(p, path);
        break;
    case TOP_RULES:
        sl__config_rules(p, path);
        break;
    case TOP_SHADOW:
        if (sl__yaml_bool(y, path, &flag)) c->shadow = flag;
        break;
    case TOP_ADMIN:
        sl__config_admin(p, path);
        break;
    case TOP_QUOTA_MODE:
        if (sl__yaml_bool(y, path, &flag)) c->quota_mode = flag;
        break;
    case TOP_CHARGE_REFUSED_HITS:
        if (sl__yaml_bool(y, path, &flag)) c->charge_refused_hits = flag;
        break;
    case TOP_SHEDDING:
        sl__config_shedding(p, path);
        break;
    }
}

static void parse_stream(sl__config_parser *p) {
    if (!sl__yaml_next(&p->y) || !sl__yaml_next(&p->y))
        return; /* STREAM_START, then DOCUMENT_START or STREAM_END */
    const char *empty = "the config is empty (expected a mapping of listen, store, policies, ...)";
    if (p->y.ev.type == YAML_STREAM_END_EVENT) {
        sl__yaml_error(&p->y, 1, NULL, "%s", empty);
        return;
    }
    if (!sl__yaml_next(&p->y)) return;
    if (sl__yaml_is_null(&p->y)) {
        sl__yaml_error(&p->y, 1, NULL, "%s", empty);
    } else if (!sl__yaml_is_map(&p->y)) {
        char got[96];
        sl__yaml_describe(&p->y, got, sizeof got);
        sl__yaml_error(&p->y, sl__yaml_line(&p->y), NULL,
                       "expected a mapping of listen, store, policies, ... at the top, got %s",
                       got);
        sl__yaml_skip(&p->y);
    } else {
        int seen[COUNT(top_keys)] = {0};
        sl__yaml_each_key(&p->y, "", top_keys, COUNT(top_keys), top_value, NULL, seen);
    }
    if (!sl__yaml_next(&p->y) || !sl__yaml_next(&p->y)) return; /* DOCUMENT_END, then STREAM_END */
    if (p->y.ev.type == YAML_DOCUMENT_START_EVENT)
        sl__yaml_error(&p->y, sl__yaml_line(&p->y), NULL,
                       "only one YAML document is allowed (remove the second ---)");
}

static void set_defaults(sl__config *c, const char *source) {
    snprintf(c->source, sizeof c->source, "%s", source);
    c->http = (sl__listen_config){.enabled = true, .host = "127.0.0.1", .port = 8080};
    c->grpc = (sl__listen_config){.enabled = true, .host = "127.0.0.1", .port = 8081};
    c->resp = (sl__listen_config){.enabled = true, .host = "127.0.0.1", .port = 6380};
    c->workers = 0;
    c->store_type = SL__STORE_MEMORY;
    c->max_memory = (size_t)(256 * MiB);
    c->redis = (sl__redis_config){.addr = {.host = "127.0.0.1", .port = 6379},
                                  .timeout = 250 * NS_MS,
                                  .on_failure = SL__FAIL_LOCAL,
                                  .expected_instances = 1,
                                  .sync_interval = 100 * NS_MS,
                                  .prefix = "sluice:",
                                  .breaker_failures = 5,
                                  .breaker_cooldown = NS_SEC,
                                  .breaker_window = 500 * NS_MS,
                                  .deny_cache = 65536};
    c->limits = (sl__limits_config){
        .max_header_bytes = 8 * KiB,
        .max_body_bytes = 64 * KiB,
        .max_resp_frame = 64 * KiB,
        .max_connections = 10000,
        .idle_timeout = 60 * NS_SEC,
        .header_timeout = 10 * NS_SEC,
        .command_timeout = 10 * NS_SEC,
        .drain_timeout = 10 * NS_SEC,
        .max_pending_output = MiB,
        .max_pending_output_total = 64 * MiB,
        .max_held = 1000,
    };
    c->log_level = SL__LOG_INFO;
    c->identity = (sl__identity_config){
        .forwarded = SL__FWD_XFF,
        .ipv4_prefix = 32,
        .ipv6_prefix = 64,
        .client_ip_header = "X-Real-IP",
        .method_header = "X-Original-Method",
        .uri_header = "X-Original-URI",
        .key_header = "X-API-Key",
        .key_bearer = true,
    };
}

/* The rule files named by domains: (policy/domains_read.c), loaded with the
 * config. Their errors are reported at the domains: line, each naming its
 * rule file and line: "sluice.yaml:9: domains: rules/a.yaml:4: field: ...". */
static void load_domain_rules(sl__config_parser *p) {
    sl__config *c = p->cfg;
    sl__config_errors *rerrs = malloc(sizeof *rerrs);
    if (!rerrs) {
        sl__yaml_error(&p->y, c->domains_line, "domains", "out of memory");
        return;
    }
    rerrs->n = 0;
    if (sl__domain_rules_load(c->domains, &c->domain_rules, rerrs) != 0) {
        size_t stored = rerrs->n < SL__CONFIG_MAX_ERRORS ? rerrs->n : SL__CONFIG_MAX_ERRORS;
        for (size_t i = 0; i < stored; i++)
            sl__yaml_error(&p->y, c->domains_line, "domains", "%s", rerrs->msg[i]);
        if (rerrs->n > stored) p->y.errs->n += rerrs->n - stored;
    }
    free(rerrs);
}

int sl__config_parse(const char *text, size_t len, const char *source, sl__config **out,
                     sl__config_errors *errs) {
    sl__config_errors scratch;
    if (!errs) errs = &scratch;
    errs->n = 0;
    if (!source) source = "<config>";
    if (!out) {
        sl__errors_add(errs, source, 0, NULL, "no place for the result");
        return SL_EINVAL;
    }
    *out = NULL;
    if (!text) {
        sl__errors_add(errs, source, 0, NULL, "no text");
        return SL_EINVAL;
    }
    if (len > SL__CONFIG_MAX_BYTES) {
        sl__errors_add(errs, source, 0, NULL, "larger than %u bytes: refused",
                       SL__CONFIG_MAX_BYTES);
        return SL_EINVAL;
    }
    sl__config *c = calloc(1, sizeof *c);
    if (!c) {
        sl__errors_add(errs, source, 0, NULL, "out of memory");
        return SL_ENOMEM;
    }
    set_defaults(c, source);

    sl__config_ident ident = {0};
    sl__config_parser p = {.cfg = c, .ident = &ident};
    if (sl__yaml_open(&p.y, text, len, source, errs) != 0) {
        sl__errors_add(errs, source, 0, NULL, "out of memory");
        free(c);
        return SL_ENOMEM;
    }
    p.y.user = &p;
    p.y.homes = key_homes;
    p.y.nhomes = COUNT(key_homes);
    parse_stream(&p);
    sl__yaml_close(&p.y);
    if (!p.y.fatal) sl__config_check_listeners(&p);
    if (!p.y.fatal) sl__config_check_identity(&p);
    if (!p.y.fatal && c->domains[0]) load_domain_rules(&p);
    if (!p.y.fatal) sl__config_check_redis_limits(&p);
    if (!p.y.fatal) sl__config_check_shedding(&p);
    sl__yaml_sort_errors(&p.y);

    if (errs->n) {
        sl__config_free(c);
        return SL_EPARSE;
    }
    *out = c;
    return 0;
}

int sl__config_load(const char *path, sl__config **out, sl__config_errors *errs) {
    sl__config_errors scratch;
    if (!errs) errs = &scratch;
    errs->n = 0;
    if (out) *out = NULL;
    if (!path) {
        sl__errors_add(errs, "<config>", 0, NULL, "no file name");
        return SL_EINVAL;
    }
    char *buf, msg[160];
    size_t len;
    int err_no = 0;
    int rc = sl__file_read(path, SL__CONFIG_MAX_BYTES, 0, &buf, &len, &err_no);
    if (rc != SL__FILE_OK) {
        sl__errors_add(errs, path, 0, NULL, "%s",
                       sl__file_strerror(rc, err_no, SL__CONFIG_MAX_BYTES, msg, sizeof msg));
        return SL_EINVAL;
    }
    rc = sl__config_parse(buf, len, path, out, errs);
    free(buf);
    return rc;
}

int sl__config_load_default(sl__config **out, sl__config_errors *errs) {
    return sl__config_parse(sl__default_config_text, strlen(sl__default_config_text),
                            DEFAULT_SOURCE, out, errs);
}

void sl__config_free(sl__config *c) {
    if (!c) return;
    sl__domain_rules_free(c->domain_rules);
    free(c->policies);
    free(c->leases);
    sl__config_free_identity(c);
    free(c);
}

const sl__policy_config *sl__config_policy(const sl__config *c, const char *name, size_t len) {
    if (!c || !name || len > SL__POLICY_NAME_MAX) return NULL;
    for (size_t i = 0; i < c->npolicies; i++) {
        const sl__policy_config *pc = &c->policies[i];
        if (strlen(pc->name) == len && memcmp(pc->name, name, len) == 0) return pc;
    }
    return NULL;
}
