/* test_resp.c: the RESP side of sluiced (src/server/resp): the request parser
 * on whole, fragmented (every split point) and pipelined input, its limits and
 * every error; the reply writers byte for byte; CL.THROTTLE against
 * redis-cell's documented replies and its own test table, on fixed clocks;
 * the parameter-set registry (limits, concurrency); command dispatch (PING,
 * ECHO, QUIT, INFO, COMMAND, CONFIG GET, HELLO, unknown commands); SL.CHECK
 * on a policy set built in the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cell.h"
#include "policy/policy.h"
#include "server/resp/resp.h"
#include "sluice/sluice.h"
#include "util/buf.h"
#include "helpers.h"

#define T0    (INT64_C(1700000000) * SEC) /* a fixed "now" */
#define FRAME ((size_t)64 * 1024)

/* ---- helpers ------------------------------------------------------------------- */

/* Parses a copy of s[0..len) in a heap block of exactly len bytes, so that
 * ASan sees any read past the end. */
static long parse_n(const char *s, size_t len, size_t max_frame, sl__resp_command *cmd,
                    char err[SL__RESP_ERR_MAX]) {
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, s, len);
    err[0] = '\0';
    long n = sl__resp_parse(copy, len, max_frame, cmd, err, SL__RESP_ERR_MAX);
    /* the arguments point into the copy: move them to s before freeing it */
    if (n > 0)
        for (size_t i = 0; i < cmd->argc; i++) cmd->argv[i] = s + (cmd->argv[i] - copy);
    free(copy);
    return n;
}

static long parse_s(const char *s, sl__resp_command *cmd, char err[SL__RESP_ERR_MAX]) {
    return parse_n(s, strlen(s), FRAME, cmd, err);
}

static void assert_arg(const sl__resp_command *cmd, size_t i, const char *want) {
    assert_true(i < cmd->argc);
    if (cmd->argl[i] != strlen(want) || memcmp(cmd->argv[i], want, cmd->argl[i]) != 0)
        fail_msg("argv[%zu] = '%.*s', want '%s'", i, (int)cmd->argl[i], cmd->argv[i], want);
}

/* Expects s to fail with exactly `msg`. */
static void assert_parse_error(const char *s, size_t len, size_t max_frame, const char *msg) {
    sl__resp_command cmd;
    char err[SL__RESP_ERR_MAX];
    long n = parse_n(s, len, max_frame, &cmd, err);
    if (n != SL_EPARSE) fail_msg("parse of '%.*s' returned %ld, want an error", (int)len, s, n);
    assert_string_equal(err, msg);
}

/* A sl__buf's contents as a NUL-terminated string (the buffer keeps ownership). */
static const char *text(sl__buf *b) {
    sl__buf_append(b, "", 1);
    b->len--;
    return b->data;
}

/* Runs every command of `input` (which must parse) and returns the replies. */
typedef struct session {
    sl__buf out;
    int quit;
    size_t commands;
} session;

static void run(const sl__resp_context *ctx, const char *input, size_t len, session *s) {
    sl__buf_init(&s->out);
    s->quit = 0;
    s->commands = 0;
    size_t off = 0;
    while (off < len) {
        sl__resp_command cmd;
        char err[SL__RESP_ERR_MAX];
        long n = parse_n(input + off, len - off, FRAME, &cmd, err);
        if (n <= 0) fail_msg("input does not parse at %zu: %s", off, n < 0 ? err : "incomplete");
        s->quit |= sl__resp_execute(ctx, &cmd, &s->out);
        s->commands++;
        off += (size_t)n;
    }
}

static void expect_reply_n(const sl__resp_context *ctx, const char *input, size_t len,
                           const char *want) {
    session s;
    run(ctx, input, len, &s);
    assert_string_equal(text(&s.out), want);
    sl__buf_free(&s.out);
}

static void expect_reply(const sl__resp_context *ctx, const char *input, const char *want) {
    expect_reply_n(ctx, input, strlen(input), want);
}

/* Each case's input (a C string) answered with exactly its want: a table of
 * {input, want}. */
static void expect_replies(const sl__resp_context *ctx, const char *const (*cases)[2], size_t n) {
    for (size_t i = 0; i < n; i++) expect_reply(ctx, cases[i][0], cases[i][1]);
}

/* The session of the last ask, kept until the next one. */
static session asked;

/* Runs input's commands (a C string) and returns their replies as text, valid
 * until the next ask; asked.quit says whether one was QUIT. */
static const char *ask(const sl__resp_context *ctx, const char *input) {
    sl__buf_free(&asked.out);
    run(ctx, input, strlen(input), &asked);
    return text(&asked.out);
}

/* ---- parser: well-formed input --------------------------------------------------- */

static void test_parse_multibulk(void **state) {
    (void)state;
    sl__resp_command cmd;
    char err[SL__RESP_ERR_MAX];
    const char *s = "*3\r\n$11\r\nCL.THROTTLE\r\n$0\r\n\r\n$3\r\na\r\n\r\n";
    assert_i64(parse_s(s, &cmd, err), strlen(s));
    assert_i64(cmd.argc, 3);
    assert_arg(&cmd, 0, "CL.THROTTLE");
    assert_arg(&cmd, 1, "");
    assert_arg(&cmd, 2, "a\r\n"); /* binary safe: CRLF inside a bulk is data */

    /* zero-copy: arguments point into the buffer */
    const char *b = "*1\r\n$4\r\nPING\r\n";
    assert_i64(sl__resp_parse(b, strlen(b), FRAME, &cmd, err, sizeof err), strlen(b));
    assert_ptr_equal(cmd.argv[0], b + 8);

    /* binary bytes, NUL included */
    const char bin[] = "*1\r\n$3\r\n\0\xff\x01\r\n";
    assert_i64(parse_n(bin, sizeof bin - 1, FRAME, &cmd, err), sizeof bin - 1);
    assert_i64(cmd.argl[0], 3);
    assert_memory_equal(cmd.argv[0], "\0\xff\x01", 3);
}

static void test_parse_inline(void **state) {
    (void)state;
    sl__resp_command cmd;
    char err[SL__RESP_ERR_MAX];
    assert_i64(parse_s("PING\r\n", &cmd, err), 6);
    assert_i64(cmd.argc, 1);
    assert_arg(&cmd, 0, "PING");

    assert_i64(parse_s("ping\n", &cmd, err), 5);
    assert_arg(&cmd, 0, "ping");

    const char *s = "  CL.THROTTLE\tuser123   15 30 60 \r\n";
    assert_i64(parse_s(s, &cmd, err), strlen(s));
    assert_i64(cmd.argc, 5);
    assert_arg(&cmd, 0, "CL.THROTTLE");
    assert_arg(&cmd, 1, "user123");
    assert_arg(&cmd, 4, "60");

    s = "ECHO \"hello world\" 'it is' \"\" x\r\n";
    assert_i64(parse_s(s, &cmd, err), strlen(s));
    assert_i64(cmd.argc, 5);
    assert_arg(&cmd, 1, "hello world");
    assert_arg(&cmd, 2, "it is");
    assert_arg(&cmd, 3, "");
    assert_arg(&cmd, 4, "x");

    /* only up to the first newline: the rest is the next command */
    assert_i64(parse_s("PING\nPING\n", &cmd, err), 5);
}

static void test_parse_empty_commands(void **state) {
    (void)state;
    sl__resp_command cmd;
    char err[SL__RESP_ERR_MAX];
    /* Redis consumes these without a reply; so do we (argc 0) */
    assert_i64(parse_s("*0\r\n", &cmd, err), 4);
    assert_i64(cmd.argc, 0);
    assert_i64(parse_s("*-1\r\n", &cmd, err), 5);
    assert_i64(cmd.argc, 0);
    assert_i64(parse_s("\r\n", &cmd, err), 2);
    assert_i64(cmd.argc, 0);
    assert_i64(parse_s("   \t \n", &cmd, err), 6);
    assert_i64(cmd.argc, 0);
    /* nothing yet */
    assert_i64(parse_n("", 0, FRAME, &cmd, err), 0);
}

/* Every proper prefix of a well-formed command needs more bytes; the whole
 * parses to the same arguments. */
static void check_every_split(const char *s, size_t len, size_t argc) {
    sl__resp_command cmd;
    char err[SL__RESP_ERR_MAX];
    for (size_t k = 0; k < len; k++) {
        long n = parse_n(s, k, FRAME, &cmd, err);
        if (n != 0)
            fail_msg("prefix %zu of '%.*s' returned %ld (%s)", k, (int)len, s, n, n < 0 ? err : "");
    }
    assert_i64(parse_n(s, len, FRAME, &cmd, err), len);
    assert_i64(cmd.argc, argc);
}

static void test_parse_every_split_point(void **state) {
    (void)state;
    static const struct {
        const char *s;
        size_t argc;
    } cases[] = {
        {"*1\r\n$4\r\nPING\r\n", 1},
        {"*5\r\n$11\r\nCL.THROTTLE\r\n$7\r\nuser123\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n", 5},
        {"*2\r\n$4\r\nECHO\r\n$12\r\nhello\r\nworld\r\n", 2},
        {"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", 2},
        {"*0\r\n", 0},
        {"*-1\r\n", 0},
        {"PING\r\n", 1},
        {"CL.THROTTLE k 1 2 3\n", 5},
        {"ECHO \"a b\"\r\n", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_every_split(cases[i].s, strlen(cases[i].s), cases[i].argc);

    /* a 10-digit bulk length split anywhere */
    char big[2048];
    int n = snprintf(big, sizeof big, "*2\r\n$4\r\nECHO\r\n$1000\r\n");
    memset(big + n, 'x', 1000);
    memcpy(big + n + 1000, "\r\n", 2);
    check_every_split(big, (size_t)n + 1002, 2);
}

static void test_parse_pipelined(void **state) {
    (void)state;
    const char *in = "*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n*0\r\nQUIT\n";
    const char *want[][2] = {
        {"PING", NULL}, {"PING", NULL}, {"ECHO", "hi"}, {NULL, NULL}, {"QUIT", NULL}};
    size_t len = strlen(in), off = 0, i = 0;
    while (off < len) {
        sl__resp_command cmd;
        char err[SL__RESP_ERR_MAX];
        long n = parse_n(in + off, len - off, FRAME, &cmd, err);
        assert_true(n > 0);
        assert_true(i < 5);
        if (want[i][0]) assert_arg(&cmd, 0, want[i][0]);
        if (want[i][1]) assert_arg(&cmd, 1, want[i][1]);
        if (!want[i][0]) assert_i64(cmd.argc, 0);
        off += (size_t)n;
        i++;
    }
    assert_i64(i, 5);
}

/* ---- parser: limits ---------------------------------------------------------------- */

static void test_parse_max_args(void **state) {
    (void)state;
    sl__buf b;
    sl__resp_command cmd;
    char err[SL__RESP_ERR_MAX];
    for (int argc = SL__RESP_MAX_ARGS; argc <= SL__RESP_MAX_ARGS + 1; argc++) {
        sl__buf_init(&b);
        sl__buf_printf(&b, "*%d\r\n", argc);
        for (int i = 0; i < argc; i++) sl__buf_puts(&b, "$1\r\nx\r\n");
        long n = parse_n(b.data, b.len, FRAME, &cmd, err);
        if (argc == SL__RESP_MAX_ARGS) {
            assert_i64(n, b.len);
            assert_i64(cmd.argc, SL__RESP_MAX_ARGS);
        } else {
            assert_i64(n, SL_EPARSE);
            assert_string_equal(err, "too many arguments");
            /* known from the count line alone */
            assert_i64(parse_n(b.data, 6, FRAME, &cmd, err), SL_EPARSE);
        }
        sl__buf_free(&b);

        sl__buf_init(&b);
        for (int i = 0; i < argc; i++) sl__buf_puts(&b, "x ");
        sl__buf_puts(&b, "\r\n");
        n = parse_n(b.data, b.len, FRAME, &cmd, err);
        if (argc == SL__RESP_MAX_ARGS)
            assert_i64(cmd.argc, SL__RESP_MAX_ARGS);
        else
            assert_string_equal(err, "too many arguments");
        sl__buf_free(&b);
    }
}

static void test_parse_max_frame(void **state) {
    (void)state;
    sl__resp_command cmd;
    char err[SL__RESP_ERR_MAX];
    /* "*1\r\n$N\r\n" + N + "\r\n" spans exactly 100 bytes for N = 88 */
    char buf[256];
    memcpy(buf, "*1\r\n$88\r\n", 9);
    memset(buf + 9, 'a', 88);
    memcpy(buf + 97, "\r\n", 2);
    assert_i64(parse_n(buf, 99, 99, &cmd, err), 99);
    assert_parse_error(buf, 99, 98, "command too large");
    /* known as soon as the bulk length is read, before its bytes arrive */
    assert_parse_error(buf, 9, 98, "command too large");
    assert_parse_error("*1\r\n$1000000\r\n", 15, FRAME, "command too large");
    {
        /* two bulks that fit alone but not together */
        sl__buf b;
        sl__buf_init(&b);
        sl__buf_puts(&b, "*2\r\n$40000\r\n");
        for (int i = 0; i < 40000; i++) sl__buf_append(&b, "y", 1);
        sl__buf_puts(&b, "\r\n$40000\r\n");
        assert_parse_error(b.data, b.len, FRAME, "command too large");
        sl__buf_free(&b);
    }
    /* inline: a line of max_frame bytes without its newline is too large */
    char line[64];
    memset(line, 'p', sizeof line);
    assert_i64(parse_n(line, 63, 64, &cmd, err), 0);
    assert_parse_error(line, 64, 64, "command too large");
    line[63] = '\n';
    assert_i64(parse_n(line, 64, 64, &cmd, err), 64);
    assert_i64(cmd.argc, 1);
}

static void test_parse_allows_big_bulk_within_frame(void **state) {
    (void)state;
    /* the counted check above must not reject a frame that does fit */
    sl__buf b;
    sl__buf_init(&b);
    sl__buf_puts(&b, "*2\r\n$4\r\nECHO\r\n$30000\r\n");
    for (int i = 0; i < 30000; i++) sl__buf_append(&b, "z", 1);
    sl__buf_puts(&b, "\r\n");
    sl__resp_command cmd;
    char err[SL__RESP_ERR_MAX];
    assert_i64(parse_n(b.data, b.len, FRAME, &cmd, err), b.len);
    assert_i64(cmd.argl[1], 30000);
    sl__buf_free(&b);
}

/* ---- parser: errors ------------------------------------------------------------------ */

static void test_parse_errors(void **state) {
    (void)state;
    static const struct {
        const char *in, *err;
    } cases[] = {
        {"*abc\r\n", "invalid multibulk length"},
        {"*\r\n", "invalid multibulk length"},
        {"*-2\r\n", "invalid multibulk length"},
        {"*-0\r\n", "invalid multibulk length"},
        {"*01\r\n", "invalid multibulk length"},
        {"*1 \r\n", "invalid multibulk length"},
        {"*+1\r\n", "invalid multibulk length"},
        {"*1\rx", "invalid multibulk length"},
        {"*1\n", "invalid multibulk length"},
        {"*99999999999999999999\r\n", "too many arguments"},
        {"*1234567890123456789\r\n", "too many arguments"},
        {"*-12345678901234567890\r\n", "invalid multibulk length"},
        {"*1\r\n$-1\r\n", "invalid bulk length"},
        {"*1\r\n$abc\r\n", "invalid bulk length"},
        {"*1\r\n$\r\n", "invalid bulk length"},
        {"*1\r\n$04\r\nPING\r\n", "invalid bulk length"},
        {"*1\r\n$4\r\rPING\r\n", "invalid bulk length"},
        {"*1\r\n$99999999999999999999\r\n", "command too large"},
        {"*1\r\n+PING\r\n", "expected '$', got '+'"},
        {"*1\r\n:1\r\n", "expected '$', got ':'"},
        {"*1\r\n*1\r\n$4\r\nPING\r\n", "expected '$', got '*'"}, /* nested arrays */
        {"*1\r\n\r\n", "expected '$', got '\\x0d'"},
        {"*1\r\n$4\r\nPINGxx", "expected CRLF after bulk data"},
        {"*1\r\n$4\r\nPING\rx", "expected CRLF after bulk data"},
        {"*2\r\n$4\r\nPING\r\nPING\r\n", "expected '$', got 'P'"},
        {"ECHO \"abc\r\n", "unbalanced quotes in request"},
        {"ECHO 'abc\n", "unbalanced quotes in request"},
        {"ECHO \"abc\"def\n", "unbalanced quotes in request"},
        {"ECHO abc\"def\"\n", "quotes inside a word are not supported"},
        {"ECHO \"a\\nb\"\n", "escapes in inline commands are not supported"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_parse_error(cases[i].in, strlen(cases[i].in), FRAME, cases[i].err);
}

/* A malformed prefix is an error as soon as it is seen, and stays one. */
static void test_parse_errors_early_and_stable(void **state) {
    (void)state;
    static const struct {
        const char *in;
        size_t known_at; /* the shortest prefix that is already an error */
    } cases[] = {
        {"*x\r\n", 2},
        {"*1\r\n$x\r\n", 6},
        {"*1\r\n#4\r\nPING\r\n", 5},
        {"*1\r\n$4\r\nPINGxx", 13},
        {"*1\r\n$40000000\r\n", 9}, /* 4000 > max_frame already */
        {"*1\r\n$12345678901234567890", 9},
        {"*65\r\n", 3}, /* 65 > SL__RESP_MAX_ARGS */
        {"*1\r\n$-1\r\n", 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = strlen(cases[i].in);
        sl__resp_command cmd;
        char err[SL__RESP_ERR_MAX];
        for (size_t k = 0; k <= len; k++) {
            long n = parse_n(cases[i].in, k, 1024, &cmd, err);
            long want = k >= cases[i].known_at ? SL_EPARSE : 0;
            if (n != want) fail_msg("case %zu prefix %zu: got %ld, want %ld", i, k, n, want);
        }
    }
}

/* Threads parsing malformed commands without asking for the message (a
 * NULL err): the parser keeps nothing of its own between calls, so TSan
 * sees no two threads writing one place (it once kept a static pointer
 * for the unwanted message). */
static void *parse_bad_quietly(void *arg) {
    (void)arg;
    static const char *bad[] = {"*x\r\n", "*1\r\n$x\r\n", "*1\r\n+PING\r\n", "ECHO \"a\n"};
    intptr_t failed = 0;
    for (int i = 0; i < 2000; i++) {
        sl__resp_command cmd;
        const char *in = bad[i % 4];
        if (sl__resp_parse(in, strlen(in), FRAME, &cmd, NULL, 0) == SL_EPARSE) failed++;
    }
    return (void *)failed;
}

static void test_parse_concurrent_without_err(void **state) {
    (void)state;
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, parse_bad_quietly, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *failed;
        pthread_join(th[i], &failed);
        assert_i64((intptr_t)failed, 2000);
    }
}

/* Deterministic pseudo-random bytes: parse never crashes, never reports more
 * bytes than it has, and every argument lies inside the buffer. */
static void test_parse_random_bytes(void **state) {
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15u;
    static const char alphabet[] = "*$\r\n0123456789-+ \"'\\abcPING";
    char buf[96];
    for (int iter = 0; iter < 200000; iter++) {
        size_t len = 0;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t want = x % sizeof buf;
        for (; len < want; len++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[len] = alphabet[x % (sizeof alphabet - 1)];
        }
        sl__resp_command cmd;
        char err[SL__RESP_ERR_MAX];
        long n = parse_n(buf, len, 64, &cmd, err);
        assert_true((n >= 0 || n == SL_EPARSE) && n <= (long)len);
        if (n < 0) assert_true(err[0] != '\0');
        if (n > 0) {
            assert_true(n <= 64 || cmd.argc == 0);
            for (size_t i = 0; i < cmd.argc; i++) {
                assert_true(cmd.argv[i] >= buf && cmd.argv[i] + cmd.argl[i] <= buf + n);
            }
        }
    }
}

/* ---- writers --------------------------------------------------------------------------- */

static void test_writers(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    sl__resp_simple(&b, "OK");
    sl__resp_error(&b, "ERR bad\r\nthing");
    sl__resp_int(&b, 0);
    sl__resp_int(&b, -1);
    sl__resp_int(&b, INT64_MAX);
    sl__resp_int(&b, INT64_MIN);
    sl__resp_bulk(&b, "hello", 5);
    sl__resp_bulk(&b, "", 0);
    sl__resp_bulk(&b, "a\r\nb", 4);
    sl__resp_null(&b);
    sl__resp_array(&b, 0);
    sl__resp_array(&b, 12);
    int64_t v[3] = {1, -1, 42};
    sl__resp_ints(&b, v, 3);
    assert_string_equal(text(&b), "+OK\r\n"
                                  "-ERR bad  thing\r\n"
                                  ":0\r\n"
                                  ":-1\r\n"
                                  ":9223372036854775807\r\n"
                                  ":-9223372036854775808\r\n"
                                  "$5\r\nhello\r\n"
                                  "$0\r\n\r\n"
                                  "$4\r\na\r\nb\r\n"
                                  "$-1\r\n"
                                  "*0\r\n"
                                  "*12\r\n"
                                  "*3\r\n:1\r\n:-1\r\n:42\r\n");
    sl__buf_free(&b);

    /* a large bulk */
    sl__buf_init(&b);
    char *big = malloc(100000);
    memset(big, 'q', 100000);
    sl__resp_bulk(&b, big, 100000);
    assert_i64(b.len, 9 + 100000 + 2);
    assert_memory_equal(b.data, "$100000\r\n", 9);
    free(big);
    sl__buf_free(&b);
}

/* ---- CL.THROTTLE (sl__cell) ------------------------------------------------------------ */

static sl__cell *make_cell(void) {
    sl__cell *c = NULL;
    assert_int_equal(sl__cell_create(1 << 20, &c), 0);
    return c;
}

#include "cell_expect.h"

static void throttle_error(sl__cell *c, int64_t b, int64_t n, int64_t p, int64_t q,
                           const char *msg) {
    int64_t r[5];
    char err[SL__CELL_ERR_MAX];
    assert_true(cell_throttle(c, "k", 1, b, n, p, q, T0, r, err) < 0);
    assert_string_equal(err, msg);
}

/* README: CL.THROTTLE user123 15 30 60 -> 0, 16, 15, -1, 2 */
static void test_cell_readme_example(void **state) {
    (void)state;
    sl__cell *c = make_cell();
    throttle(c, "user123", 15, 30, 60, 1, T0, (want5){0, 16, 15, -1, 2});
    sl__cell_destroy(c);
}

/* redis-cell's own table (it_rate_limits in its lib.rs): limit 5 (max_burst 4),
 * 1 per second; its durations rounded to seconds as its command does. */
static void test_cell_redis_cell_table(void **state) {
    (void)state;
    sl__cell *c = make_cell();
    static const struct {
        int64_t at_ms, q;
        want5 w;
    } steps[] = {
        {0, 6, {1, 5, 5, -1, 0}}, /* never: larger than the bucket */
        {0, 1, {0, 5, 4, -1, 1}},    {0, 1, {0, 5, 3, -1, 2}},    {0, 1, {0, 5, 2, -1, 3}},
        {0, 1, {0, 5, 1, -1, 4}},    {0, 1, {0, 5, 0, -1, 5}},    {0, 1, {1, 5, 0, 1, 5}},
        {3000, 1, {0, 5, 2, -1, 3}}, {3100, 1, {0, 5, 1, -1, 4}}, /* reset 3.9 s -> 4 */
        {4000, 1, {0, 5, 1, -1, 4}}, {8000, 1, {0, 5, 4, -1, 1}}, {9500, 1, {0, 5, 4, -1, 1}},
        {9500, 0, {0, 5, 4, -1, 1}}, /* peek */
        {9500, 2, {0, 5, 2, -1, 3}}, {9500, 5, {1, 5, 2, 3, 3}},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        throttle(c, "foo", 4, 1, 1, steps[i].q, T0 + steps[i].at_ms * MS, steps[i].w);
    sl__cell_destroy(c);
}

/* redis-cell's end-to-end test: max_burst 0, 1 per 2 s. */
static void test_cell_e2e_sequence(void **state) {
    (void)state;
    sl__cell *c = make_cell();
    throttle(c, "user123", 0, 1, 2, 1, T0, (want5){0, 1, 0, -1, 2});
    throttle(c, "user123", 0, 1, 2, 1, T0, (want5){1, 1, 0, 2, 2});
    throttle(c, "user123", 0, 1, 2, 1, T0 + 2 * SEC, (want5){0, 1, 0, -1, 2});
    sl__cell_destroy(c);
}

/* Burst exhaustion and the retry time it gives, then passing exactly then. */
static void test_cell_burst_then_retry(void **state) {
    (void)state;
    sl__cell *c = make_cell();
    /* 10 per 60 s (T = 6 s), max_burst 2: three pass at once */
    throttle(c, "k", 2, 10, 60, 1, T0, (want5){0, 3, 2, -1, 6});
    throttle(c, "k", 2, 10, 60, 1, T0, (want5){0, 3, 1, -1, 12});
    throttle(c, "k", 2, 10, 60, 1, T0, (want5){0, 3, 0, -1, 18});
    throttle(c, "k", 2, 10, 60, 1, T0, (want5){1, 3, 0, 6, 18});
    throttle(c, "k", 2, 10, 60, 1, T0 + 1500 * MS, (want5){1, 3, 0, 5, 17});   /* 4.5 -> 5 */
    throttle(c, "k", 2, 10, 60, 1, T0 + 6 * SEC - 1, (want5){1, 3, 0, 0, 12}); /* 1 ns: 0 */
    throttle(c, "k", 2, 10, 60, 1, T0 + 6 * SEC, (want5){0, 3, 0, -1, 18});
    /* other keys are independent (a key whose parameters change keeps its
     * state: test_cell.c) */
    throttle(c, "other", 2, 10, 60, 1, T0, (want5){0, 3, 2, -1, 6});
    throttle(c, "k2", 5, 10, 60, 1, T0, (want5){0, 6, 5, -1, 6});
    /* quantity 3 = the whole bucket passes when fresh; 4 never */
    throttle(c, "q", 2, 10, 60, 3, T0, (want5){0, 3, 0, -1, 18});
    throttle(c, "q", 2, 10, 60, 4, T0, (want5){1, 3, 0, -1, 18});
    throttle(c, "fresh", 2, 10, 60, 4, T0, (want5){1, 3, 3, -1, 0});
    /* a peek at an unknown key says full and stores nothing */
    throttle(c, "peek", 2, 10, 60, 0, T0, (want5){0, 3, 3, -1, 0});
    uint64_t keys;
    sl__cell_stats(c, &keys, NULL, NULL);
    assert_i64(keys, 4); /* k, other, k2, q: "fresh" and "peek" were never stored */
    sl__cell_destroy(c);
}

/* Seconds are rounded as redis-cell does: truncated, +1 when the part below
 * the second has whole milliseconds; a sub-millisecond rest is dropped. */
static void test_cell_rounding(void **state) {
    (void)state;
    sl__cell *c = make_cell();
    throttle(c, "r", 0, 1, 2, 1, T0, (want5){0, 1, 0, -1, 2});                 /* tat = T0 + 2 s */
    throttle(c, "r", 0, 1, 2, 0, T0 + 999999500, (want5){0, 1, 0, -1, 1});     /* 1.0000005 s */
    throttle(c, "r", 0, 1, 2, 0, T0 + 999 * MS, (want5){0, 1, 0, -1, 2});      /* 1.001 s */
    throttle(c, "r", 0, 1, 2, 1, T0 + 1999500 * 1000, (want5){1, 1, 0, 0, 0}); /* 0.5 ms */
    throttle(c, "r", 0, 1, 2, 1, T0 + 1998 * MS, (want5){1, 1, 0, 1, 1});      /* 2 ms */
    /* 3 per second: T = 1/3 s exactly (redis-cell: 333333333 ns) */
    throttle(c, "t", 2, 3, 1, 1, T0, (want5){0, 3, 2, -1, 1});
    throttle(c, "t", 2, 3, 1, 1, T0, (want5){0, 3, 1, -1, 1});
    throttle(c, "t", 2, 3, 1, 1, T0, (want5){0, 3, 0, -1, 1});
    throttle(c, "t", 2, 3, 1, 1, T0, (want5){1, 3, 0, 1, 1});
    throttle(c, "t", 2, 3, 1, 1, T0 + 333333334, (want5){0, 3, 0, -1, 1});
    sl__cell_destroy(c);
}

static void test_cell_errors(void **state) {
    (void)state;
    sl__cell *c = make_cell();
    throttle_error(c, 1, 0, 1, 1, "Cell error: Store error: Zero rates are not supported");
    throttle_error(c, 1, 1, 0, 1, "Cell error: Store error: Zero rates are not supported");
    throttle_error(c, 1, -1, 1, 1, "Cell error: Negative rates are not supported");
    throttle_error(c, 1, 1, -5, 1, "Cell error: Negative rates are not supported");
    throttle_error(c, -1, 1, 1, 1, "Cell error: max_burst must not be negative");
    throttle_error(c, 1, 1, 1, -1, "Cell error: quantity must not be negative");
    throttle_error(c, INT64_MAX, 1, 1, 1, "Cell error: Parameters out of range");
    throttle_error(c, 1, 1, INT64_MAX, 1, "Cell error: Parameters out of range");
    throttle_error(c, 1, 1, 4000000000, 1, "Cell error: Parameters out of range"); /* > 100 y */
    throttle_error(c, 1, INT64_MAX, 1, 1, "Cell error: Parameters out of range");
    uint64_t keys;
    sl__cell_stats(c, &keys, NULL, NULL);
    assert_i64(keys, 0); /* refused calls store nothing */

    int64_t r[5];
    char err[SL__CELL_ERR_MAX];
    assert_int_equal(cell_throttle(c, "k", 1, 1, 1, 1, 1, -1, r, err), SL_EINVAL);
    assert_string_equal(err, "ERR clock out of range");
    char *longkey = calloc(1, SL_KEY_MAX + 1);
    assert_int_equal(cell_throttle(c, longkey, SL_KEY_MAX + 1, 1, 1, 1, 1, T0, r, err), SL_EKEY);
    assert_string_equal(err, "ERR key too long");
    free(longkey);
    sl__cell_destroy(c);

    assert_int_equal(sl__cell_create(1, &c), SL_EINVAL); /* too small for one state */
}

typedef struct race_arg {
    sl__cell *c;
    int id;
    int errors, shared_allowed;
    int allowed[7];
} race_arg;

static void *race(void *p) {
    race_arg *a = p;
    for (int i = 0; i < 2000; i++) {
        int64_t r[5];
        char err[SL__CELL_ERR_MAX];
        char key[16];
        snprintf(key, sizeof key, "k%d", i % 7);
        /* 24 parameter sets on the same keys at one instant */
        if (cell_throttle(a->c, key, strlen(key), i % 24, 100, 1, 1, T0, r, err) != 0)
            a->errors++;
        else if (r[0] == 0)
            a->allowed[i % 7]++;
        if (i % 50 == 0) {
            if (cell_throttle(a->c, "shared", 6, 0, 1, 60, 1, T0, r, err) != 0)
                a->errors++;
            else if (r[0] == 0)
                a->shared_allowed++;
        }
    }
    return NULL;
}

/* Threads using the same keys with different parameters at once: one state
 * per key, never more passes than the largest burst allows (every call of
 * a key here has the same emission interval, so at one instant at most
 * max_burst + 1 = 24 of them pass), never an error. */
static void test_cell_concurrent(void **state) {
    (void)state;
    sl__cell *c = make_cell();
    pthread_t th[8];
    race_arg args[8];
    for (int i = 0; i < 8; i++) {
        args[i] = (race_arg){.c = c, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, race, &args[i]), 0);
    }
    int shared = 0, errors = 0, allowed[7] = {0};
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        shared += args[i].shared_allowed;
        errors += args[i].errors;
        for (int k = 0; k < 7; k++) allowed[k] += args[i].allowed[k];
    }
    assert_int_equal(errors, 0);
    for (int k = 0; k < 7; k++) {
        assert_true(allowed[k] >= 1);
        assert_true(allowed[k] <= 24);
    }
    assert_int_equal(shared, 1); /* max_burst 0 at one instant: exactly one pass overall */
    sl__cell_destroy(c);
}

/* ---- commands ------------------------------------------------------------------------- */

static void test_cmd_basics(void **state) {
    (void)state;
    sl__resp_context ctx = {.now = T0};
    static const char *const basics[][2] = {
        {"PING\r\n", "+PONG\r\n"},
        {"pInG\r\n", "+PONG\r\n"},
        {"*2\r\n$4\r\nping\r\n$5\r\nhello\r\n", "$5\r\nhello\r\n"},
        {"PING a b\r\n", "-ERR wrong number of arguments for 'ping' command\r\n"},
        {"ECHO hi\r\n", "$2\r\nhi\r\n"},
        {"*2\r\n$4\r\nEcHo\r\n$0\r\n\r\n", "$0\r\n\r\n"},
        {"ECHO\r\n", "-ERR wrong number of arguments for 'echo' command\r\n"},
        {"ECHO a b\r\n", "-ERR wrong number of arguments for 'echo' command\r\n"},
        {"*0\r\n\r\n*-1\r\n", ""}, /* nothing to run: no reply */
        {"SELECT 0\r\n", "+OK\r\n"},
        {"SELECT 1\r\n", "-ERR DB index is out of range\r\n"},
        {"CLIENT SETNAME app\r\n", "+OK\r\n"},
        {"CLIENT SETINFO LIB-NAME x\r\n", "+OK\r\n"},
        {"CLIENT GETNAME\r\n", "$-1\r\n"},
        {"CLIENT KILL x\r\n", "-ERR unknown subcommand 'KILL'. Try CLIENT HELP.\r\n"},
        {"HELLO 3\r\n", "-NOPROTO sorry, this protocol version is not supported\r\n"},
        {"AUTH x\r\n",
         "-ERR AUTH <password> called without any password configured for the default "
         "user. Are you sure your configuration is correct?\r\n"},
    };
    expect_replies(&ctx, basics, COUNT(basics));

    assert_memory_equal(ask(&ctx, "HELLO 2\r\n"), "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n", 28);

    /* pipelined: one reply per command, in order */
    assert_string_equal(ask(&ctx, "PING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\nPING\n"),
                        "+PONG\r\n$1\r\nx\r\n+PONG\r\n");
    assert_int_equal(asked.quit, 0);
}

static void test_cmd_quit(void **state) {
    (void)state;
    sl__resp_context ctx = {.now = T0};
    assert_string_equal(ask(&ctx, "QUIT\r\n"), "+OK\r\n");
    assert_int_equal(asked.quit, 1);
}

static void test_cmd_unknown(void **state) {
    (void)state;
    sl__resp_context ctx = {.now = T0};
    expect_reply(&ctx, "FOO a b\r\n",
                 "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n");
    expect_reply(&ctx, "GET\r\n", "-ERR unknown command 'GET', with args beginning with: \r\n");
    /* CR/LF inside an argument cannot break the error line */
    expect_reply(&ctx, "*2\r\n$3\r\nSET\r\n$4\r\na\r\nb\r\n",
                 "-ERR unknown command 'SET', with args beginning with: 'a  b' \r\n");
    /* long arguments are cut at 128 bytes in all */
    char in[600], want[600];
    char a300[301];
    memset(a300, 'a', 300);
    a300[300] = '\0';
    snprintf(in, sizeof in, "X %s b\r\n", a300);
    snprintf(want, sizeof want, "-ERR unknown command 'X', with args beginning with: '%.128s' \r\n",
             a300);
    expect_reply(&ctx, in, want);
}

static void test_cmd_throttle(void **state) {
    (void)state;
    sl__cell *c = make_cell();
    sl__resp_context ctx = {.cell = c, .now = T0};
    static const char *const allowed[][2] = {
        {"CL.THROTTLE user123 15 30 60\r\n", "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n"},
        {"*6\r\n$11\r\ncl.throttle\r\n$7\r\nuser123\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n"
         "$1\r\n0\r\n",
         "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n"},
        {"CL.THROTTLE user123 15 30 60 +14\r\n", "*5\r\n:0\r\n:16\r\n:1\r\n:-1\r\n:30\r\n"},
        {"CL.THROTTLE user123 15 30 60 2\r\n", "*5\r\n:1\r\n:16\r\n:1\r\n:2\r\n:30\r\n"},
    };
    expect_replies(&ctx, allowed, COUNT(allowed));

    const char *usage =
        "-Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> "
        "<period> [<quantity>]\r\n";
    const char *const errors[][2] = {
        {"CL.THROTTLE\r\n", usage},
        {"CL.THROTTLE k 1 2\r\n", usage},
        {"CL.THROTTLE k 1 2 3 4 5\r\n", usage},
        {"CL.THROTTLE k x 2 3\r\n", "-Cell error: Store error: Couldn't parse as integer: x\r\n"},
        {"CL.THROTTLE k 1 2.5 3\r\n",
         "-Cell error: Store error: Couldn't parse as integer: 2.5\r\n"},
        {"CL.THROTTLE k 1 2 3 \"\"\r\n",
         "-Cell error: Store error: Couldn't parse as integer: \r\n"},
        {"CL.THROTTLE k 1 2 9223372036854775808\r\n",
         "-Cell error: Store error: Couldn't parse as integer: 9223372036854775808\r\n"},
        {"CL.THROTTLE k 1 2 -9223372036854775808\r\n",
         "-Cell error: Negative rates are not supported\r\n"},
        {"CL.THROTTLE k 1 0 3\r\n", "-Cell error: Store error: Zero rates are not supported\r\n"},
    };
    expect_replies(&ctx, errors, COUNT(errors));
    sl__cell_destroy(c);

    ctx.cell = NULL;
    expect_reply(&ctx, "CL.THROTTLE k 1 2 3\r\n",
                 "-ERR CL.THROTTLE is not enabled on this server\r\n");
}

static void test_cmd_info(void **state) {
    (void)state;
    sl__cell *c = make_cell();
    sl__resp_context ctx = {.cell = c, .now = T0};
    const char *t = ask(&ctx, "INFO\r\n");
    assert_true(t[0] == '$');
    assert_non_null(strstr(t, "\r\n# Server\r\nredis_version:7.0.0\r\n"));
    assert_non_null(strstr(t, "# Cell\r\ncell_keys:0\r\n"));
    /* the bulk length matches */
    long n = strtol(t + 1, NULL, 10);
    const char *body = strstr(t, "\r\n") + 2;
    assert_i64(strlen(body), n + 2);

    t = ask(&ctx, "INFO server\r\n");
    assert_non_null(strstr(t, "# Server"));
    assert_null(strstr(t, "# Cell"));

    assert_string_equal(ask(&ctx, "INFO nosuchsection\r\n"), "$0\r\n\r\n");
    sl__cell_destroy(c);
}

static void extra_info(void *p, sl__buf *out) {
    assert_string_equal(p, "me");
    sl__buf_puts(out, "# Clients\r\nconnected_clients:3\r\n\r\n# Stats\r\ntotal_commands:9\r\n");
}

static void test_cmd_info_callback(void **state) {
    (void)state;
    sl__resp_context ctx = {.now = T0, .info = extra_info, .info_ctx = "me"};
    const char *t = ask(&ctx, "INFO\r\n");
    assert_non_null(strstr(t, "\r\n\r\n# Clients\r\nconnected_clients:3\r\n\r\n# Stats\r\n"));
    assert_null(strstr(t, "# Cell")); /* no cell in this context */

    assert_string_equal(ask(&ctx, "INFO STATS clients\r\n"),
                        "$61\r\n# Clients\r\nconnected_clients:3\r\n\r\n"
                        "# Stats\r\ntotal_commands:9\r\n\r\n");
}

static void test_cmd_command_and_config(void **state) {
    (void)state;
    sl__resp_context ctx = {.now = T0};
    const char *t = ask(&ctx, "COMMAND COUNT\r\n");
    assert_true(t[0] == ':');
    long count = strtol(t + 1, NULL, 10);
    assert_true(count >= 7);

    /* COMMAND: an array of count entries of 10 fields each */
    char head[64];
    snprintf(head, sizeof head, "*%ld\r\n*10\r\n$11\r\ncl.throttle\r\n:-1\r\n", count);
    assert_memory_equal(ask(&ctx, "COMMAND\r\n"), head, strlen(head));

    expect_reply(&ctx, "COMMAND INFO ping nosuch\r\n",
                 "*2\r\n*10\r\n$4\r\nping\r\n:-1\r\n*2\r\n+fast\r\n+stale\r\n:0\r\n:0\r\n:0\r\n"
                 "*0\r\n*0\r\n*0\r\n*0\r\n$-1\r\n");
    expect_reply(&ctx, "COMMAND DOCS echo nosuch\r\n",
                 "*2\r\n$4\r\necho\r\n*8\r\n$7\r\nsummary\r\n$24\r\nReturns the given string\r\n"
                 "$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$10\r\nconnection\r\n"
                 "$9\r\narguments\r\n*1\r\n*4\r\n$4\r\nname\r\n$7\r\nmessage\r\n$4\r\ntype\r\n"
                 "$6\r\nstring\r\n");
    char docs_head[16];
    snprintf(docs_head, sizeof docs_head, "*%ld\r\n", 2 * count);
    assert_memory_equal(ask(&ctx, "COMMAND DOCS\r\n"), docs_head, strlen(docs_head));
    assert_non_null(strstr(ask(&ctx, "COMMAND LIST\r\n"), "$8\r\nsl.check\r\n"));
    expect_reply(&ctx, "COMMAND FOO\r\n", "-ERR unknown subcommand 'FOO'. Try COMMAND HELP.\r\n");

    /* redis-benchmark's start-up questions */
    static const char *const config[][2] = {
        {"CONFIG GET save\r\n", "*2\r\n$4\r\nsave\r\n$0\r\n\r\n"},
        {"CONFIG GET appendonly\r\n", "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"},
        {"CONFIG GET maxmemory\r\n", "*0\r\n"},
        {"config get SAVE appendonly save\r\n",
         "*4\r\n$4\r\nsave\r\n$0\r\n\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"},
        {"CONFIG GET\r\n", "-ERR wrong number of arguments for 'config|get' command\r\n"},
        {"CONFIG SET save x\r\n", "-ERR unknown subcommand 'SET'. Try CONFIG HELP.\r\n"},
        {"CONFIG\r\n", "-ERR wrong number of arguments for 'config' command\r\n"},
    };
    expect_replies(&ctx, config, COUNT(config));
}

/* ---- SL.CHECK ------------------------------------------------------------------------------ */

static sl__policy_set *make_policies(void) {
    static sl__policy_config pc[3];
    memset(pc, 0, sizeof pc);
    snprintf(pc[0].name, sizeof pc[0].name, "api");
    pc[0].params = (sl_params){.algorithm = SL_TOKEN_BUCKET, .rate = {2, SEC}, .burst = 3};
    snprintf(pc[1].name, sizeof pc[1].name, "shadowed");
    pc[1].params = (sl_params){.algorithm = SL_FIXED_WINDOW, .rate = {1, 60 * SEC}};
    pc[1].shadow = true;
    snprintf(pc[2].name, sizeof pc[2].name, "smooth");
    pc[2].params = (sl_params){.algorithm = SL_LEAKY_QUEUE, .rate = {2, SEC}, .burst = 3};
    sl__config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.policies = pc;
    cfg.npolicies = 3;
    cfg.max_memory = 1 << 20;
    sl__policy_set *set = NULL;
    char err[256];
    if (sl__policy_set_create(&cfg, NULL, T0, &set, err, sizeof err) != 0) fail_msg("%s", err);
    return set;
}

static void test_cmd_check(void **state) {
    (void)state;
    sl__resp_context ctx = {.now = T0};
    expect_reply(&ctx, "SL.CHECK api k\r\n", "-ERR no policies are loaded\r\n");

    ctx.policies = make_policies();
    /* the seed's token bucket: 2/s burst 3: three pass, the fourth waits 500 ms */
    expect_reply(&ctx, "SL.CHECK api k\r\n", "*5\r\n:1\r\n:3\r\n:2\r\n:0\r\n:500\r\n");
    expect_reply(&ctx, "sl.check api k 1\r\n", "*5\r\n:1\r\n:3\r\n:1\r\n:0\r\n:1000\r\n");
    expect_reply(&ctx, "SL.CHECK api k\r\n", "*5\r\n:1\r\n:3\r\n:0\r\n:0\r\n:1500\r\n");
    expect_reply(&ctx, "SL.CHECK api k\r\n", "*5\r\n:0\r\n:3\r\n:0\r\n:500\r\n:1500\r\n");
    expect_reply(&ctx, "SL.CHECK api k 0\r\n", "*5\r\n:1\r\n:3\r\n:0\r\n:0\r\n:1500\r\n");
    ctx.now = T0 + 600 * MS;
    expect_reply(&ctx, "SL.CHECK api k\r\n", "*5\r\n:1\r\n:3\r\n:0\r\n:0\r\n:1400\r\n");
    /* ms rounded up */
    ctx.now = T0 + 600 * MS + 1;
    expect_reply(&ctx, "SL.CHECK api k\r\n", "*5\r\n:0\r\n:3\r\n:0\r\n:400\r\n:1400\r\n");

    /* shadow: limited, but answered allowed (T0 is 20 s into its minute) */
    ctx.now = T0;
    expect_reply(&ctx, "SL.CHECK shadowed k\r\n", "*5\r\n:1\r\n:1\r\n:0\r\n:0\r\n:40000\r\n");
    expect_reply(&ctx, "SL.CHECK shadowed k\r\n", "*5\r\n:1\r\n:1\r\n:0\r\n:0\r\n:40000\r\n");
    assert_i64(atomic_load(&sl__policy_find(ctx.policies, "shadowed", 8)->lim.shadow_limited), 1);

    expect_reply(&ctx, "SL.CHECK nope k\r\n", "-ERR unknown policy 'nope'\r\n");
    /* a NUL in the name is not a prefix match (the echoed name stops at it) */
    static const char nul[] = "*3\r\n$8\r\nSL.CHECK\r\n$5\r\napi\0x\r\n$1\r\nk\r\n";
    expect_reply_n(&ctx, nul, sizeof nul - 1, "-ERR unknown policy 'api'\r\n");
    char longname[200], longwant[300];
    memset(longname, 'a', sizeof longname);
    longname[sizeof longname - 1] = '\0';
    snprintf(longwant, sizeof longwant, "-ERR unknown policy '%.128s'\r\n", longname);
    char longcmd[300];
    snprintf(longcmd, sizeof longcmd, "SL.CHECK %s k\r\n", longname);
    expect_reply(&ctx, longcmd, longwant);
    expect_reply(&ctx, "SL.CHECK api k -1\r\n", "-ERR cost must be an integer >= 0\r\n");
    expect_reply(&ctx, "SL.CHECK api k x\r\n", "-ERR cost must be an integer >= 0\r\n");
    expect_reply(&ctx, "SL.CHECK api k 4\r\n",
                 "-ERR cost 4 can never pass policy 'api' (limit 3)\r\n");
    expect_reply(&ctx, "SL.CHECK api\r\n",
                 "-ERR wrong number of arguments for 'sl.check' command\r\n");
    expect_reply(&ctx, "SL.CHECK api k 1 2\r\n",
                 "-ERR wrong number of arguments for 'sl.check' command\r\n");
    expect_reply(&ctx, "SL.CHECK api k 1 DELAY 2\r\n",
                 "-ERR wrong number of arguments for 'sl.check' command\r\n");
    expect_reply(&ctx, "SL.CHECK api DELAY\r\n", /* a key named delay: no option */
                 "*5\r\n:1\r\n:3\r\n:2\r\n:0\r\n:500\r\n");
    sl__policy_set_release(ctx.policies);
}

/* SL.CHECK ... DELAY: a sixth integer, delay_ms (a leaky queue's wait; 0
 * when not delayed or refused); without DELAY the five of before, so that
 * clients reading five by position (or checking the length) still work. */
static void test_cmd_check_delay(void **state) {
    (void)state;
    sl__resp_context ctx = {.now = T0, .policies = make_policies()};
    /* leaky queue 2/s, 3 may wait: delays 0, 500, 1000 ms, then refused */
    expect_reply(&ctx, "SL.CHECK smooth k DELAY\r\n",
                 "*6\r\n:1\r\n:3\r\n:2\r\n:0\r\n:500\r\n:0\r\n");
    expect_reply(&ctx, "SL.CHECK smooth k 1 delay\r\n",
                 "*6\r\n:1\r\n:3\r\n:1\r\n:0\r\n:1000\r\n:500\r\n");
    expect_reply(&ctx, "SL.CHECK smooth k\r\n", "*5\r\n:1\r\n:3\r\n:0\r\n:0\r\n:1500\r\n");
    expect_reply(&ctx, "SL.CHECK smooth k DELAY\r\n",
                 "*6\r\n:0\r\n:3\r\n:0\r\n:500\r\n:1500\r\n:0\r\n");
    /* a bucket never delays: 0 */
    expect_reply(&ctx, "SL.CHECK api k DELAY\r\n", "*6\r\n:1\r\n:3\r\n:2\r\n:0\r\n:500\r\n:0\r\n");
    sl__policy_set_release(ctx.policies);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_multibulk),
        cmocka_unit_test(test_parse_inline),
        cmocka_unit_test(test_parse_empty_commands),
        cmocka_unit_test(test_parse_every_split_point),
        cmocka_unit_test(test_parse_pipelined),
        cmocka_unit_test(test_parse_max_args),
        cmocka_unit_test(test_parse_max_frame),
        cmocka_unit_test(test_parse_allows_big_bulk_within_frame),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_errors_early_and_stable),
        cmocka_unit_test(test_parse_random_bytes),
        cmocka_unit_test(test_parse_concurrent_without_err),
        cmocka_unit_test(test_writers),
        cmocka_unit_test(test_cell_readme_example),
        cmocka_unit_test(test_cell_redis_cell_table),
        cmocka_unit_test(test_cell_e2e_sequence),
        cmocka_unit_test(test_cell_burst_then_retry),
        cmocka_unit_test(test_cell_rounding),
        cmocka_unit_test(test_cell_errors),
        cmocka_unit_test(test_cell_concurrent),
        cmocka_unit_test(test_cmd_basics),
        cmocka_unit_test(test_cmd_quit),
        cmocka_unit_test(test_cmd_unknown),
        cmocka_unit_test(test_cmd_throttle),
        cmocka_unit_test(test_cmd_info),
        cmocka_unit_test(test_cmd_info_callback),
        cmocka_unit_test(test_cmd_command_and_config),
        cmocka_unit_test(test_cmd_check),
        cmocka_unit_test(test_cmd_check_delay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
