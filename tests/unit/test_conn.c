/* test_conn.c: the connection layer (src/server/conn.c) on a real libuv
 * loop that the test runs itself, one step at a time, against a client
 * socket on loopback. Stepping the loop by hand makes the moments exact
 * that a black-box test can only race for: here a request is in the socket
 * buffer of an idle keep-alive connection, not read yet, at the instant
 * the worker starts to drain (SIGTERM). It must be read and answered with
 * Connection: close, and the connection then closed without a reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/server.h"
#include "sluice/sluice.h"

typedef struct fixture {
    sl__server s;
    sl__worker w;
    uv_tcp_t listener[2]; /* HTTP, RESP */
    int port[2];
} fixture;

static void on_connection(uv_stream_t *l, int status) {
    sl__worker *w = l->loop->data;
    fixture *f = (fixture *)((char *)w - offsetof(fixture, w));
    assert_int_equal(status, 0);
    sl__conn_accept(w, l, l == (uv_stream_t *)&f->listener[0] ? SL__PROTO_HTTP : SL__PROTO_RESP);
}

static void on_wake(uv_async_t *a) {
    (void)a;
}

/* A worker as worker.c sets one up, without its thread: the test runs the loop. */
static fixture *fixture_new(void) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    sl__worker *w = &f->w;
    w->server = &f->s;
    assert_int_equal(uv_loop_init(&w->loop), 0);
    w->loop.data = w;
    w->read_buf = malloc(SL__READ_BUF_BYTES);
    w->limits = (sl__limits_config){.max_header_bytes = 8192,
                                    .max_body_bytes = 65536,
                                    .max_resp_frame = 65536,
                                    .max_connections = 100,
                                    .idle_timeout = 60 * SL_NS_PER_SEC,
                                    .header_timeout = 10 * SL_NS_PER_SEC,
                                    .command_timeout = 10 * SL_NS_PER_SEC,
                                    .max_pending_output = 1 << 20,
                                    .max_pending_output_total = 64 << 20};
    uv_async_init(&w->loop, &w->wake, on_wake);
    uv_prepare_init(&w->loop, &w->tick);
    uv_timer_init(&w->loop, &w->drain_timer);
    uv_timer_init(&w->loop, &w->accept_timer);
    uv_idle_init(&w->loop, &w->yield_idle);
    w->yield_idle.data = w;
    w->spare_fd = -1;
    for (int p = 0; p < SL__PROTO_COUNT; p++) w->listen_dup[p] = -1;
    for (int i = 0; i < 2; i++) {
        struct sockaddr_in a;
        uv_ip4_addr("127.0.0.1", 0, &a);
        uv_tcp_init(&w->loop, &f->listener[i]);
        assert_int_equal(uv_tcp_bind(&f->listener[i], (struct sockaddr *)&a, 0), 0);
        assert_int_equal(uv_listen((uv_stream_t *)&f->listener[i], 16, on_connection), 0);
        int len = sizeof a;
        uv_tcp_getsockname(&f->listener[i], (struct sockaddr *)&a, &len);
        f->port[i] = ntohs(a.sin_port);
    }
    return f;
}

static void fixture_free(fixture *f) {
    for (int i = 0; i < 2; i++) uv_close((uv_handle_t *)&f->listener[i], NULL);
    sl__worker_finish(&f->w); /* closes the worker's handles (again: it is idempotent) */
    uv_run(&f->w.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->w.loop), 0);
    free(f->w.read_buf);
    free(f);
}

/* Steps the loop until cond(f, arg) holds (at most ~5 s). */
static bool step_until(fixture *f, bool (*cond)(fixture *, void *), void *arg) {
    for (int i = 0; i < 500; i++) {
        if (cond(f, arg)) return true;
        uv_run(&f->w.loop, UV_RUN_NOWAIT);
        poll(NULL, 0, 10);
    }
    return cond(f, arg);
}

static bool accepted(fixture *f, void *arg) {
    return f->w.connections == *(unsigned *)arg;
}

typedef struct reader {
    int fd;
    char buf[4096];
    size_t len;
    bool eof, reset;
    const char *until; /* stop once this is in buf */
} reader;

static bool read_some(fixture *f, void *arg) {
    (void)f;
    reader *r = arg;
    for (;;) {
        if (r->until && r->len && strstr(r->buf, r->until)) return true;
        ssize_t n = recv(r->fd, r->buf + r->len, sizeof r->buf - 1 - r->len, MSG_DONTWAIT);
        if (n > 0) {
            r->len += (size_t)n;
            r->buf[r->len] = '\0';
            continue;
        }
        if (n == 0) r->eof = true;
        if (n < 0 && errno == ECONNRESET) r->reset = true;
        return r->eof || r->reset;
    }
}

static int client(fixture *f, int which) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->port[which])};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void send_str(int fd, const char *s) {
    assert_int_equal(send(fd, s, strlen(s), 0), (ssize_t)strlen(s));
}

static void start_drain(fixture *f) {
    /* what worker.c's start_drain does once its listeners are closed */
    atomic_store(&f->s.draining, true);
    f->w.draining = true;
    sl__conn_drain_all(&f->w);
}

static void test_http_request_in_socket_buffer_at_drain(void **state) {
    (void)state;
    fixture *f = fixture_new();
    int fd = client(f, 0);
    unsigned one = 1;
    assert_true(step_until(f, accepted, &one));
    /* a first request makes it an idle keep-alive connection */
    send_str(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    reader r = {.fd = fd, .until = "{\"status\":\"ok\"}"};
    assert_true(step_until(f, read_some, &r));
    assert_non_null(strstr(r.buf, "Connection: keep-alive"));
    /* the next one is in the socket buffer, unread, when the drain starts */
    send_str(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    start_drain(f);
    reader r2 = {.fd = fd};
    assert_true(step_until(f, read_some, &r2));
    assert_false(r2.reset);
    assert_true(r2.eof);
    assert_true(strncmp(r2.buf, "HTTP/1.1 200", 12) == 0);
    assert_non_null(strstr(r2.buf, "Connection: close\r\n"));
    assert_non_null(strstr(r2.buf, "{\"status\":\"ok\"}"));
    close(fd);
    fixture_free(f);
}

static void test_http_pipelined_in_socket_buffer_at_drain(void **state) {
    (void)state;
    fixture *f = fixture_new();
    int fd = client(f, 0);
    unsigned one = 1;
    assert_true(step_until(f, accepted, &one));
    send_str(fd,
             "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    start_drain(f);
    reader r = {.fd = fd};
    assert_true(step_until(f, read_some, &r));
    assert_false(r.reset);
    assert_true(r.eof);
    /* both answered: the first keeps the connection open, the last closes it */
    const char *second = strstr(r.buf + 1, "HTTP/1.1 200");
    assert_non_null(second);
    assert_true(strncmp(r.buf, "HTTP/1.1 200", 12) == 0);
    char *ka = strstr(r.buf, "Connection: keep-alive\r\n");
    assert_non_null(ka);
    assert_true(ka < second);
    assert_non_null(strstr(second, "Connection: close\r\n"));
    close(fd);
    fixture_free(f);
}

static void test_resp_command_in_socket_buffer_at_drain(void **state) {
    (void)state;
    fixture *f = fixture_new();
    int fd = client(f, 1);
    unsigned one = 1;
    assert_true(step_until(f, accepted, &one));
    send_str(fd, "PING\r\n");
    reader r = {.fd = fd, .until = "+PONG\r\n"};
    assert_true(step_until(f, read_some, &r));
    send_str(fd, "ECHO drained\r\n");
    start_drain(f);
    reader r2 = {.fd = fd};
    assert_true(step_until(f, read_some, &r2));
    assert_false(r2.reset);
    assert_true(r2.eof);
    assert_string_equal(r2.buf, "$7\r\ndrained\r\n");
    close(fd);
    fixture_free(f);
}

static void test_idle_connection_closed_at_once(void **state) {
    (void)state;
    fixture *f = fixture_new();
    int fd = client(f, 0);
    unsigned one = 1;
    assert_true(step_until(f, accepted, &one));
    start_drain(f);
    reader r = {.fd = fd};
    assert_true(step_until(f, read_some, &r));
    assert_true(r.eof);
    assert_false(r.reset);
    assert_int_equal(r.len, 0);
    close(fd);
    fixture_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_request_in_socket_buffer_at_drain),
        cmocka_unit_test(test_http_pipelined_in_socket_buffer_at_drain),
        cmocka_unit_test(test_resp_command_in_socket_buffer_at_drain),
        cmocka_unit_test(test_idle_connection_closed_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
