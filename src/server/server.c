/* server.c: starting, reloading and stopping the one sluiced instance.
 *
 * Listeners: every worker has its own listening socket per protocol, all
 * bound to the same address with SO_REUSEPORT (libuv 1.44 has no flag for
 * it, so the sockets are made here and handed to uv_tcp_open), and the
 * kernel spreads connections over them. The sockets are bound in the main
 * thread so that port 0 (tests) resolves once and every worker shares it.
 *
 * Reload: only the main thread reloads (SIGHUP, and POST /v1/reload through
 * reload.c), so s->config and the sets are written by one thread only. The
 * new policy set is built, then published under reload_lock by bumping
 * `generation`; each worker picks it up at its next loop tick and drops its
 * reference to the old one, which is freed by the last holder. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy/ramp.h"

#include "sluice/error.h"
#include "server/reload.h"
#include "server/server.h"
#include "sluice/clock.h"
#include "util/log.h"

static int parse_addr(const sl__listen_config *l, struct sockaddr_storage *ss, socklen_t *len) {
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, l->host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(l->port);
        *len = sizeof *v4;
        return 0;
    }
    if (inet_pton(AF_INET6, l->host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(l->port);
        *len = sizeof *v6;
        return 0;
    }
    return SL_EINVAL;
}

/* Binds one SO_REUSEPORT listening socket; *port in/out (0 = pick one). */
static int bind_listener(const sl__listen_config *l, uint16_t *port) {
    sl__listen_config at = *l;
    at.port = *port ? *port : l->port;
    struct sockaddr_storage ss;
    socklen_t len;
    if (parse_addr(&at, &ss, &len) != 0) {
        sl__log_error("listen: not a numeric address: %s", l->host);
        return SL_EINVAL;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return SL_EINVAL;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, len) != 0) {
        sl__log_error("listen %s:%u: %s", l->host, (unsigned)at.port, strerror(errno));
        close(fd);
        return SL_EINVAL;
    }
    struct sockaddr_storage got;
    memset(&got, 0, sizeof got); /* the analyzer cannot see getsockname fill it */
    socklen_t gl = sizeof got;
    if (getsockname(fd, (struct sockaddr *)&got, &gl) != 0) {
        sl__log_error("listen %s:%u: %s", l->host, (unsigned)at.port, strerror(errno));
        close(fd);
        return SL_EINVAL;
    }
    *port = ntohs(got.ss_family == AF_INET ? ((struct sockaddr_in *)&got)->sin_port
                                           : ((struct sockaddr_in6 *)&got)->sin6_port);
    return fd;
}

int sl__server_start(sl__server *s, sl__config *cfg, const char *config_path,
                     uv_loop_t *main_loop) {
    memset(s, 0, sizeof *s);
    s->config = cfg;
    s->config_path = config_path ? strdup(config_path) : NULL;
    pthread_mutex_init(&s->reload_lock, NULL);
    if (sl__reload_init(s, main_loop) != 0) {
        sl__log_error("cannot set up reloads on the main loop");
        return SL_EINVAL;
    }
    s->started_at = sl_now();
    sl__ramp_restart(s->started_at, SL__RAMP_BY_START); /* ramp_up: from the start */
    char err[256];
    if (sl__policy_set_create(cfg, NULL, s->started_at, &s->policies, err, sizeof err) != 0) {
        sl__log_error("%s", err);
        return SL_EINVAL;
    }
    if (!(s->engine = sl__engine_new(cfg))) {
        sl__log_error("out of memory");
        return SL_ENOMEM;
    }
    if (sl__domain_set_create(cfg, NULL, s->started_at, &s->domains, err, sizeof err) != 0) {
        sl__log_error("%s", err);
        return SL_EINVAL;
    }
    atomic_init(&s->generation, 1);
    /* CL.THROTTLE: one table for every key whatever its parameters, with the
     * same cap as a policy's table (docs/configuration.md). */
    if (sl__cell_create(cfg->max_memory, &s->cell) != 0) {
        sl__log_error("out of memory");
        return SL_ENOMEM;
    }
    sl__cell_set_fail_mode(s->cell, cfg->redis.on_failure);

    unsigned n = cfg->workers;
    if (n == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (unsigned)cores : 1;
    }
    if (n > SL__MAX_WORKERS) n = SL__MAX_WORKERS;
    s->nworkers = n;
    s->workers = calloc(n, sizeof *s->workers);
    if (!s->workers) return SL_ENOMEM;

    const sl__listen_config *ls[SL__PROTO_COUNT] = {&cfg->http, &cfg->resp, &cfg->grpc};
    static const char *const pname[SL__PROTO_COUNT] = {"http", "resp", "grpc"};
    int fds[SL__MAX_WORKERS][SL__PROTO_COUNT];
    for (unsigned i = 0; i < n; i++) {
        for (int p = 0; p < SL__PROTO_COUNT; p++) {
            fds[i][p] = -1;
            if (!ls[p]->enabled) continue;
            fds[i][p] = bind_listener(ls[p], &s->bound_port[p]);
            if (fds[i][p] < 0) return SL_EINVAL;
        }
    }
    for (int p = 0; p < SL__PROTO_COUNT; p++)
        if (ls[p]->enabled)
            sl__log_info("listening %s on %s%s%s:%u (%u workers)", pname[p],
                         strchr(ls[p]->host, ':') ? "[" : "", ls[p]->host,
                         strchr(ls[p]->host, ':') ? "]" : "", (unsigned)s->bound_port[p], n);

    for (unsigned i = 0; i < n; i++) {
        sl__worker *w = &s->workers[i];
        w->server = s;
        w->id = i;
        uv_sem_init(&w->started, 0);
        for (int p = 0; p < SL__PROTO_COUNT; p++) {
            w->listening[p] = fds[i][p] >= 0;
            w->listen_fd[p] = fds[i][p];
        }
        if (pthread_create(&w->thread, NULL, sl__worker_main, w) != 0) {
            sl__log_error("cannot start worker %u", i);
            return SL_EINVAL;
        }
        uv_sem_wait(&w->started);
        if (w->start_error) return SL_EINVAL;
    }
    return 0;
}

/* Counts what a reload did to the policies, and logs the names (at most a
 * line's worth of each kind). */
static void reload_diff(const sl__policy_set *old, const sl__policy_set *next,
                        sl__reload_result *r) {
    char added[512] = "", removed[512] = "", changed[512] = "";
    r->added = r->removed = r->changed = r->kept = 0;
    for (size_t i = 0; i < sl__policy_set_count(next); i++) {
        const sl__policy *p = sl__policy_set_at(next, i);
        const sl__policy *o = sl__policy_find(old, p->cfg.name, strlen(p->cfg.name));
        char *list = NULL;
        if (!o) {
            r->added++;
            list = added;
        } else if (o != p) { /* same name, new table: its state starts afresh */
            r->changed++;
            list = changed;
        } else {
            r->kept++;
        }
        if (list && strlen(list) + strlen(p->cfg.name) + 2 < sizeof added)
            strcat(strcat(list, " "), p->cfg.name);
    }
    for (size_t i = 0; i < sl__policy_set_count(old); i++) {
        const sl__policy *o = sl__policy_set_at(old, i);
        if (sl__policy_find(next, o->cfg.name, strlen(o->cfg.name))) continue;
        r->removed++;
        if (strlen(removed) + strlen(o->cfg.name) + 2 < sizeof removed)
            strcat(strcat(removed, " "), o->cfg.name);
    }
    sl__log_info("reload: %zu kept, %zu changed (fresh state)%s%s, %zu added%s%s, %zu removed%s%s",
                 r->kept, r->changed, r->changed ? ":" : "", changed, r->added, r->added ? ":" : "",
                 added, r->removed, r->removed ? ":" : "", removed);
}

static void reload_failed(sl__server *s, sl__reload_result *r) {
    r->rc = SL_EINVAL;
    atomic_fetch_add(&s->reload_failures, 1);
    sl__log_error("reload failed, keeping the running config: %s", r->message);
}

/* Loads the config file (or the default) into *cfg with the running store
 * section kept: 0, or SL_EINVAL with the errors written into err (*cfg NULL). */
static int load_next_config(sl__server *s, sl__config **cfg, char *err, size_t errlen) {
    *cfg = NULL;
    sl__config_errors *errs = malloc(sizeof *errs);
    if (!errs) {
        snprintf(err, errlen, "out of memory");
        return SL_ENOMEM;
    }
    int rc = s->config_path ? sl__config_load(s->config_path, cfg, errs)
                            : sl__config_load_default(cfg, errs);
    /* the store is chosen at start (its connections live in the workers):
     * the running store section stays, and the new config must suit it */
    if (rc == 0) {
        sl__config *c = *cfg;
        if (c->store_type != s->config->store_type ||
            /* both from calloc, strings written in place: padding and the bytes
               after each NUL are zero (a false difference would only warn) */
            // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
            memcmp(&c->redis, &s->config->redis, sizeof c->redis) != 0 ||
            c->max_memory != s->config->max_memory)
            sl__log_warn("reload: store changes (type, max_memory, redis) take effect at the "
                         "next restart; the running store section stays");
        c->store_type = s->config->store_type;
        c->redis = s->config->redis;
        c->max_memory = s->config->max_memory;
        rc = sl__config_check_store(c, errs);
    }
    if (rc != 0) {
        size_t off = (size_t)snprintf(err, errlen, "config has %zu error(s)", errs->n);
        for (size_t i = 0; i < errs->n && i < SL__CONFIG_MAX_ERRORS && off < errlen; i++)
            off += (size_t)snprintf(err + off, errlen - off, "; %s", errs->msg[i]);
        free(errs);
        sl__config_free(*cfg);
        *cfg = NULL;
        return SL_EINVAL;
    }
    free(errs);
    return 0;
}

/* The listeners and the workers stay as started: cfg takes the running
 * values of those fields (a warning when they differ). */
static void keep_listeners(const sl__server *s, sl__config *cfg) {
    if (strcmp(cfg->http.host, s->config->http.host) != 0 ||
        cfg->http.port != s->config->http.port ||
        strcmp(cfg->resp.host, s->config->resp.host) != 0 ||
        cfg->resp.port != s->config->resp.port ||
        strcmp(cfg->grpc.host, s->config->grpc.host) != 0 ||
        cfg->grpc.port != s->config->grpc.port || cfg->grpc.enabled != s->config->grpc.enabled ||
        cfg->http.enabled != s->config->http.enabled ||
        cfg->resp.enabled != s->config->resp.enabled || cfg->workers != s->config->workers)
        sl__log_warn("reload: listen and workers changes take effect at the next restart");
    /* keep the running listeners' view of the world for those fields */
    cfg->http = s->config->http;
    cfg->resp = s->config->resp;
    cfg->grpc = s->config->grpc;
    cfg->workers = s->config->workers;
}

/* Publishes cfg and its sets to the workers (taking all three) and frees
 * the ones they replace. */
static void swap_in(sl__server *s, sl__config *cfg, sl__policy_set *next,
                    sl__domain_set *next_domains) {
    sl__policy_set *old = s->policies;
    sl__domain_set *old_domains = s->domains;
    sl__config *old_cfg = s->config;
    /* the workers read these under reload_lock; this thread is their only writer */
    pthread_mutex_lock(&s->reload_lock);
    s->policies = next;
    s->domains = next_domains;
    s->config = cfg;
    atomic_fetch_add(&s->generation, 1);
    pthread_mutex_unlock(&s->reload_lock);
    sl__policy_set_release(old);
    sl__domain_set_release(old_domains);
    sl__config_free(old_cfg);
}

int sl__server_reload(sl__server *s, sl__reload_result *r) {
    memset(r, 0, sizeof *r);
    char *err = r->message;
    size_t errlen = sizeof r->message;
    sl__config *cfg = NULL;
    if (load_next_config(s, &cfg, err, errlen) != 0) {
        reload_failed(s, r);
        return SL_EINVAL;
    }
    sl__policy_set *next = NULL;
    sl__domain_set *next_domains = NULL;
    if (sl__policy_set_create(cfg, s->policies, sl_now(), &next, err, errlen) != 0 ||
        sl__domain_set_create(cfg, s->domains, sl_now(), &next_domains, err, errlen) != 0) {
        if (next) sl__policy_set_release(next);
        sl__config_free(cfg);
        reload_failed(s, r);
        return SL_EINVAL;
    }
    keep_listeners(s, cfg);
    reload_diff(s->policies, next, r);
    r->policies = sl__policy_set_count(next);
    swap_in(s, cfg, next, next_domains);
    atomic_fetch_add(&s->reloads, 1);
    sl__log_info("reloaded %s: %zu policies",
                 s->config_path ? s->config_path : "the default config", r->policies);
    for (unsigned i = 0; i < s->nworkers; i++) uv_async_send(&s->workers[i].wake);
    return 0;
}

void sl__server_drain_and_stop(sl__server *s, int64_t grace) {
    sl__reload_stop(s); /* before the workers drain: they write the answers first */
    s->drain_grace = grace;
    atomic_store(&s->draining, true);
    for (unsigned i = 0; i < s->nworkers; i++) uv_async_send(&s->workers[i].wake);
    for (unsigned i = 0; i < s->nworkers; i++) pthread_join(s->workers[i].thread, NULL);
    free(s->workers);
    sl__policy_set_release(s->policies);
    sl__domain_set_release(s->domains);
    sl__cell_destroy(s->cell);
    sl__engine_free(s->engine);
    sl__config_free(s->config);
    free(s->config_path);
    pthread_mutex_destroy(&s->reload_lock);
    pthread_mutex_destroy(&s->ask_lock);
}
