/* test_client_http.c: the whole of libsluice-client (libcurl included)
 * against an in-process HTTP/1.1 server on a loopback port that answers from
 * a script, with a fake clock: every wait the client decides is checked
 * exactly, none is slept, so the seed's example (429 with Retry-After: 1
 * twice, then 200) runs in milliseconds. Also: HTTP-date hints, POST not
 * retried, giving up, the budget, AIMD pacing, RateLimit slow-down, draining
 * bodies on one connection, deadlines and errors. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem, strcasestr */
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "sluice/client.h"
#include "sluice/sluice.h"

#include "helpers.h"

/* ---- a scripted HTTP server ------------------------------------------------ */

typedef struct reply {
    int status;
    const char *fields; /* extra "Name: value\r\n" lines */
    const char *body;   /* NULL = empty */
    size_t body_len;    /* 0 = strlen(body) */
} reply;

#define MAX_SCRIPT 32
#define MAX_CONNS  16

typedef struct stub {
    int lfd, port;
    pthread_t accepter;
    pthread_t conns[MAX_CONNS];
    int conn_fds[MAX_CONNS];
    int nconns;
    pthread_mutex_t mu;
    reply script[MAX_SCRIPT];
    int nscript;
    int requests;
    char methods[64][16];
    char last_head[8192];
    char last_body[256];
    int stop;
} stub;

typedef struct conn_arg {
    stub *s;
    int fd;
} conn_arg;

static int send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void *conn_main(void *arg) {
    conn_arg *ca = arg;
    stub *s = ca->s;
    int fd = ca->fd;
    free(ca);
    static __thread char buf[1 << 16];
    size_t have = 0;
    for (;;) {
        char *end;
        while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
            if (have == sizeof buf) return NULL;
            ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
            if (n <= 0) return NULL;
            have += (size_t)n;
        }
        size_t hlen = (size_t)(end + 4 - buf), clen = 0;
        char *cl = strcasestr(buf, "\r\nContent-Length:");
        if (cl && cl < end) clen = strtoul(cl + 17, NULL, 10);
        while (have < hlen + clen) {
            ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
            if (n <= 0) return NULL;
            have += (size_t)n;
        }
        pthread_mutex_lock(&s->mu);
        int idx = s->requests++;
        reply r = s->script[idx < s->nscript ? idx : s->nscript - 1];
        char method[16] = {0};
        sscanf(buf, "%15s", method);
        if (idx < 64) memcpy(s->methods[idx], method, sizeof method);
        snprintf(s->last_head, sizeof s->last_head, "%.*s", (int)hlen, buf);
        snprintf(s->last_body, sizeof s->last_body, "%.*s", (int)clen, buf + hlen);
        pthread_mutex_unlock(&s->mu);
        const char *body = r.body ? r.body : "";
        size_t blen = r.body_len ? r.body_len : strlen(body);
        char head[2048];
        int n = snprintf(head, sizeof head, "HTTP/1.1 %d Scripted\r\nContent-Length: %zu\r\n%s\r\n",
                         r.status, blen, r.fields ? r.fields : "");
        if (send_all(fd, head, (size_t)n) != 0) return NULL;
        if (strcmp(method, "HEAD") != 0 && send_all(fd, body, blen) != 0) return NULL;
        memmove(buf, buf + hlen + clen, have - hlen - clen);
        have -= hlen + clen;
    }
}

static void *accept_main(void *arg) {
    stub *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop) return NULL;
        struct pollfd p = {.fd = s->lfd, .events = POLLIN};
        if (poll(&p, 1, 20) <= 0) continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) continue;
        int one = 1; /* head and body go in two sends: no Nagle delay between them */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn_arg *ca = malloc(sizeof *ca);
        ca->s = s;
        ca->fd = fd;
        pthread_mutex_lock(&s->mu);
        if (s->nconns == MAX_CONNS) {
            pthread_mutex_unlock(&s->mu);
            close(fd);
            free(ca);
            continue;
        }
        s->conn_fds[s->nconns] = fd;
        pthread_create(&s->conns[s->nconns++], NULL, conn_main, ca);
        pthread_mutex_unlock(&s->mu);
    }
}

static stub *stub_start(const reply *script, int n) {
    stub *s = calloc(1, sizeof *s);
    assert_non_null(s);
    pthread_mutex_init(&s->mu, NULL);
    memcpy(s->script, script, (size_t)n * sizeof *script);
    s->nscript = n;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 16), 0);
    socklen_t len = sizeof a;
    getsockname(s->lfd, (struct sockaddr *)&a, &len);
    s->port = ntohs(a.sin_port);
    pthread_create(&s->accepter, NULL, accept_main, s);
    return s;
}

static void stub_stop(stub *s) {
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->accepter, NULL);
    for (int i = 0; i < s->nconns; i++) shutdown(s->conn_fds[i], SHUT_RDWR);
    for (int i = 0; i < s->nconns; i++) {
        pthread_join(s->conns[i], NULL);
        close(s->conn_fds[i]);
    }
    close(s->lfd);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static char *url_of(const stub *s, const char *path, char *buf, size_t size) {
    snprintf(buf, size, "http://127.0.0.1:%d%s", s->port, path);
    return buf;
}

/* ---- an event recorder (the fake clock is helpers.h's, strict) --------------- */

typedef struct fake {
    sl_client_event events[64];
    int nevents;
} fake;

static void record(void *ctx, const sl_client_event *e) {
    fake *f = ctx;
    if (f->nevents < 64) f->events[f->nevents++] = *e;
}

typedef struct env {
    fake f;
    fake_clock fc; /* strict: the client never sleeps for nothing */
    sl_clock clock;
    sl_client_options o;
    sl_client *c;
} env;

/* A client on a fake clock starting at 1000 s, recording events. */
static void env_init(env *e) {
    memset(e, 0, sizeof *e);
    e->fc.now = 1000 * SEC;
    e->fc.strict = true;
    e->clock = fake_clock_of(&e->fc);
    sl_client_options_init(&e->o);
    e->o.clock = &e->clock;
    e->o.seed = 12345;
    e->o.on_event = record;
    e->o.event_ctx = &e->f;
}

static void env_create(env *e) {
    assert_int_equal(sl_client_create(&e->o, &e->c), SL_OK);
}

/* env_init and env_create: a client with the default options. */
static void env_open(env *e) {
    env_init(e);
    env_create(e);
}

/* The client destroyed and the stub stopped: the end of most tests. */
static void env_close(env *e, stub *s) {
    sl_client_destroy(e->c);
    stub_stop(s);
}

/* GET url: SL_OK and its response. */
static sl_response *get_ok(env *e, const char *url) {
    sl_response *r = NULL;
    assert_int_equal(sl_client_get(e->c, url, &r), SL_OK);
    return r;
}

/* GET url: SL_OK, the response dropped. */
static void get_drop(env *e, const char *url) {
    sl_response_free(get_ok(e, url));
}

/* r's info, with its status, attempts and stop as expected. */
static sl_response_info expect_info(const sl_response *r, int status, int attempts,
                                    sl_client_stop stop) {
    sl_response_info info;
    sl_response_info_get(r, &info);
    assert_int_equal(info.status, status);
    assert_int_equal(info.attempts, attempts);
    assert_int_equal(info.stop, stop);
    return info;
}

static int stub_requests(stub *s) {
    pthread_mutex_lock(&s->mu);
    int n = s->requests;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static int stub_conns(stub *s) {
    pthread_mutex_lock(&s->mu);
    int n = s->nconns;
    pthread_mutex_unlock(&s->mu);
    return n;
}

#define RA1 "Retry-After: 1\r\n"

/* ---- tests ------------------------------------------------------------------- */

static void test_seed_example(void **state) {
    (void)state;
    /* 429 with Retry-After: 1 twice, then 200: two waits in [1 s, 2 s), then success */
    const reply script[] = {
        {429, RA1, "slow down", 0}, {429, RA1, "slow down", 0}, {200, NULL, "ok", 0}};
    stub *s = stub_start(script, 3);
    env e;
    env_open(&e);
    char url[128];
    sl_response *r = get_ok(&e, url_of(s, "/", url, sizeof url));
    sl_response_info info = expect_info(r, 200, 3, SL_STOP_DONE);
    size_t len;
    assert_string_equal(sl_response_body(r, &len), "ok");
    assert_int_equal(e.f.nevents, 2);
    assert_int_equal(e.fc.sleeps, 2);
    int64_t sum = 0;
    for (int i = 0; i < 2; i++) {
        const sl_client_event *ev = &e.f.events[i];
        assert_int_equal(ev->kind, SL_EVENT_RETRY);
        assert_int_equal(ev->attempt, i + 1);
        assert_int_equal(ev->status, 429);
        assert_int_equal(ev->hint, SEC);
        assert_true(ev->wait >= SEC && ev->wait < 2 * SEC);
        assert_int_equal(e.fc.slept[i], ev->wait); /* the fake clock slept exactly that */
        sum += ev->wait;
    }
    assert_int_not_equal(e.f.events[0].wait, e.f.events[1].wait); /* jitter */
    assert_int_equal(info.waited, sum);
    assert_int_equal(info.elapsed, sum);
    assert_int_equal(e.fc.now, 1000 * SEC + sum);
    /* three requests, one connection: the 429 bodies were drained */
    assert_int_equal(stub_requests(s), 3);
    assert_int_equal(stub_conns(s), 1);
    sl_client_stats st;
    sl_client_stats_get(e.c, &st);
    assert_int_equal(st.requests, 1);
    assert_int_equal(st.attempts, 3);
    assert_int_equal(st.retries, 2);
    assert_int_equal(st.waited, sum);
    assert_string_equal(sl_client_errmsg(e.c), "");
    sl_response_free(r);
    env_close(&e, s);
}

static void test_same_seed_same_waits(void **state) {
    (void)state;
    const reply script[] = {{429, RA1, NULL, 0}, {429, RA1, NULL, 0}, {200, NULL, "ok", 0},
                            {429, RA1, NULL, 0}, {429, RA1, NULL, 0}, {200, NULL, "ok", 0}};
    stub *s = stub_start(script, 6);
    int64_t waits[2][2];
    for (int run = 0; run < 2; run++) {
        env e;
        env_open(&e);
        char url[128];
        sl_response *r = get_ok(&e, url_of(s, "/", url, sizeof url));
        assert_int_equal(sl_response_status(r), 200);
        waits[run][0] = e.f.events[0].wait;
        waits[run][1] = e.f.events[1].wait;
        sl_response_free(r);
        sl_client_destroy(e.c);
    }
    assert_int_equal(waits[0][0], waits[1][0]);
    assert_int_equal(waits[0][1], waits[1][1]);
    stub_stop(s);
}

static void test_http_date_hint(void **state) {
    (void)state;
    /* Retry-After as an HTTP-date, read against the answer's Date: exactly 3 s */
    const reply script[] = {{503,
                             "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                             "Retry-After: Sun, 06 Nov 1994 08:49:40 GMT\r\n",
                             NULL, 0},
                            {200, NULL, "ok", 0}};
    stub *s = stub_start(script, 2);
    env e;
    env_open(&e);
    char url[128];
    sl_response *r = get_ok(&e, url_of(s, "/", url, sizeof url));
    assert_int_equal(sl_response_status(r), 200);
    assert_int_equal(e.f.nevents, 1);
    assert_int_equal(e.f.events[0].status, 503);
    assert_int_equal(e.f.events[0].hint, 3 * SEC);
    assert_true(e.f.events[0].wait >= 3 * SEC && e.f.events[0].wait < 6 * SEC);
    sl_response_free(r);
    env_close(&e, s);
}

static sl_response *do_req(env *e, stub *s, const char *method, const char *const *headers,
                           unsigned flags) {
    char url[128];
    sl_client_request req = {.method = method,
                             .url = url_of(s, "/x", url, sizeof url),
                             .headers = headers,
                             .body = "payload",
                             .body_len = 7,
                             .flags = flags};
    sl_response *r = NULL;
    assert_int_equal(sl_client_do(e->c, &req, &r), SL_OK);
    return r;
}

static void test_unsafe_not_retried(void **state) {
    (void)state;
    const reply script[] = {{429, RA1, "limited", 0}};
    stub *s = stub_start(script, 1);
    env e;
    env_open(&e);
    /* a POST that was answered 429 is returned at once, body and all */
    sl_response *r = do_req(&e, s, "POST", NULL, 0);
    sl_response_info info = expect_info(r, 429, 1, SL_STOP_UNSAFE);
    assert_string_equal(sl_response_body(r, NULL), "limited");
    assert_string_equal(sl_response_header(r, "retry-after"), "1");
    assert_int_equal(e.f.nevents, 1);
    assert_int_equal(e.f.events[0].kind, SL_EVENT_GIVE_UP);
    assert_int_equal(e.f.events[0].stop, SL_STOP_UNSAFE);
    assert_int_equal(e.fc.sleeps, 0);
    assert_int_equal(stub_requests(s), 1);
    pthread_mutex_lock(&s->mu);
    assert_string_equal(s->methods[0], "POST");
    assert_string_equal(s->last_body, "payload");
    pthread_mutex_unlock(&s->mu);
    sl_response_free(r);
    /* so is PATCH; a body-less default with a body is POST */
    r = do_req(&e, s, "PATCH", NULL, 0);
    assert_int_equal(stub_requests(s), 2);
    sl_response_free(r);
    r = do_req(&e, s, NULL, NULL, 0);
    assert_int_equal(stub_requests(s), 3);
    pthread_mutex_lock(&s->mu);
    assert_string_equal(s->methods[2], "POST");
    pthread_mutex_unlock(&s->mu);
    sl_response_free(r);
    /* an Idempotency-Key makes it safe to repeat */
    e.o.max_attempts = 2;
    sl_client_destroy(e.c);
    env_create(&e);
    const char *const key[] = {"idempotency-key: 8e03978e", NULL};
    r = do_req(&e, s, "POST", key, 0);
    sl_response_info_get(r, &info);
    assert_int_equal(info.attempts, 2);
    assert_int_equal(info.stop, SL_STOP_ATTEMPTS);
    assert_int_equal(stub_requests(s), 5);
    pthread_mutex_lock(&s->mu);
    assert_non_null(strcasestr(s->last_head, "Idempotency-Key: 8e03978e"));
    pthread_mutex_unlock(&s->mu);
    sl_response_free(r);
    /* so does the caller's opt-in, per request or per client */
    r = do_req(&e, s, "POST", NULL, SL_CLIENT_RETRY_UNSAFE);
    assert_int_equal(stub_requests(s), 7);
    sl_response_free(r);
    /* PUT and DELETE are idempotent, OPTIONS and HEAD safe */
    const char *safe[] = {"PUT", "DELETE", "OPTIONS", "HEAD"};
    for (int i = 0; i < 4; i++) {
        int before = stub_requests(s);
        r = do_req(&e, s, safe[i], NULL, 0);
        sl_response_info_get(r, &info);
        assert_int_equal(info.attempts, 2);
        assert_int_equal(stub_requests(s), before + 2);
        pthread_mutex_lock(&s->mu);
        assert_string_equal(s->methods[before], safe[i]);
        pthread_mutex_unlock(&s->mu);
        sl_response_free(r);
    }
    env_close(&e, s);
}

static void test_backoff_and_give_up(void **state) {
    (void)state;
    /* no hint: full jitter under 400 ms, 800 ms, 1.6 s, 3.2 s, then give up
     * after 5 attempts and return the last answer */
    const reply script[] = {{429, NULL, "no", 0},
                            {429, NULL, "no", 0},
                            {503, NULL, "no", 0},
                            {429, NULL, "no", 0},
                            {429, NULL, "last", 0}};
    stub *s = stub_start(script, 5);
    env e;
    env_open(&e);
    char url[128];
    sl_response *r = get_ok(&e, url_of(s, "/", url, sizeof url));
    expect_info(r, 429, 5, SL_STOP_ATTEMPTS);
    assert_string_equal(sl_response_body(r, NULL), "last");
    assert_int_equal(e.f.nevents, 5);
    int64_t bound = 400 * MS;
    for (int i = 0; i < 4; i++, bound *= 2) {
        assert_int_equal(e.f.events[i].kind, SL_EVENT_RETRY);
        assert_int_equal(e.f.events[i].hint, -1);
        assert_true(e.f.events[i].wait >= 0 && e.f.events[i].wait < bound);
    }
    assert_int_equal(e.f.events[2].status, 503);
    assert_int_equal(e.f.events[4].kind, SL_EVENT_GIVE_UP);
    assert_int_equal(e.f.events[4].stop, SL_STOP_ATTEMPTS);
    assert_int_equal(stub_conns(s), 1);
    sl_response_free(r);
    env_close(&e, s);

    /* other statuses are returned at once */
    const reply errors[] = {{500, NULL, "oops", 0}};
    s = stub_start(errors, 1);
    env_open(&e);
    r = get_ok(&e, url_of(s, "/", url, sizeof url));
    expect_info(r, 500, 1, SL_STOP_DONE);
    assert_int_equal(e.f.nevents, 0);
    sl_response_free(r);
    env_close(&e, s);
}

static void test_max_wait_and_deadline(void **state) {
    (void)state;
    const reply script[] = {{429, "Retry-After: 30\r\n", NULL, 0},
                            {429, "Retry-After: 2\r\n", NULL, 0}};
    stub *s = stub_start(script, 2);
    env e;
    env_open(&e);
    char url[128];
    sl_response *r;
    /* a hint beyond max_wait (10 s) is not waited for */
    r = get_ok(&e, url_of(s, "/", url, sizeof url));
    sl_response_info info;
    sl_response_info_get(r, &info);
    assert_int_equal(info.stop, SL_STOP_MAX_WAIT);
    assert_int_equal(info.attempts, 1);
    assert_int_equal(e.f.events[0].hint, 30 * SEC);
    assert_int_equal(e.fc.sleeps, 0);
    sl_response_free(r);
    /* a wait that would end after the deadline is not started */
    sl_client_request req = {.url = url, .timeout = 1500 * MS};
    assert_int_equal(sl_client_do(e.c, &req, &r), SL_OK);
    sl_response_info_get(r, &info);
    assert_int_equal(info.stop, SL_STOP_DEADLINE);
    assert_int_equal(info.attempts, 1);
    assert_int_equal(e.fc.sleeps, 0);
    sl_response_free(r);
    env_close(&e, s);
}

static void test_budget(void **state) {
    (void)state;
    const reply script[] = {{429, RA1, NULL, 0}};
    stub *s = stub_start(script, 1);
    env e;
    env_init(&e);
    e.o.max_attempts = 10;
    e.o.budget_ppm = 0;
    e.o.budget_reserve = 2;
    env_create(&e);
    char url[128];
    sl_response *r = get_ok(&e, url_of(s, "/", url, sizeof url));
    sl_response_info info;
    sl_response_info_get(r, &info);
    assert_int_equal(info.attempts, 3); /* two retries from the reserve */
    assert_int_equal(info.stop, SL_STOP_BUDGET);
    sl_response_free(r);
    r = get_ok(&e, url);
    sl_response_info_get(r, &info);
    assert_int_equal(info.attempts, 1);
    assert_int_equal(info.stop, SL_STOP_BUDGET);
    sl_response_free(r);
    sl_client_stats st;
    sl_client_stats_get(e.c, &st);
    assert_int_equal(st.requests, 2);
    assert_int_equal(st.retries, 2);
    assert_int_equal(st.budget_refused, 2);
    sl_client_destroy(e.c);

    /* 10 %: over 50 requests that all meet 429, at most 10 + 5 retries */
    env_init(&e);
    e.o.max_attempts = 3;
    env_create(&e);
    for (int i = 0; i < 50; i++) {
        get_drop(&e, url);
    }
    sl_client_stats_get(e.c, &st);
    assert_int_equal(st.requests, 50);
    assert_true(st.retries <= 10 + 5);
    assert_true(st.retries >= 10 + 4);
    assert_int_equal(st.attempts, st.requests + st.retries);
    env_close(&e, s);
}

static void test_aimd(void **state) {
    (void)state;
    const reply script[] = {{200, NULL, "a", 0},
                            {200, NULL, "b", 0},
                            {429, RA1, NULL, 0},
                            {200, NULL, "c", 0},
                            {200, NULL, "d", 0}};
    stub *s = stub_start(script, 5);
    env e;
    env_init(&e);
    e.o.flags = SL_CLIENT_AIMD;
    e.o.aimd = (sl_client_aimd){
        .start = 2000, .increase = 1000, .decrease_ppm = 500000, .floor = 1000, .cap = 4000};
    env_create(&e);
    char url[128];
    url_of(s, "/", url, sizeof url);
    assert_int_equal(sl_client_host_rate(e.c, url), 0); /* not seen yet */
    sl_response *r;
    /* the first request goes at once */
    get_drop(&e, url);
    assert_int_equal(e.fc.sleeps, 0);
    assert_int_equal(sl_client_host_rate(e.c, url), 3000); /* +1/s */
    /* the second waits one interval at 3/s: 1/3 s, rounded up to the ns */
    get_drop(&e, url);
    assert_int_equal(e.f.nevents, 1);
    assert_int_equal(e.f.events[0].kind, SL_EVENT_PACE);
    assert_int_equal(e.f.events[0].wait, 333333334);
    assert_int_equal(e.f.events[0].rate, 3000);
    assert_int_equal(sl_client_host_rate(e.c, url), 4000); /* the cap */
    /* a 429 halves the rate; the retry waits the hint plus jitter (longer
     * than the new interval, so the pace adds nothing) */
    r = get_ok(&e, url);
    sl_response_info info;
    sl_response_info_get(r, &info);
    assert_int_equal(info.status, 200);
    assert_int_equal(info.attempts, 2);
    sl_response_free(r);
    const sl_client_event *retry = &e.f.events[e.f.nevents - 1];
    assert_int_equal(retry->kind, SL_EVENT_RETRY);
    assert_int_equal(retry->rate, 2000);
    assert_true(retry->wait >= SEC && retry->wait < 2 * SEC);
    assert_int_equal(sl_client_host_rate(e.c, url), 3000);
    /* another host has its own rate */
    char other[128];
    snprintf(other, sizeof other, "http://localhost:%d/", s->port);
    assert_int_equal(sl_client_host_rate(e.c, other), 0);
    sl_client_destroy(e.c);

    /* the pace respects the deadline: a slot beyond it is an error */
    env_init(&e);
    e.o.flags = SL_CLIENT_AIMD;
    e.o.aimd.start = e.o.aimd.floor = 1000;
    e.o.timeout = 500 * MS;
    env_create(&e);
    get_drop(&e, url);
    /* now at 1.5/s: the next slot is 667 ms away */
    assert_int_equal(sl_client_get(e.c, url, &r), SL_EDEADLINE);
    assert_null(r);
    assert_true(strlen(sl_client_errmsg(e.c)) > 0);
    env_close(&e, s);
}

static void test_pace_from_ratelimit(void **state) {
    (void)state;
    const reply script[] = {
        {200, "RateLimit-Policy: \"api\";q=5;w=1\r\nRateLimit: \"api\";r=0;t=2\r\n", "a", 0},
        {200, "RateLimit-Policy: \"api\";q=5;w=1\r\nRateLimit: \"api\";r=4;t=1\r\n", "b", 0},
        {200, "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 60\r\n", "c", 0},
        {200, NULL, "d", 0}};
    stub *s = stub_start(script, 4);
    env e;
    env_init(&e);
    e.o.flags = SL_CLIENT_PACE;
    env_create(&e);
    char url[128];
    url_of(s, "/", url, sizeof url);
    get_drop(&e, url);
    assert_int_equal(e.fc.sleeps, 0);
    /* nothing left, back in 2 s: the next request waits 2 s */
    get_drop(&e, url);
    assert_int_equal(e.fc.sleeps, 1);
    assert_int_equal(e.fc.slept[0], 2 * SEC);
    assert_int_equal(e.f.events[0].kind, SL_EVENT_PACE);
    /* 4 of 5 left: no wait */
    get_drop(&e, url);
    assert_int_equal(e.fc.sleeps, 1);
    /* X-RateLimit says 60 s: the wait is capped by max_wait (10 s) */
    get_drop(&e, url);
    assert_int_equal(e.fc.sleeps, 2);
    assert_int_equal(e.fc.slept[1], 10 * SEC);
    env_close(&e, s);
}

static char big_body[300 * 1024];

static void test_drain_reuses_connection(void **state) {
    (void)state;
    memset(big_body, 'x', sizeof big_body);
    const reply script[] = {{429, RA1, big_body, sizeof big_body},
                            {503, RA1, big_body, sizeof big_body},
                            {200, NULL, "ok", 0}};
    stub *s = stub_start(script, 3);
    env e;
    env_init(&e);
    e.o.max_body = 1024; /* only the returned body counts against it */
    env_create(&e);
    char url[128];
    sl_response *r = get_ok(&e, url_of(s, "/", url, sizeof url));
    assert_int_equal(sl_response_status(r), 200);
    size_t len;
    assert_string_equal(sl_response_body(r, &len), "ok");
    assert_int_equal(len, 2);
    assert_int_equal(stub_requests(s), 3);
    assert_int_equal(stub_conns(s), 1);
    sl_response_free(r);
    /* a returned body above max_body is an error, not a truncation */
    const reply big[] = {{200, NULL, big_body, sizeof big_body}};
    stub *s2 = stub_start(big, 1);
    assert_int_equal(sl_client_get(e.c, url_of(s2, "/", url, sizeof url), &r), SL_ETRANSFER);
    assert_null(r);
    assert_non_null(strstr(sl_client_errmsg(e.c), "max_body"));
    env_close(&e, s);
    stub_stop(s2);
}

typedef struct sink {
    char buf[64];
    size_t len;
    int calls;
    int fail;
} sink;

static int to_sink(void *ctx, const void *data, size_t len) {
    sink *k = ctx;
    k->calls++;
    if (k->fail) return 1;
    size_t room = sizeof k->buf - 1 - k->len;
    size_t n = len < room ? len : room;
    memcpy(k->buf + k->len, data, n);
    k->len += n;
    k->buf[k->len] = '\0';
    return 0;
}

static void test_on_body(void **state) {
    (void)state;
    /* the caller's sink sees only the returned answer, never a retried one */
    const reply script[] = {{429, RA1, "retried body", 0}, {200, NULL, "final body", 0}};
    stub *s = stub_start(script, 2);
    env e;
    env_open(&e);
    char url[128];
    sink k = {.len = 0};
    sl_client_request req = {
        .url = url_of(s, "/", url, sizeof url), .on_body = to_sink, .body_ctx = &k};
    sl_response *r;
    assert_int_equal(sl_client_do(e.c, &req, &r), SL_OK);
    assert_string_equal(k.buf, "final body");
    size_t len;
    assert_string_equal(sl_response_body(r, &len), "");
    assert_int_equal(len, 0);
    sl_response_free(r);
    /* a sink that refuses stops the transfer */
    sink no = {.fail = 1};
    req.on_body = to_sink;
    req.body_ctx = &no;
    assert_int_equal(sl_client_do(e.c, &req, &r), SL_ETRANSFER);
    assert_null(r);
    assert_int_equal(no.calls, 1);
    env_close(&e, s);
}

static void test_headers_sent(void **state) {
    (void)state;
    const reply script[] = {{200, NULL, "ok", 0}};
    stub *s = stub_start(script, 1);
    env e;
    env_open(&e);
    char url[128];
    const char *const h[] = {"X-Test: 1", "Accept: application/json", NULL};
    sl_client_request req = {.url = url_of(s, "/h", url, sizeof url), .headers = h};
    sl_response *r;
    assert_int_equal(sl_client_do(e.c, &req, &r), SL_OK);
    sl_response_free(r);
    pthread_mutex_lock(&s->mu);
    assert_non_null(strstr(s->last_head, "GET /h HTTP/1.1\r\n"));
    assert_non_null(strstr(s->last_head, "\r\nX-Test: 1\r\n"));
    assert_non_null(strstr(s->last_head, "\r\nAccept: application/json\r\n"));
    assert_non_null(strstr(s->last_head, "\r\nUser-Agent: sluice-client/" SLUICE_VERSION "\r\n"));
    pthread_mutex_unlock(&s->mu);
    env_close(&e, s);
}

static void test_errors(void **state) {
    (void)state;
    env e;
    env_open(&e);
    sl_response *r = (sl_response *)&e; /* must be reset to NULL */
    /* nothing listens on a port that was just closed */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t alen = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &alen);
    close(fd);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", ntohs(a.sin_port));
    assert_int_equal(sl_client_get(e.c, url, &r), SL_ETRANSFER);
    assert_null(r);
    assert_true(strlen(sl_client_errmsg(e.c)) > 0);
    assert_int_equal(sl_client_get(e.c, "ftp://127.0.0.1/", &r), SL_EINVAL);
    assert_non_null(strstr(sl_client_errmsg(e.c), "ftp"));
    assert_int_equal(sl_client_get(e.c, "not a url", &r), SL_EINVAL);
    assert_int_equal(sl_client_get(e.c, NULL, &r), SL_EINVAL);
    sl_client_request req = {.url = "http://127.0.0.1/", .method = "GE T"};
    assert_int_equal(sl_client_do(e.c, &req, &r), SL_EINVAL);
    req = (sl_client_request){.url = "http://127.0.0.1/", .flags = SL_CLIENT_AIMD};
    assert_int_equal(sl_client_do(e.c, &req, &r), SL_EINVAL);
    assert_int_equal(sl_client_do(e.c, NULL, &r), SL_EINVAL);
    sl_client_destroy(e.c);
}

static int teardown_all(void **state) {
    (void)state;
    curl_global_cleanup();
    return 0;
}

int main(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_example),
        cmocka_unit_test(test_same_seed_same_waits),
        cmocka_unit_test(test_http_date_hint),
        cmocka_unit_test(test_unsafe_not_retried),
        cmocka_unit_test(test_backoff_and_give_up),
        cmocka_unit_test(test_max_wait_and_deadline),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_aimd),
        cmocka_unit_test(test_pace_from_ratelimit),
        cmocka_unit_test(test_drain_reuses_connection),
        cmocka_unit_test(test_on_body),
        cmocka_unit_test(test_headers_sent),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, teardown_all);
}
