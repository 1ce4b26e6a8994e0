/* config_server.c: the sections of the config about the server itself:
 * listen (host:port or off, and no two listeners on one port), store (the
 * memory table's cap, store.redis: URL, cluster seeds, timeouts, breaker,
 * batched mode), limits (sizes and timeouts of connections) and admin (who
 * may reload). docs/configuration.md is the user's side. */
#include "policy/config_parse.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

const char *const sl__config_failure_modes[3] = {"open", "closed", "local"};

_Static_assert(SL__FAIL_OPEN == 0 && SL__FAIL_CLOSED == 1 && SL__FAIL_LOCAL == 2,
               "sl__config_failure_modes is in sl_fail_mode order");

sl__fail_mode sl__config_fail_mode(sl__fail_setting on_failure, sl__fail_mode inherit) {
    return on_failure == SL__FAIL_INHERIT ? inherit : (sl__fail_mode)(on_failure - 1);
}

/* who may use the admin endpoints (docs/configuration.md, `admin`) */
enum { ADMIN_RELOAD, ADMIN_RELOAD_TOKEN, ADMIN_UI };

static const char *const admin_keys[] = {"reload", "reload_token", "ui"};

static const char *const ui_modes[] = {"off", "loopback", "on"}; /* = SL__UI_* */

static const char *const reload_modes[] = {"loopback", "off", "token"}; /* = SL__RELOAD_* */

enum { LISTEN_HTTP, LISTEN_GRPC, LISTEN_RESP };

static const char *const listen_keys[] = {"http", "grpc", "resp"};

enum { STORE_TYPE, STORE_MAX_MEMORY, STORE_REDIS };

static const char *const store_keys[] = {"type", "max_memory", "redis"};

enum {
    REDIS_URL,
    REDIS_CLUSTER,
    REDIS_TIMEOUT,
    REDIS_ON_FAILURE,
    REDIS_INSTANCES,
    REDIS_SYNC,
    REDIS_SYNC_INTERVAL,
    REDIS_PREFIX,
    REDIS_BREAKER_FAILURES,
    REDIS_BREAKER_COOLDOWN,
    REDIS_DENY_CACHE,
    REDIS_BREAKER_WINDOW,
    REDIS_MODULE
};

static const char *const redis_keys[] = {
    "url",        "cluster",        "timeout", "on_failure",       "expected_instances",
    "sync",       "sync_interval",  "prefix",  "breaker_failures", "breaker_cooldown",
    "deny_cache", "breaker_window", "module"};

enum {
    LIM_HEADER,
    LIM_BODY,
    LIM_RESP_FRAME,
    LIM_CONNECTIONS,
    LIM_IDLE,
    LIM_HEADER_TIMEOUT,
    LIM_COMMAND_TIMEOUT,
    LIM_OUTPUT,
    LIM_OUTPUT_TOTAL,
    LIM_DRAIN_TIMEOUT,
    LIM_HELD,
};

static const char *const limits_keys[] = {"max_header_bytes",
                                          "max_body_bytes",
                                          "max_resp_frame",
                                          "max_connections",
                                          "idle_timeout",
                                          "header_timeout",
                                          "command_timeout",
                                          "max_pending_output",
                                          "max_pending_output_total",
                                          "drain_timeout",
                                          "max_held"};

static const char *const store_types[] = {"memory", "redis"};
_Static_assert(SL__STORE_MEMORY == 0 && SL__STORE_REDIS == 1,
               "store_types is in sl__store_type order");

static const char *const sync_modes[] = {"exact", "batched"};
static const char *const module_modes[] = {"auto", "require", "off"}; /* sl__redis_module_mode */

/* "host:port" or "[v6]:port" with a numeric host, stored canonically.
 * False with the reason in `why`. */
static bool parse_listen(const char *s, sl__listen_config *out, const char **why) {
    char host[80];
    const char *port;
    int family;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':') return *why = "expected [IPv6 address]:port", false;
        size_t n = (size_t)(close - s - 1);
        if (n == 0 || n >= sizeof host) return *why = "expected [IPv6 address]:port", false;
        memcpy(host, s + 1, n);
        host[n] = '\0';
        port = close + 2;
        family = AF_INET6;
    } else {
        const char *colon = strrchr(s, ':');
        if (!colon) return *why = "expected host:port (such as 127.0.0.1:8080) or off", false;
        size_t n = (size_t)(colon - s);
        if (memchr(s, ':', n))
            return *why = "an IPv6 address needs brackets and quotes, such as \"[::1]:8080\"",
                   false;
        if (n == 0) return *why = "the host is missing (0.0.0.0 listens on every interface)", false;
        if (n >= sizeof host) return *why = "the host is too long", false;
        memcpy(host, s, n);
        host[n] = '\0';
        port = colon + 1;
        family = AF_INET;
    }
    unsigned char addr[16];
    if (inet_pton(family, host, addr) != 1)
        return *why = family == AF_INET6
                          ? "not a numeric IPv6 address"
                          : "the host must be a numeric IP address (names such as localhost are "
                            "not resolved: use 127.0.0.1 or \"[::1]\")",
               false;
    uint64_t pv;
    if (!sl__yaml_parse_u64(port, &pv) || pv > 65535)
        return *why = "the port must be a number from 0 to 65535 (0: any free port)", false;
    char canon[INET6_ADDRSTRLEN];
    if (!inet_ntop(family, addr, canon, sizeof canon) || strlen(canon) >= sizeof out->host)
        return *why = "the host is too long", false;
    out->enabled = true;
    snprintf(out->host, sizeof out->host, "%s", canon);
    out->port = (uint16_t)pv;
    return true;
}

static bool is_wildcard(const char *host) {
    return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

/* Two enabled listeners on the same port of the same (or every) address
 * would both bind with SO_REUSEPORT and share connections: refuse. */
void sl__config_check_listeners(sl__config_parser *p) {
    const sl__listen_config *l[3] = {&p->cfg->http, &p->cfg->grpc, &p->cfg->resp};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < i; j++) {
            if (!l[i]->enabled || !l[j]->enabled || l[i]->port == 0 || l[i]->port != l[j]->port ||
                p->listen_bad[i] || p->listen_bad[j])
                continue;
            if (strcmp(l[i]->host, l[j]->host) != 0 && !is_wildcard(l[i]->host) &&
                !is_wildcard(l[j]->host))
                continue;
            int line = p->listen_line[i] ? p->listen_line[i] : p->listen_line[j];
            char path[32];
            snprintf(path, sizeof path, "listen.%s", listen_keys[p->listen_line[i] ? i : j]);
            sl__yaml_error(&p->y, line, path, "port %u is already used by listen.%s",
                           (unsigned)l[i]->port, listen_keys[p->listen_line[i] ? j : i]);
        }
    }
}

static void listen_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    (void)obj;
    sl__listen_config *l[3] = {&p->cfg->http, &p->cfg->grpc, &p->cfg->resp};
    if (sl__yaml_is_seq(&p->y)) {
        sl__yaml_expected(&p->y, path,
                          "host:port or off (write an IPv6 listener in quotes: \"[::1]:8080\")");
        return;
    }
    p->listen_bad[key] = true; /* until proven otherwise */
    const char *s = sl__yaml_scalar(&p->y, path, "host:port (such as 127.0.0.1:8080) or off");
    if (!s) return;
    p->listen_line[key] = sl__yaml_line(&p->y);
    if (strcmp(s, "off") == 0) {
        *l[key] = (sl__listen_config){.enabled = false};
        p->listen_bad[key] = false;
        return;
    }
    const char *why = "";
    sl__listen_config v = {0};
    if (!parse_listen(s, &v, &why)) {
        char q[64];
        sl__yaml_quote(q, sizeof q, s, sl__yaml_len(&p->y));
        sl__yaml_error(&p->y, sl__yaml_line(&p->y), path, "cannot use %s: %s", q, why);
        return;
    }
    *l[key] = v;
    p->listen_bad[key] = false;
}

/* "host:port" (the port required unless def_port) or "[v6]:port" into a. */
static bool parse_host_port(const char *s, size_t len, uint16_t def_port, sl__redis_addr *a) {
    const char *end = s + len, *hs = s, *he, *colon = NULL;
    if (len && *s == '[') {
        hs = s + 1;
        he = memchr(hs, ']', (size_t)(end - hs));
        if (!he) return false;
        if (he + 1 < end) {
            if (he[1] != ':') return false;
            colon = he + 1;
        }
    } else {
        colon = memrchr(s, ':', len);
        he = colon ? colon : end;
        if (colon && memchr(s, ':', (size_t)(colon - s))) return false; /* v6 needs brackets */
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0 || hl > SL__REDIS_HOST_MAX) return false;
    uint64_t port = def_port;
    if (colon) {
        char num[8];
        size_t nl = (size_t)(end - colon - 1);
        if (nl == 0 || nl >= sizeof num) return false;
        memcpy(num, colon + 1, nl);
        num[nl] = '\0';
        if (!sl__yaml_parse_u64(num, &port)) return false;
    }
    if (port == 0 || port > 65535) return false;
    memcpy(a->host, hs, hl);
    a->host[hl] = '\0';
    a->port = (uint16_t)port;
    return true;
}

/* redis://[[user]:password@]host[:port][/db] or unix://path. */
static bool parse_redis_url(const char *s, sl__redis_config *r, const char **why) {
    if (strncmp(s, "rediss://", 9) == 0) {
        *why = "TLS (rediss://) is not supported: hiredis 0.14's async API has no TLS; use a "
               "local TLS tunnel and redis://";
        return false;
    }
    if (strncmp(s, "unix://", 7) == 0) {
        size_t n = strlen(s + 7);
        if (n == 0 || n >= sizeof r->unix_path) return (*why = "bad socket path"), false;
        memcpy(r->unix_path, s + 7, n + 1);
        r->addr.host[0] = '\0';
        return true;
    }
    if (strncmp(s, "redis://", 8) != 0) {
        *why = "expected redis://host:port/db or unix://path";
        return false;
    }
    const char *p = s + 8;
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (!colon) return (*why = "credentials must be user:password or :password"), false;
        size_t ul = (size_t)(colon - p), pl = (size_t)(at - colon - 1);
        if (ul >= sizeof r->user || pl >= sizeof r->password || pl == 0)
            return (*why = "credentials too long or empty password"), false;
        memcpy(r->user, p, ul);
        r->user[ul] = '\0';
        memcpy(r->password, colon + 1, pl);
        r->password[pl] = '\0';
        p = at + 1;
    }
    const char *slash = strchr(p, '/');
    size_t hl = slash ? (size_t)(slash - p) : strlen(p);
    if (!parse_host_port(p, hl, 6379, &r->addr)) return (*why = "bad host:port"), false;
    r->db = 0;
    if (slash && slash[1]) {
        uint64_t db;
        if (!sl__yaml_parse_u64(slash + 1, &db) || db > 65535)
            return (*why = "bad database number"), false;
        r->db = (unsigned)db;
    }
    r->unix_path[0] = '\0';
    return true;
}

/* store.redis.cluster: a list of seed nodes (host:port); null is an error
 * here (a cluster without seeds). */
static void redis_cluster(sl__config_parser *p, sl__redis_config *r, const char *path) {
    if (!sl__yaml_is_seq(&p->y)) {
        sl__yaml_expected(&p->y, path, "a list of host:port");
        return;
    }
    r->cluster = true;
    r->nseeds = 0;
    for (size_t i = 0;; i++) {
        if (!sl__yaml_next_item(&p->y)) return;
        char item[SL__YAML_PATH_SIZE];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        const char *s = sl__yaml_scalar(&p->y, item, "host:port");
        if (!s) continue;
        if (r->nseeds == SL__REDIS_MAX_SEEDS) {
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), item, "at most %d seed nodes",
                           SL__REDIS_MAX_SEEDS);
            continue;
        }
        if (!parse_host_port(s, strlen(s), 0, &r->seeds[r->nseeds]))
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), item, "expected host:port");
        else
            r->nseeds++;
    }
}

static void redis_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    (void)obj;
    sl__redis_config *r = &p->cfg->redis;
    uint64_t u;
    int64_t d;
    switch (key) {
    case REDIS_URL: {
        const char *s = sl__yaml_scalar(&p->y, path, "a URL such as redis://127.0.0.1:6379/0");
        const char *why = "";
        if (s && !parse_redis_url(s, r, &why)) {
            char q[64];
            sl__yaml_quote(q, sizeof q, s, sl__yaml_len(&p->y));
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), path, "cannot use %s: %s", q, why);
        }
        break;
    }
    case REDIS_CLUSTER:
        redis_cluster(p, r, path);
        break;
    case REDIS_TIMEOUT:
        if (sl__yaml_duration(&p->y, path, NS_MS / 1000, 60 * NS_SEC, &d)) r->timeout = d;
        break;
    case REDIS_ON_FAILURE: {
        int i = sl__yaml_enum(&p->y, path, "failure mode", sl__config_failure_modes,
                              COUNT(sl__config_failure_modes));
        if (i >= 0) r->on_failure = (sl__fail_mode)i;
        break;
    }
    case REDIS_INSTANCES:
        if (sl__yaml_uint(&p->y, path, "a number of instances", 1, 1024, &u))
            r->expected_instances = (unsigned)u;
        break;
    case REDIS_SYNC: {
        int i = sl__yaml_enum(&p->y, path, "sync mode", sync_modes, COUNT(sync_modes));
        if (i >= 0) r->batched = i == 1;
        break;
    }
    case REDIS_SYNC_INTERVAL:
        if (sl__yaml_duration(&p->y, path, NS_MS, 60 * NS_SEC, &d)) r->sync_interval = d;
        break;
    case REDIS_PREFIX: {
        const char *s = sl__yaml_scalar(&p->y, path, "a key prefix such as \"sluice:\"");
        if (s && strlen(s) >= sizeof r->prefix)
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), path, "at most %zu bytes",
                           sizeof r->prefix - 1);
        else if (s && (strchr(s, '{') || strchr(s, '}')))
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                           "must not contain { or } (the key's hash tag follows it)");
        else if (s)
            snprintf(r->prefix, sizeof r->prefix, "%s", s);
        break;
    }
    case REDIS_BREAKER_FAILURES:
        if (sl__yaml_uint(&p->y, path, "a number of failures", 1, 1000000, &u))
            r->breaker_failures = (unsigned)u;
        break;
    case REDIS_BREAKER_COOLDOWN:
        if (sl__yaml_duration(&p->y, path, NS_MS, 3600 * NS_SEC, &d)) r->breaker_cooldown = d;
        break;
    case REDIS_BREAKER_WINDOW:
        if (sl__yaml_duration(&p->y, path, 0, 3600 * NS_SEC, &d)) r->breaker_window = d;
        break;
    case REDIS_MODULE: {
        int i = sl__yaml_enum(&p->y, path, "module mode", module_modes, COUNT(module_modes));
        if (i >= 0) r->module = (sl__redis_module_mode)i;
        break;
    }
    case REDIS_DENY_CACHE:
        if (sl__yaml_uint(&p->y, path, "a number of entries (0 = off)", 0, 1u << 24, &u))
            r->deny_cache = (size_t)u;
        break;
    }
}

static void store_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    (void)obj;
    sl__config *c = p->cfg;
    switch (key) {
    case STORE_TYPE: {
        int t = sl__yaml_enum(&p->y, path, "store type", store_types, COUNT(store_types));
        if (t >= 0) {
            c->store_type = (sl__store_type)t; /* store_types is in its order */
            p->store_type_line = sl__yaml_line(&p->y);
        }
        break;
    }
    case STORE_MAX_MEMORY: {
        uint64_t v;
        if (sl__yaml_size(&p->y, path, MiB, TiB, &v)) c->max_memory = (size_t)v;
        break;
    }
    case STORE_REDIS: {
        int seen[COUNT(redis_keys)] = {0};
        if (sl__yaml_is_null(&p->y)) break;
        p->redis_line = p->y.key_line;
        sl__yaml_section(&p->y, path, redis_keys, COUNT(redis_keys), redis_value, NULL, seen,
                         "a mapping (url, timeout, on_failure, ...)");
        if (seen[REDIS_URL] && seen[REDIS_CLUSTER])
            sl__yaml_error(&p->y, p->redis_line, path,
                           "give either url (one Redis) or cluster (seed nodes), not both");
        break;
    }
    }
}

static void limits_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    (void)obj;
    sl__limits_config *l = &p->cfg->limits;
    uint64_t v;
    int64_t d;
    switch (key) {
    case LIM_HEADER:
        if (sl__yaml_size(&p->y, path, KiB, MiB, &v)) l->max_header_bytes = (size_t)v;
        break;
    case LIM_BODY:
        if (sl__yaml_size(&p->y, path, KiB, 16 * MiB, &v)) l->max_body_bytes = (size_t)v;
        break;
    case LIM_RESP_FRAME:
        if (sl__yaml_size(&p->y, path, KiB, 16 * MiB, &v)) l->max_resp_frame = (size_t)v;
        break;
    case LIM_CONNECTIONS:
        if (sl__yaml_uint(&p->y, path, "a number of connections", 1, 1000000, &v))
            l->max_connections = (unsigned)v;
        break;
    case LIM_IDLE:
        if (sl__yaml_duration(&p->y, path, NS_MS, NS_DAY, &d)) l->idle_timeout = d;
        break;
    case LIM_HEADER_TIMEOUT:
        if (sl__yaml_duration(&p->y, path, NS_MS, 3600 * NS_SEC, &d)) l->header_timeout = d;
        break;
    case LIM_COMMAND_TIMEOUT:
        if (sl__yaml_duration(&p->y, path, NS_MS, 3600 * NS_SEC, &d)) l->command_timeout = d;
        break;
    case LIM_DRAIN_TIMEOUT:
        if (sl__yaml_duration(&p->y, path, NS_MS, 3600 * NS_SEC, &d)) l->drain_timeout = d;
        break;
    case LIM_OUTPUT:
        if (sl__yaml_size(&p->y, path, 4 * KiB, GiB, &v)) l->max_pending_output = (size_t)v;
        break;
    case LIM_HELD:
        if (sl__yaml_uint(&p->y, path, "a number of answers", 1, 1000000, &v))
            l->max_held = (size_t)v;
        break;
    case LIM_OUTPUT_TOTAL:
        if (sl__yaml_size(&p->y, path, MiB, TiB, &v)) l->max_pending_output_total = (uint64_t)v;
        break;
    }
}

static void admin_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    (void)obj;
    sl__admin_config *a = &p->cfg->admin;
    int i;
    switch (key) {
    case ADMIN_RELOAD:
        i = sl__yaml_enum(&p->y, path, "reload mode", reload_modes, COUNT(reload_modes));
        if (i >= 0) a->reload = (uint8_t)i;
        break;
    case ADMIN_UI:
        i = sl__yaml_enum(&p->y, path, "dashboard mode", ui_modes, COUNT(ui_modes));
        if (i >= 0) a->ui = (uint8_t)i;
        break;
    case ADMIN_RELOAD_TOKEN: {
        /* a bearer token: printable ASCII without spaces, long enough not to
           be guessed, bounded so that comparing it costs nothing */
        const char *s = sl__yaml_scalar(&p->y, path, "a token of 16 to 256 printable characters");
        if (!s) break;
        size_t n = sl__yaml_len(&p->y);
        bool printable = true;
        for (size_t k = 0; k < n; k++)
            if (s[k] < 0x21 || s[k] > 0x7e) printable = false;
        if (n < 16 || n > SL__ADMIN_TOKEN_MAX || !printable) {
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                           "expected a token of 16 to %d printable characters without spaces, got "
                           "%zu bytes%s",
                           SL__ADMIN_TOKEN_MAX, n,
                           printable ? "" : " with a space or control byte");
            break;
        }
        memcpy(a->reload_token, s, n);
        a->reload_token[n] = '\0';
        p->reload_token_line = sl__yaml_line(&p->y);
        break;
    }
    }
}

void sl__config_listen(sl__config_parser *p, const char *path) {
    int seen[COUNT(listen_keys)] = {0};
    sl__yaml_section(&p->y, path, listen_keys, COUNT(listen_keys), listen_value, NULL, seen,
                     "a mapping of http, grpc and resp");
}

void sl__config_store(sl__config_parser *p, const char *path) {
    sl__config *c = p->cfg;
    int seen[COUNT(store_keys)] = {0};
    sl__yaml_section(&p->y, path, store_keys, COUNT(store_keys), store_value, NULL, seen,
                     "a mapping of type, max_memory, ...");
    if (p->y.fatal) return;
    if (c->redis.cluster && c->redis.nseeds == 0)
        sl__yaml_error(&p->y, p->redis_line, "store.redis.cluster", "give at least one seed node");
    if (c->store_type == SL__STORE_REDIS && c->redis.cluster && c->redis.db != 0)
        sl__yaml_error(&p->y, p->redis_line, "store.redis", "Redis Cluster has only database 0");
}

void sl__config_limits(sl__config_parser *p, const char *path) {
    int seen[COUNT(limits_keys)] = {0};
    sl__yaml_section(&p->y, path, limits_keys, COUNT(limits_keys), limits_value, NULL, seen,
                     "a mapping of max_header_bytes, idle_timeout, ...");
}

void sl__config_admin(sl__config_parser *p, const char *path) {
    sl__config *c = p->cfg;
    int seen[COUNT(admin_keys)] = {0};
    p->admin_line = p->y.key_line;
    sl__yaml_section(&p->y, path, admin_keys, COUNT(admin_keys), admin_value, NULL, seen,
                     "a mapping of reload and reload_token");
    if (p->y.fatal) return;
    if (c->admin.reload == SL__RELOAD_TOKEN && !c->admin.reload_token[0] && !seen[1])
        sl__yaml_error(&p->y, seen[0] ? seen[0] : p->admin_line, "admin.reload",
                       "reload: token needs admin.reload_token (the bearer token to ask for)");
    else if (c->admin.reload != SL__RELOAD_TOKEN && c->admin.reload_token[0])
        sl__yaml_error(&p->y, p->reload_token_line, "admin.reload_token",
                       "only used with reload: token (set admin.reload: token, or remove it)");
}
