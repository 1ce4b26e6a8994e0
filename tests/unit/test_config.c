/* test_config.c: the YAML config loader (src/policy/config.c). The embedded
 * default and every .yaml under examples/ loads; every value form (listeners,
 * workers, sizes, durations, booleans, enums) is accepted or refused as
 * docs/configuration.md says; errors carry the exact "file:line: field:
 * message" text, are all collected and sorted by line; unknown and duplicate
 * keys, wrong YAML types, syntax errors, and the bounds (file size, nesting,
 * policy count, error count) are reported, never crashed on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/config.h"
#include "sluice/sluice.h"

#include "helpers.h"

#ifndef SLUICE_SOURCE_DIR
#error "SLUICE_SOURCE_DIR must name the source tree (tests/config.cmake)"
#endif

#define MiB ((size_t)1 << 20)
#define KiB ((size_t)1 << 10)

/* ---- helpers --------------------------------------------------------------- */

#define parse_ok       config_parse_ok
#define expect_errors_ config_expect_errors

/* Parses `text`: it must fail with one error containing `part`. */
static void expect_error_with(const char *text, const char *part) {
    sl__config *c = NULL;
    static sl__config_errors e;
    int rc = sl__config_parse(text, strlen(text), "t.yaml", &c, &e);
    assert_int_equal(rc, SL_EPARSE);
    assert_null(c);
    if (e.n != 1 || !strstr(e.msg[0], part)) {
        print_errors(&e);
        fail_msg("expected one error containing \"%s\" for:\n%s", part, text);
    }
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* A config with one policy made of `body` (lines indented by 4). */
static const char *one_policy(char *buf, size_t size, const char *body) {
    snprintf(buf, size, "policies:\n  - name: p\n%s", body);
    return buf;
}

/* ---- the shipped configs ----------------------------------------------------- */

static void test_default_loads(void **state) {
    (void)state;
    sl__config *c = NULL;
    sl__config_errors e;
    if (sl__config_load_default(&c, &e) != 0) {
        print_errors(&e);
        fail_msg("the embedded default does not load");
    }
    assert_string_equal(c->source, "<embedded default>");
    assert_true(c->http.enabled);
    assert_string_equal(c->http.host, "127.0.0.1");
    assert_int_equal(c->http.port, 8080);
    assert_true(c->grpc.enabled);
    assert_string_equal(c->grpc.host, "127.0.0.1");
    assert_int_equal(c->grpc.port, 8081);
    assert_true(c->resp.enabled);
    assert_string_equal(c->resp.host, "127.0.0.1");
    assert_int_equal(c->resp.port, 6380);
    assert_int_equal(c->workers, 0);
    assert_int_equal(c->store_type, SL__STORE_MEMORY);
    assert_int_equal(c->max_memory, 256 * MiB);
    assert_int_equal(c->log_level, SL__LOG_INFO);

    static const struct {
        const char *name;
        sl_algorithm alg;
        int64_t limit, period, burst;
    } want[] = {
        {"api", SL_TOKEN_BUCKET, 5, SEC, 5},
        {"login", SL_SLIDING_LOG, 5, 60 * SEC, 0},
        {"search", SL_GCRA, 10, SEC, 20},
        {"exports", SL_LEAKY_QUEUE, 1, SEC, 3},
        {"daily", SL_FIXED_WINDOW, 1000, 86400 * SEC, 0},
    };
    for (size_t i = 0; i < COUNT(want); i++) {
        const sl__policy_config *p = sl__config_policy(c, want[i].name, strlen(want[i].name));
        if (!p) fail_msg("the default has no policy %s", want[i].name);
        assert_int_equal(p->params.algorithm, want[i].alg);
        assert_int_equal(p->params.rate.limit, want[i].limit);
        assert_int_equal(p->params.rate.period, want[i].period);
        assert_int_equal(p->params.burst, want[i].burst);
        assert_int_equal(sl_params_validate(&p->params), SL_OK);
        assert_true(p->line > 1);
    }
    sl__config_free(c);
}

/* The embedded text is examples/sluice.yaml, byte for byte. */
static void test_default_is_the_example(void **state) {
    (void)state;
    size_t len;
    char *file = read_file(SLUICE_SOURCE_DIR "/examples/sluice.yaml", &len);
    assert_int_equal(strlen(sl__default_config_text), len);
    assert_memory_equal(sl__default_config_text, file, len);
    free(file);
}

static void test_examples_load(void **state) {
    (void)state;
    DIR *d = opendir(SLUICE_SOURCE_DIR "/examples");
    assert_non_null(d);
    int loaded = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".yaml") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/%s", SLUICE_SOURCE_DIR, de->d_name);
        sl__config *c = NULL;
        sl__config_errors e;
        if (sl__config_load(path, &c, &e) != 0) {
            print_errors(&e);
            fail_msg("%s does not load", path);
        }
        assert_string_equal(c->source, path);
        sl__config_free(c);
        loaded++;
    }
    closedir(d);
    assert_true(loaded >= 2);
}

/* Every value of all-algorithms.yaml, which sets each key to a non-default. */
static void test_all_algorithms_example(void **state) {
    (void)state;
    sl__config *c = NULL;
    sl__config_errors e;
    if (sl__config_load(SLUICE_SOURCE_DIR "/examples/all-algorithms.yaml", &c, &e) != 0) {
        print_errors(&e);
        fail();
    }
    assert_true(c->http.enabled);
    assert_string_equal(c->http.host, "0.0.0.0");
    assert_int_equal(c->http.port, 9080);
    assert_false(c->grpc.enabled);
    assert_true(c->resp.enabled);
    assert_string_equal(c->resp.host, "::1");
    assert_int_equal(c->resp.port, 6390);
    assert_int_equal(c->workers, 4);
    assert_int_equal(c->max_memory, 64 * MiB);
    assert_int_equal(c->limits.max_header_bytes, 16 * KiB);
    assert_int_equal(c->limits.max_body_bytes, 128 * KiB);
    assert_int_equal(c->limits.max_resp_frame, 32 * KiB);
    assert_int_equal(c->limits.max_connections, 2000);
    assert_int_equal(c->limits.idle_timeout, 30 * SEC);
    assert_int_equal(c->limits.header_timeout, 5 * SEC);
    assert_int_equal(c->limits.command_timeout, 5 * SEC);
    assert_int_equal(c->limits.max_pending_output, 512 * KiB);
    assert_int_equal(c->limits.max_pending_output_total, 32 * MiB);
    assert_int_equal(c->log_level, SL__LOG_DEBUG);
    assert_int_equal(c->npolicies, 6);

    const sl__policy_config *p = &c->policies[0];
    assert_string_equal(p->name, "fixed");
    assert_int_equal(p->params.algorithm, SL_FIXED_WINDOW);
    p = &c->policies[1];
    assert_int_equal(p->params.algorithm, SL_SLIDING_LOG);
    assert_int_equal(p->params.rate.limit, 10);
    assert_int_equal(p->params.rate.period, 10 * SEC);
    assert_int_equal(p->params.flags, SL_COUNT_REJECTED);
    p = &c->policies[2];
    assert_int_equal(p->params.algorithm, SL_SLIDING_WINDOW);
    assert_int_equal(p->params.burst, 0); /* a window's burst is ignored */
    p = &c->policies[3];
    assert_int_equal(p->params.algorithm, SL_TOKEN_BUCKET);
    assert_int_equal(p->params.flags, SL_START_EMPTY);
    assert_int_equal(p->params.origin, 0); /* the server sets it */
    p = &c->policies[4];
    assert_int_equal(p->params.algorithm, SL_GCRA);
    assert_true(p->shadow);
    p = &c->policies[5];
    assert_string_equal(p->name, "queue.exports-v2");
    assert_int_equal(p->params.algorithm, SL_LEAKY_QUEUE);
    assert_int_equal(p->params.rate.limit, 3);
    assert_int_equal(p->params.rate.period, 500 * MS);
    assert_int_equal(p->params.burst, 10);
    assert_int_equal(p->params.flags, 0);
    assert_false(p->shadow);
    assert_int_equal(p->on_failure, SL__FAIL_SET_CLOSED);
    assert_int_equal(p->line, 56);
    assert_int_equal(c->admin.reload, SL__RELOAD_TOKEN);
    assert_string_equal(c->admin.reload_token, "replace-me-with-32-random-characters");
    sl__config_free(c);
}

/* ---- defaults and the lookup ------------------------------------------------- */

static void test_defaults(void **state) {
    (void)state;
    sl__config *c = parse_ok("policies:\n");
    assert_string_equal(c->source, "t.yaml");
    assert_true(c->http.enabled && c->grpc.enabled && c->resp.enabled);
    assert_int_equal(c->http.port, 8080);
    assert_int_equal(c->grpc.port, 8081);
    assert_int_equal(c->resp.port, 6380);
    assert_string_equal(c->resp.host, "127.0.0.1");
    assert_int_equal(c->workers, 0);
    assert_int_equal(c->store_type, SL__STORE_MEMORY);
    assert_int_equal(c->max_memory, 256 * MiB);
    assert_int_equal(c->limits.max_header_bytes, 8 * KiB);
    assert_int_equal(c->limits.max_body_bytes, 64 * KiB);
    assert_int_equal(c->limits.max_resp_frame, 64 * KiB);
    assert_int_equal(c->limits.max_connections, 10000);
    assert_int_equal(c->limits.idle_timeout, 60 * SEC);
    assert_int_equal(c->limits.header_timeout, 10 * SEC);
    assert_int_equal(c->limits.command_timeout, 10 * SEC);
    assert_int_equal(c->limits.drain_timeout, 10 * SEC);
    assert_int_equal(c->limits.max_pending_output, MiB);
    assert_int_equal(c->limits.max_pending_output_total, 64 * MiB);
    assert_int_equal(c->log_level, SL__LOG_INFO);
    assert_int_equal(c->npolicies, 0);
    sl__config_free(c);

    /* Empty (null) sections are the same as absent ones. */
    c = parse_ok("listen:\nstore: ~\nlimits: null\npolicies: []\nlog_level: debug\n");
    assert_true(c->http.enabled);
    assert_int_equal(c->http.port, 8080);
    assert_int_equal(c->max_memory, 256 * MiB);
    assert_int_equal(c->limits.idle_timeout, 60 * SEC);
    assert_int_equal(c->log_level, SL__LOG_DEBUG);
    sl__config_free(c);
}

static void test_policy_lookup(void **state) {
    (void)state;
    sl__config *c = parse_ok("policies:\n"
                             "  - {name: a, algorithm: fixed_window, rate: 1/s}\n"
                             "  - {name: ab, algorithm: fixed_window, rate: 1/s}\n");
    assert_ptr_equal(sl__config_policy(c, "a", 1), &c->policies[0]);
    assert_ptr_equal(sl__config_policy(c, "ab", 2), &c->policies[1]);
    assert_ptr_equal(sl__config_policy(c, "abc", 2), &c->policies[1]); /* len counts */
    assert_null(sl__config_policy(c, "b", 1));
    assert_null(sl__config_policy(c, "abc", 3));
    assert_null(sl__config_policy(c, "", 0));
    assert_null(sl__config_policy(NULL, "a", 1));
    assert_int_equal(c->policies[0].line, 2);
    assert_int_equal(c->policies[1].line, 3);
    sl__config_free(c);
    sl__config_free(NULL);
}

/* ---- value forms --------------------------------------------------------------- */

static void test_listen(void **state) {
    (void)state;
    static const struct {
        const char *value, *host;
        unsigned port;
    } good[] = {
        {"127.0.0.1:8080", "127.0.0.1", 8080}, {"0.0.0.0:1", "0.0.0.0", 1},
        {"10.1.2.3:0", "10.1.2.3", 0},         {"\"[::1]:6380\"", "::1", 6380},
        {"'[::]:65535'", "::", 65535},         {"\"[2001:db8:0::1]:80\"", "2001:db8::1", 80},
    };
    char text[256];
    for (size_t i = 0; i < COUNT(good); i++) {
        snprintf(text, sizeof text, "listen:\n  http: %s\n  grpc: off\n  resp: off\n",
                 good[i].value);
        sl__config *c = parse_ok(text);
        assert_true(c->http.enabled);
        assert_string_equal(c->http.host, good[i].host);
        assert_int_equal(c->http.port, good[i].port);
        assert_false(c->grpc.enabled);
        assert_false(c->resp.enabled);
        sl__config_free(c);
    }

    expect_errors(
        "listen:\n  http: localhost:8080\n",
        "t.yaml:2: listen.http: cannot use \"localhost:8080\": the host must be a numeric "
        "IP address (names such as localhost are not resolved: use 127.0.0.1 or "
        "\"[::1]\")");
    expect_errors("listen:\n  grpc: ::1:8081\n",
                  "t.yaml:2: listen.grpc: cannot use \"::1:8081\": an IPv6 address needs brackets "
                  "and quotes, such as \"[::1]:8080\"");
    expect_errors("listen:\n  resp: 127.0.0.1:65536\n",
                  "t.yaml:2: listen.resp: cannot use \"127.0.0.1:65536\": the port must be a "
                  "number from 0 to 65535 (0: any free port)");
    expect_error_with("listen:\n  http: 8080\n", "expected host:port (such as 127.0.0.1:8080)");
    expect_error_with("listen:\n  http: :8080\n", "the host is missing");
    expect_error_with("listen:\n  http: 127.0.0.1:http\n", "the port must be a number");
    expect_error_with("listen:\n  http: \"[::1]\"\n", "expected [IPv6 address]:port");
    expect_error_with("listen:\n  http: \"[1.2.3.4]:80\"\n", "not a numeric IPv6 address");
    expect_error_with("listen:\n  http: 1.2.3:80\n", "the host must be a numeric IP address");
    expect_error_with("listen:\n  http: false\n", "expected host:port");
    expect_error_with(
        "listen:\n  http: 1111111111111111111111111111111111111111111111111111111111111"
        "111111111111111111111:80\n",
        "the host is too long");
    expect_errors("log_level: 'a\"b\\c'\n",
                  "t.yaml:1: log_level: unknown log level \"a\\\"b\\\\c\" (expected error, warn, "
                  "info or debug)");
    expect_errors("listen:\n  http:\n",
                  "t.yaml:2: listen.http: expected host:port (such as 127.0.0.1:8080) or off, got "
                  "nothing");
    expect_errors("listen:\n  http: [a, b]\n",
                  "t.yaml:2: listen.http: expected host:port or off (write an IPv6 listener in "
                  "quotes: \"[::1]:8080\"), got a list");
    expect_errors("listen: 127.0.0.1:8080\n",
                  "t.yaml:1: listen: expected a mapping of http, grpc and resp, got "
                  "\"127.0.0.1:8080\"");
    /* Two listeners on one port of one (or every) address. */
    expect_errors("listen:\n  http: 127.0.0.1:7000\n  resp: 127.0.0.1:7000\n",
                  "t.yaml:3: listen.resp: port 7000 is already used by listen.http");
    expect_errors("listen:\n  grpc: 0.0.0.0:8080\n",
                  "t.yaml:2: listen.grpc: port 8080 is already used by listen.http");
    /* A refused listener is not also reported as clashing with its default. */
    expect_errors("listen:\n  http: nowhere:80\n  resp: 127.0.0.1:8080\n",
                  "t.yaml:2: listen.http: cannot use \"nowhere:80\": the host must be a numeric IP "
                  "address (names such as localhost are not resolved: use 127.0.0.1 or "
                  "\"[::1]\")");
    sl__config_free(parse_ok("listen:\n  http: 127.0.0.1:7000\n  resp: 127.0.0.2:7000\n"));
    sl__config_free(parse_ok("listen:\n  http: 127.0.0.1:0\n  grpc: 127.0.0.1:0\n  resp: off\n"));
    sl__config_free(parse_ok("listen:\n  http: off\n  grpc: 127.0.0.1:8080\n"));
}

static void test_workers(void **state) {
    (void)state;
    static const struct {
        const char *text;
        unsigned workers;
    } good[] = {{"workers: auto\n", 0}, {"workers: 1\n", 1}, {"workers: 256\n", 256}};
    for (size_t i = 0; i < COUNT(good); i++) {
        sl__config *c = parse_ok(good[i].text);
        assert_int_equal(c->workers, good[i].workers);
        sl__config_free(c);
    }

    expect_errors("workers: 0\n", "t.yaml:1: workers: 0 is out of range (1 to 256)");
    expect_errors("workers: 257\n", "t.yaml:1: workers: 257 is out of range (1 to 256)");
    expect_errors("workers: \"4\"\n", "t.yaml:1: workers: expected auto or a number from 1 to "
                                      "256, got the quoted string \"4\" (write numbers without "
                                      "quotes)");
    expect_errors("workers: -1\n",
                  "t.yaml:1: workers: expected auto or a number from 1 to 256, got \"-1\"");
    expect_errors("workers: 99999999999999999999999\n",
                  "t.yaml:1: workers: 99999999999999999999999 is too large (at most 256)");
    expect_errors("workers: [1]\n",
                  "t.yaml:1: workers: expected auto or a number from 1 to 256, got a list");
    expect_error_with("workers: 0x10\n", "got \"0x10\"");
    expect_error_with("workers: 4.0\n", "got \"4.0\"");
}

static void test_sizes(void **state) {
    (void)state;
    static const struct {
        const char *text;
        size_t bytes;
    } good[] = {
        {"1MiB", MiB},        {"256MiB", 256 * MiB},    {"1GiB", 1024 * MiB},
        {"1024KiB", MiB},     {"1048576", MiB},         {"2097152B", 2 * MiB},
        {"1 TiB", MiB << 20}, {"\"64 MiB\"", 64 * MiB}, {"1048577", MiB + 1},
    };
    char text[128];
    for (size_t i = 0; i < COUNT(good); i++) {
        snprintf(text, sizeof text, "store:\n  max_memory: %s\n", good[i].text);
        sl__config *c = parse_ok(text);
        assert_int_equal(c->max_memory, good[i].bytes);
        sl__config_free(c);
    }
    expect_errors("store:\n  max_memory: 256MB\n",
                  "t.yaml:2: store.max_memory: cannot parse \"256MB\" (expected a size such as "
                  "64KiB, 256MiB, 1GiB or a number of bytes; units are 1024-based: KiB, MiB, "
                  "GiB, TiB)");
    expect_errors("store:\n  max_memory: 64KiB\n",
                  "t.yaml:2: store.max_memory: \"64KiB\" is out of range (1MiB to 1TiB)");
    expect_errors("store:\n  max_memory: 2TiB\n",
                  "t.yaml:2: store.max_memory: \"2TiB\" is out of range (1MiB to 1TiB)");
    expect_errors("store:\n  max_memory: 99999999999999999999\n",
                  "t.yaml:2: store.max_memory: \"99999999999999999999\" is too large");
    expect_errors("store:\n  max_memory: 99999999999TiB\n",
                  "t.yaml:2: store.max_memory: \"99999999999TiB\" is too large");
    expect_error_with("store:\n  max_memory: MiB\n", "cannot parse \"MiB\"");
    expect_error_with("store:\n  max_memory: 1.5GiB\n", "cannot parse \"1.5GiB\"");
    expect_error_with("store:\n  max_memory: -1\n", "cannot parse \"-1\"");
    expect_error_with("store:\n  max_memory: 1mib\n", "cannot parse \"1mib\"");
    expect_error_with("store:\n  max_memory: {a: 1}\n", "got a mapping");
}

static void test_limits(void **state) {
    (void)state;
    sl__config *c = parse_ok("limits:\n"
                             "  max_header_bytes: 1KiB\n"
                             "  max_body_bytes: 16MiB\n"
                             "  max_resp_frame: 2048\n"
                             "  max_connections: 1000000\n"
                             "  idle_timeout: 1ms\n"
                             "  header_timeout: 1h\n");
    assert_int_equal(c->limits.max_header_bytes, KiB);
    assert_int_equal(c->limits.max_body_bytes, 16 * MiB);
    assert_int_equal(c->limits.max_resp_frame, 2048);
    assert_int_equal(c->limits.max_connections, 1000000);
    assert_int_equal(c->limits.idle_timeout, MS);
    assert_int_equal(c->limits.header_timeout, 3600 * SEC);
    sl__config_free(c);

    c = parse_ok("limits:\n  idle_timeout: 1d\n  header_timeout: 250ms\n");
    assert_int_equal(c->limits.idle_timeout, 86400 * SEC);
    assert_int_equal(c->limits.header_timeout, 250 * MS);
    assert_int_equal(c->limits.max_header_bytes, 8 * KiB); /* the others keep their default */
    sl__config_free(c);

    expect_errors("limits:\n"
                  "  max_header_bytes: 100\n"
                  "  max_body_bytes: 17MiB\n"
                  "  max_resp_frame: 1023\n"
                  "  max_connections: 0\n"
                  "  idle_timeout: 60\n"
                  "  header_timeout: 2h\n"
                  "  idle_timeout: 1s\n"
                  "  max_sockets: 5\n",
                  "t.yaml:2: limits.max_header_bytes: \"100\" is out of range (1KiB to 1MiB)",
                  "t.yaml:3: limits.max_body_bytes: \"17MiB\" is out of range (1KiB to 16MiB)",
                  "t.yaml:4: limits.max_resp_frame: \"1023\" is out of range (1KiB to 16MiB)",
                  "t.yaml:5: limits.max_connections: 0 is out of range (1 to 1000000)",
                  "t.yaml:6: limits.idle_timeout: cannot parse \"60\" (expected a number and a "
                  "unit: ns, us, ms, s, m, h or d, such as 10s or 500ms)",
                  "t.yaml:7: limits.header_timeout: \"2h\" is out of range (1ms to 1h)",
                  "t.yaml:8: limits.idle_timeout: duplicate key (first at line 6)",
                  "t.yaml:9: limits.max_sockets: unknown key (expected max_header_bytes, "
                  "max_body_bytes, max_resp_frame, max_connections, idle_timeout, "
                  "header_timeout, command_timeout, max_pending_output, "
                  "max_pending_output_total, drain_timeout or max_held)");
    c = parse_ok("limits:\n  command_timeout: 2s\n  max_pending_output: 256KiB\n"
                 "  max_pending_output_total: 8MiB\n  drain_timeout: 2m\n  max_held: 5\n");
    assert_int_equal(c->limits.max_held, 5);
    assert_int_equal(c->limits.command_timeout, 2 * SEC);
    assert_int_equal(c->limits.drain_timeout, 120 * SEC);
    assert_int_equal(c->limits.max_pending_output, 256 * KiB);
    assert_int_equal(c->limits.max_pending_output_total, 8 * MiB);
    sl__config_free(c);
    expect_errors("limits:\n  command_timeout: 2h\n  max_pending_output: 1KiB\n"
                  "  max_pending_output_total: 1KiB\n",
                  "t.yaml:2: limits.command_timeout: \"2h\" is out of range (1ms to 1h)",
                  "t.yaml:3: limits.max_pending_output: \"1KiB\" is out of range (4KiB to 1GiB)",
                  "t.yaml:4: limits.max_pending_output_total: \"1KiB\" is out of range (1MiB "
                  "to 1TiB)");
    expect_errors("limits:\n  idle_timeout: 999us\n",
                  "t.yaml:2: limits.idle_timeout: \"999us\" is out of range (1ms to 1d)");
    expect_errors("limits:\n  idle_timeout: 99999999999999999999s\n",
                  "t.yaml:2: limits.idle_timeout: \"99999999999999999999s\" is too large");
    expect_error_with("limits:\n  idle_timeout: 10 s\n", "cannot parse \"10 s\"");
    expect_error_with("limits: [1, 2]\n", "limits: expected a mapping");
}

static void test_log_level_and_store(void **state) {
    (void)state;
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    char text[64];
    for (size_t i = 0; i < COUNT(levels); i++) {
        snprintf(text, sizeof text, "log_level: %s\n", levels[i]);
        sl__config *c = parse_ok(text);
        assert_int_equal(c->log_level, (int)i); /* levels is in sl__log_level order */
        sl__config_free(c);
    }
    expect_errors("log_level: verbose\n", "t.yaml:1: log_level: unknown log level \"verbose\" "
                                          "(expected error, warn, info or debug)");
    expect_errors("log_level: warning\n",
                  "t.yaml:1: log_level: unknown log level \"warning\" (did you mean warn?)");

    sl__config *c = parse_ok("store:\n  type: memory\n");
    assert_int_equal(c->store_type, SL__STORE_MEMORY);
    sl__config_free(c);
    c = parse_ok("store:\n  type: redis\n");
    assert_int_equal(c->store_type, SL__STORE_REDIS);
    assert_string_equal(c->redis.addr.host, "127.0.0.1"); /* the defaults */
    assert_int_equal(c->redis.addr.port, 6379);
    assert_int_equal(c->redis.timeout, 250 * 1000000); /* holds on a loaded machine */
    assert_int_equal(c->redis.breaker_failures, 5);
    assert_int_equal(c->redis.breaker_window, 500 * 1000000);
    assert_int_equal(c->redis.breaker_cooldown, 1000000000);
    assert_int_equal(c->redis.on_failure, SL__FAIL_LOCAL);
    assert_int_equal(c->redis.expected_instances, 1);
    assert_false(c->redis.batched);
    assert_string_equal(c->redis.prefix, "sluice:");
    sl__config_free(c);
    expect_errors("store:\n  type: memcached\n",
                  "t.yaml:2: store.type: unknown store type \"memcached\" (expected memory or "
                  "redis)");
}

static void test_booleans_and_enums(void **state) {
    (void)state;
    char text[512];
    sl__config *c = parse_ok(one_policy(text, sizeof text,
                                        "    algorithm: gcra\n    rate: 5/s\n    burst: 5\n"
                                        "    count_rejected: true\n    shadow: true\n"
                                        "    start: empty\n    on_failure: local\n"));
    const sl__policy_config *p = &c->policies[0];
    assert_int_equal(p->params.flags, SL_COUNT_REJECTED | SL_START_EMPTY);
    assert_int_equal(p->params.origin, 0);
    assert_true(p->shadow);
    assert_int_equal(p->on_failure, SL__FAIL_SET_LOCAL);
    sl__config_free(c);

    c = parse_ok(one_policy(text, sizeof text,
                            "    algorithm: gcra\n    rate: 5/s\n    burst: 5\n"
                            "    count_rejected: false\n    shadow: false\n    start: full\n"));
    p = &c->policies[0];
    assert_int_equal(p->params.flags, 0);
    assert_false(p->shadow);
    assert_int_equal(p->on_failure, SL__FAIL_INHERIT);
    sl__config_free(c);

    static const char *const not_bools[] = {"yes", "no", "on", "off", "True", "1", "y"};
    for (size_t i = 0; i < COUNT(not_bools); i++) {
        char body[128], want[128];
        snprintf(body, sizeof body,
                 "    algorithm: gcra\n    rate: 5/s\n    burst: 5\n"
                 "    shadow: %s\n",
                 not_bools[i]);
        snprintf(want, sizeof want,
                 "t.yaml:6: policies[0].shadow: expected true or false, got \"%s\"", not_bools[i]);
        expect_errors(one_policy(text, sizeof text, body), want);
    }
    expect_errors(one_policy(text, sizeof text,
                             "    algorithm: gcra\n    rate: 5/s\n    burst: 5\n"
                             "    count_rejected: \"true\"\n"),
                  "t.yaml:6: policies[0].count_rejected: expected true or false, got \"true\" "
                  "(write booleans without quotes)");
    expect_errors(one_policy(text, sizeof text,
                             "    algorithm: gcra\n    rate: 5/s\n    burst: 5\n"
                             "    start: emtpy\n    on_failure: fail\n"),
                  "t.yaml:6: policies[0].start: unknown start \"emtpy\" (did you mean empty?)",
                  "t.yaml:7: policies[0].on_failure: unknown failure mode \"fail\" (expected "
                  "open, closed or local)");
}

/* ---- policies ------------------------------------------------------------------- */

static void test_policy_algorithms_and_rates(void **state) {
    (void)state;
    static const struct {
        const char *alg, *rate;
        sl_algorithm want;
        int64_t limit, period;
    } cases[] = {
        {"fixed_window", "1000/d", SL_FIXED_WINDOW, 1000, 86400 * SEC},
        {"sliding_log", "5/m", SL_SLIDING_LOG, 5, 60 * SEC},
        {"sliding_window", "100/10s", SL_SLIDING_WINDOW, 100, 10 * SEC},
        {"token_bucket", "3/500ms", SL_TOKEN_BUCKET, 3, 500 * MS},
        {"gcra", "1000/h", SL_GCRA, 1000, 3600 * SEC},
        {"leaky_queue", "7/us", SL_LEAKY_QUEUE, 7, 1000},
    };
    char text[512], body[256];
    for (size_t i = 0; i < COUNT(cases); i++) {
        snprintf(body, sizeof body, "    algorithm: %s\n    rate: %s\n    burst: 9\n", cases[i].alg,
                 cases[i].rate);
        sl__config *c = parse_ok(one_policy(text, sizeof text, body));
        const sl__policy_config *p = &c->policies[0];
        assert_string_equal(p->name, "p");
        assert_int_equal(p->line, 2);
        assert_int_equal(p->params.algorithm, cases[i].want);
        assert_int_equal(p->params.rate.limit, cases[i].limit);
        assert_int_equal(p->params.rate.period, cases[i].period);
        bool bucket = cases[i].want >= SL_TOKEN_BUCKET;
        assert_int_equal(p->params.burst, bucket ? 9 : 0); /* windows ignore a burst */
        sl__config_free(c);
    }

    /* The example of docs/configuration.md ("Checking a config"), verbatim. */
    expect_errors("listen:\n"
                  "  http: 127.0.0.1:8080\n"
                  "store:\n"
                  "  type: memory\n"
                  "  max_memory: 256MB\n"
                  "policies:\n"
                  "  - name: api\n"
                  "    algorithm: token_bucket\n"
                  "    rate: 5/s\n"
                  "    burst: 5\n"
                  "  - name: login\n"
                  "    algoritm: sliding_log\n"
                  "    rate: 5/x\n",
                  "t.yaml:5: store.max_memory: cannot parse \"256MB\" (expected a size such as "
                  "64KiB, 256MiB, 1GiB or a number of bytes; units are 1024-based: KiB, MiB, "
                  "GiB, TiB)",
                  "t.yaml:11: policies[1].algorithm: missing (every policy needs an algorithm)",
                  "t.yaml:12: policies[1].algoritm: unknown key (did you mean algorithm?)",
                  "t.yaml:13: policies[1].rate: cannot parse \"5/x\" (expected N/s, N/m, N/h, N/d "
                  "or N/<duration> such as 100/10s)");
    expect_errors(one_policy(text, sizeof text, "    algorithm: tokenbucket\n    rate: 5/s\n"),
                  "t.yaml:3: policies[0].algorithm: unknown algorithm \"tokenbucket\" (did you "
                  "mean token_bucket?)");
    expect_errors(one_policy(text, sizeof text, "    algorithm: leaky_bucket\n    rate: 5/s\n"),
                  "t.yaml:3: policies[0].algorithm: unknown algorithm \"leaky_bucket\" (did you "
                  "mean gcra (the leaky bucket as a meter) or leaky_queue (as a queue)?)");
    expect_errors(one_policy(text, sizeof text, "    algorithm: fixed\n    rate: 5/s\n"),
                  "t.yaml:3: policies[0].algorithm: unknown algorithm \"fixed\" (did you mean "
                  "fixed_window?)");
    expect_errors(one_policy(text, sizeof text, "    algorithm: redis_cell\n    rate: 5/s\n"),
                  "t.yaml:3: policies[0].algorithm: unknown algorithm \"redis_cell\" (expected "
                  "fixed_window, sliding_log, sliding_window, token_bucket, gcra, leaky_queue or "
                  "concurrency)");
    expect_errors(
        one_policy(text, sizeof text, "    algorithm: gcra\n    rate: 0/s\n    burst: 1\n"),
        "t.yaml:4: policies[0].rate: \"0/s\": rate must have a positive limit and a "
        "positive period");
    expect_errors(one_policy(text, sizeof text,
                             "    algorithm: gcra\n    rate: 99999999999999999999/s\n"
                             "    burst: 1\n"),
                  "t.yaml:4: policies[0].rate: \"99999999999999999999/s\": a number is too large");
    expect_error_with(
        one_policy(text, sizeof text, "    algorithm: gcra\n    rate: 5\n    burst: 1\n"),
        "cannot parse \"5\"");
    expect_error_with(
        one_policy(text, sizeof text, "    algorithm: gcra\n    rate: 5 / s\n    burst: 1\n"),
        "cannot parse \"5 / s\"");
}

/* hold: and hold_per_tenant: (held /v1/auth answers): leaky_queue only. */
static void test_policy_hold(void **state) {
    (void)state;
    char text[512];
    sl__config *c = parse_ok(one_policy(text, sizeof text,
                                        "    algorithm: leaky_queue\n    rate: 5/s\n    burst: 20\n"
                                        "    hold: 1500ms\n    hold_per_tenant: 6\n"));
    assert_i64(c->policies[0].hold, 1500 * MS);
    assert_i64(c->policies[0].hold_per_tenant, 6);
    assert_int_equal(c->limits.max_held, 1000); /* the default */
    sl__config_free(c);
    c = parse_ok(one_policy(text, sizeof text,
                            "    algorithm: leaky_queue\n    rate: 5/s\n    burst: 20\n"));
    assert_i64(c->policies[0].hold, 0); /* never held unless asked */
    sl__config_free(c);
    expect_errors(one_policy(text, sizeof text,
                             "    algorithm: gcra\n    rate: 5/s\n    burst: 20\n    hold: 1s\n"),
                  "t.yaml:6: policies[0].hold: only a leaky_queue holds answers until their "
                  "release time (nginx's burst=B without nodelay is leaky_queue, burst B+1, "
                  "hold: ...)");
    expect_errors(one_policy(text, sizeof text,
                             "    algorithm: leaky_queue\n    rate: 5/s\n    burst: 20\n"
                             "    hold_per_tenant: 3\n"),
                  "t.yaml:6: policies[0].hold_per_tenant: only a policy with hold: holds "
                  "answers (hold: 5s, the longest wait)");
    expect_errors(one_policy(text, sizeof text,
                             "    algorithm: leaky_queue\n    rate: 5/s\n    burst: 20\n"
                             "    hold: 2m\n    hold_per_tenant: 0\n"),
                  "t.yaml:6: policies[0].hold: \"2m\" is out of range (1ms to 1m)",
                  "t.yaml:7: policies[0].hold_per_tenant: 0 is out of range (1 to 1000000)");
    expect_errors("limits:\n  max_held: 0\n",
                  "t.yaml:2: limits.max_held: 0 is out of range (1 to 1000000)");

    /* hold_weights: tier names (declared after the policies is fine) to weights */
    c = parse_ok("policies:\n  - name: p\n    algorithm: leaky_queue\n    rate: 5/s\n"
                 "    burst: 20\n    hold: 1s\n    hold_weights: {pro: 4, free: 1}\n"
                 "tiers:\n  free:\n  pro:\n");
    assert_int_equal(c->policies[0].nhold_weights, 2);
    assert_string_equal(c->policies[0].hold_weights[0].tier, "pro");
    assert_int_equal(c->policies[0].hold_weights[0].weight, 4);
    assert_int_equal(c->policies[0].hold_weights[1].weight, 1);
    sl__config_free(c);
    expect_errors("policies:\n  - name: p\n    algorithm: leaky_queue\n    rate: 5/s\n"
                  "    burst: 20\n    hold: 1s\n"
                  "    hold_weights: {gold: 2, pro: 3, pro: 5, free: 0}\ntiers:\n  pro:\n"
                  "  free:\n",
                  "t.yaml:7: policies[0].hold_weights.pro: duplicate tier (first at line 7)",
                  "t.yaml:7: policies[0].hold_weights.free: 0 is out of range (1 to 1048576)",
                  "t.yaml:7: policies.p.hold_weights.gold: no tier named \"gold\" (declare it "
                  "under tiers:)");
    expect_errors(one_policy(text, sizeof text,
                             "    algorithm: leaky_queue\n    rate: 5/s\n    burst: 20\n"
                             "    hold_weights: {pro: 2}\n"),
                  "t.yaml:6: policies[0].hold_weights: only a policy with hold: holds "
                  "answers (hold: 5s, the longest wait)");
    expect_errors(one_policy(text, sizeof text,
                             "    algorithm: leaky_queue\n    rate: 5/s\n    burst: 20\n"
                             "    hold: 1s\n    hold_weights: [pro]\n"),
                  "t.yaml:7: policies[0].hold_weights: expected a mapping of tier names to "
                  "weights (pro: 4), got a list");
}

static void test_policy_required_and_validated(void **state) {
    (void)state;
    char text[512];
    expect_errors("policies:\n  - shadow: true\n",
                  "t.yaml:2: policies[0].name: missing (every policy needs a name)",
                  "t.yaml:2: policies[0].algorithm: missing (every policy needs an algorithm)",
                  "t.yaml:2: policies[0].rate: missing (every policy needs a rate such as 5/s)");
    expect_errors(one_policy(text, sizeof text, "    algorithm: token_bucket\n    rate: 5/s\n"),
                  "t.yaml:2: policies[0].burst: missing (token_bucket needs a burst: the bucket "
                  "size)");
    expect_errors(one_policy(text, sizeof text, "    algorithm: leaky_queue\n    rate: 5/s\n"),
                  "t.yaml:2: policies[0].burst: missing (leaky_queue needs a burst: how many "
                  "requests may wait)");
    expect_errors(
        one_policy(text, sizeof text, "    algorithm: gcra\n    rate: 5/s\n    burst: 0\n"),
        "t.yaml:5: policies[0].burst: 0 is too small (at least 1)");
    expect_errors(
        one_policy(text, sizeof text, "    algorithm: gcra\n    rate: 5/s\n    burst: many\n"),
        "t.yaml:5: policies[0].burst: expected a whole number of requests, got "
        "\"many\"");
    /* sl_params_validate's verdicts, blamed on the right key. */
    expect_errors(one_policy(text, sizeof text, "    algorithm: sliding_log\n    rate: 100001/h\n"),
                  "t.yaml:4: policies[0].rate: 100001/h: a sliding_log keeps every request of its "
                  "period, at most 100000 (use sliding_window for larger limits)");
    expect_errors(one_policy(text, sizeof text,
                             "    algorithm: token_bucket\n    rate: 7/d\n"
                             "    burst: 1000000000000\n"),
                  "t.yaml:5: policies[0].burst: 1000000000000 with rate 7/d: parameters too large "
                  "for exact 64-bit arithmetic (use a smaller burst, or a period that shares "
                  "factors with the limit)");
    expect_errors(
        one_policy(text, sizeof text, "    algorithm: fixed_window\n    rate: 1/36601d\n"),
        "t.yaml:4: policies[0].rate: 1/36601d: parameters too large for exact 64-bit "
        "arithmetic (at most 2^61 per period of at most 36600d)");
    /* A window with a huge burst: ignored, so accepted. */
    sl__config_free(parse_ok(one_policy(text, sizeof text,
                                        "    algorithm: sliding_window\n    rate: 5/s\n"
                                        "    burst: 9223372036854775807\n")));
    /* An error in a field does not cascade into a validation error. */
    expect_errors(one_policy(text, sizeof text,
                             "    algorithm: sliding_log\n    rate: 100001/h\n    shadow: 1\n"),
                  "t.yaml:5: policies[0].shadow: expected true or false, got \"1\"");
}

static void test_policy_names(void **state) {
    (void)state;
    sl__config *c = parse_ok("policies:\n"
                             "  - {name: a.b-c_9, algorithm: fixed_window, rate: 1/s}\n"
                             "  - {name: \"123\", algorithm: fixed_window, rate: 1/s}\n"
                             "  - {name: 0123456789012345678901234567890123456789012345678901234567"
                             "89012, algorithm: fixed_window, rate: 1/s}\n");
    assert_string_equal(c->policies[0].name, "a.b-c_9");
    assert_string_equal(c->policies[1].name, "123");
    assert_int_equal(strlen(c->policies[2].name), SL__POLICY_NAME_MAX);
    sl__config_free(c);

    expect_errors("policies:\n"
                  "  - name: api\n"
                  "    algorithm: gcra\n"
                  "    rate: 5/s\n"
                  "    burst: 5\n"
                  "  - name: api\n"
                  "    algorithm: fixed_window\n"
                  "    rate: 5/s\n",
                  "t.yaml:6: policies[1].name: duplicate policy name \"api\" (first at line 2)");
    expect_errors("policies:\n  - {name: API, algorithm: fixed_window, rate: 1/s}\n",
                  "t.yaml:2: policies[0].name: \"API\": a name uses only lower-case letters, "
                  "digits, _ . and -");
    expect_errors("policies:\n  - {name: a b, algorithm: fixed_window, rate: 1/s}\n",
                  "t.yaml:2: policies[0].name: \"a b\": a name uses only lower-case letters, "
                  "digits, _ . and -");
    expect_errors("policies:\n  - {name: \"\", algorithm: fixed_window, rate: 1/s}\n",
                  "t.yaml:2: policies[0].name: the name is empty");
    expect_errors("policies:\n  - {name: 01234567890123456789012345678901234567890123456789012345"
                  "678901234, algorithm: fixed_window, rate: 1/s}\n",
                  "t.yaml:2: policies[0].name: \"0123456789012345678901234567890123456789...\" is "
                  "longer than 63 characters");
    expect_errors("policies:\n  - {name: \"caf\xc3\xa9\", algorithm: fixed_window, rate: 1/s}\n",
                  "t.yaml:2: policies[0].name: \"caf\\xc3\\xa9\": a name uses only lower-case "
                  "letters, digits, _ . and -");
    expect_errors("policies:\n  - {name: \"a\\0b\", algorithm: fixed_window, rate: 1/s}\n",
                  "t.yaml:2: policies[0].name: expected a name such as api ([a-z0-9_.-]+), got a "
                  "string with a NUL byte");
}

static void test_policy_shapes(void **state) {
    (void)state;
    expect_errors("policies:\n  api:\n    rate: 5/s\n",
                  "t.yaml:2: policies: expected a list of policies (- name: ...), got a mapping");
    expect_errors("policies:\n  - api\n  - [1]\n",
                  "t.yaml:2: policies[0]: expected a policy (a mapping of name, algorithm, rate, "
                  "...), got \"api\"",
                  "t.yaml:3: policies[1]: expected a policy (a mapping of name, algorithm, rate, "
                  "...), got a list");
    expect_errors("policies:\n  - name: [a]\n    algorithm: {x: 1}\n    rate: 5/s\n",
                  "t.yaml:2: policies[0].name: expected a name such as api ([a-z0-9_.-]+), got a "
                  "list",
                  "t.yaml:3: policies[0].algorithm: expected fixed_window, sliding_log, "
                  "sliding_window, token_bucket, gcra, leaky_queue or concurrency, got a mapping");
    sl__config *c = parse_ok("policies: []\n");
    assert_int_equal(c->npolicies, 0);
    sl__config_free(c);
}

/* ---- keys ------------------------------------------------------------------------ */

static void test_unknown_keys(void **state) {
    (void)state;
    expect_errors(
        "listen:\n"
        "  htp: 127.0.0.1:1\n"
        "store:\n"
        "  maxmemory: 1GiB\n"
        "  redis:\n"
        "    urll: redis://x\n"
        "policies:\n"
        "  - name: a\n"
        "    algoritm: gcra\n"
        "Policies: []\n"
        "frobnicate: 1\n"
        "max_memory: 1GiB\n"
        "rate: 5/s\n",
        "t.yaml:2: listen.htp: unknown key (did you mean http?)",
        "t.yaml:4: store.maxmemory: unknown key (did you mean max_memory?)",
        "t.yaml:6: store.redis.urll: unknown key (did you mean url?)",
        "t.yaml:8: policies[0].algorithm: missing (every policy needs an algorithm)",
        "t.yaml:8: policies[0].rate: missing (every policy needs a rate such as 5/s)",
        "t.yaml:9: policies[0].algoritm: unknown key (did you mean algorithm?)",
        "t.yaml:10: Policies: unknown key (did you mean policies?)",
        "t.yaml:11: frobnicate: unknown key (expected "
        "listen, workers, store, domains, policies, limits, log_level, identity, tiers, "
        "quotas, costs, exempt, rules, shadow, admin, quota_mode, charge_refused_hits or shedding)",
        "t.yaml:12: max_memory: unknown key here (max_memory belongs under store)",
        "t.yaml:13: rate: unknown key here (rate belongs in a policy (policies: - "
        "name: ...))");
    expect_errors("store:\n  workers: 2\n",
                  "t.yaml:2: store.workers: unknown key here (workers belongs at the top level)");
    expect_errors("listen:\n  ? [a]\n  : 1\n",
                  "t.yaml:2: listen: a key must be a plain word, got a list");
    expect_errors(
        "base: &b {x: 1}\n<<: *b\n",
        "t.yaml:1: base: unknown key (expected "
        "listen, workers, store, domains, policies, limits, log_level, identity, tiers, "
        "quotas, costs, exempt, rules, shadow, admin, quota_mode, charge_refused_hits or shedding)",
        "t.yaml:2: <<: YAML merge keys (<<) are not supported");
    expect_errors("\"a\\x01b\": 1\n",
                  "t.yaml:1: a?b: unknown key (expected "
                  "listen, workers, store, domains, policies, limits, log_level, identity, tiers, "
                  "quotas, costs, exempt, rules, shadow, admin, quota_mode, charge_refused_hits or "
                  "shedding)");
}

static void test_duplicate_keys(void **state) {
    (void)state;
    expect_errors("workers: 2\nworkers: 3\n", "t.yaml:2: workers: duplicate key (first at line 1)");
    expect_errors(
        "policies:\n  - name: a\n    name: b\n    algorithm: fixed_window\n    rate: 1/s\n",
        "t.yaml:3: policies[0].name: duplicate key (first at line 2)");
    expect_errors("listen:\nlisten:\n", "t.yaml:2: listen: duplicate key (first at line 1)");
}

static void test_not_supported_yet(void **state) {
    (void)state;
    /* domains: now loads envoyproxy/ratelimit rule files (tests/unit/test_domains.c) */
    expect_errors("domains: no-such-rules/\n",
                  "t.yaml:1: domains: no-such-rules/: cannot open: No such file or directory");
}

static void test_redis_store(void **state) {
    (void)state;
    sl__config *c = parse_ok("store:\n"
                             "  type: redis\n"
                             "  redis:\n"
                             "    url: redis://:s3cret@10.1.2.3:6380/2\n"
                             "    timeout: 7ms\n"
                             "    on_failure: closed\n"
                             "    expected_instances: 4\n"
                             "    sync: batched\n"
                             "    sync_interval: 250ms\n"
                             "    prefix: \"rl:\"\n"
                             "    breaker_failures: 3\n"
                             "    breaker_cooldown: 2s\n"
                             "    breaker_window: 2500ms\n"
                             "    deny_cache: 0\n");
    assert_string_equal(c->redis.addr.host, "10.1.2.3");
    assert_int_equal(c->redis.addr.port, 6380);
    assert_int_equal(c->redis.db, 2);
    assert_string_equal(c->redis.user, "");
    assert_string_equal(c->redis.password, "s3cret");
    assert_int_equal(c->redis.timeout, 7 * 1000000);
    assert_int_equal(c->redis.on_failure, SL__FAIL_CLOSED);
    assert_int_equal(c->redis.expected_instances, 4);
    assert_true(c->redis.batched);
    assert_int_equal(c->redis.sync_interval, 250 * 1000000);
    assert_string_equal(c->redis.prefix, "rl:");
    assert_int_equal(c->redis.breaker_failures, 3);
    assert_int_equal(c->redis.breaker_cooldown, 2000000000);
    assert_int_equal(c->redis.breaker_window, 2500 * INT64_C(1000000));
    assert_int_equal(c->redis.deny_cache, 0);
    sl__config_free(c);
    c = parse_ok("store:\n  type: redis\n  redis:\n"
                 "    cluster: [127.0.0.1:7000, \"redis-2:7001\", \"[::1]:7002\"]\n");
    assert_true(c->redis.cluster);
    assert_int_equal(c->redis.nseeds, 3);
    assert_string_equal(c->redis.seeds[1].host, "redis-2");
    assert_int_equal(c->redis.seeds[1].port, 7001);
    assert_string_equal(c->redis.seeds[2].host, "::1");
    sl__config_free(c);
    c = parse_ok("store:\n  redis:\n    url: unix:///run/redis.sock\n");
    assert_string_equal(c->redis.unix_path, "/run/redis.sock");
    sl__config_free(c);
    expect_errors("store:\n"
                  "  redis:\n"
                  "    url: redis://a:1\n"
                  "    cluster: [a:1]\n",
                  "t.yaml:2: store.redis: give either url (one Redis) or cluster (seed nodes), not "
                  "both");
    expect_errors("store:\n  redis:\n    url: rediss://a:1\n",
                  "t.yaml:3: store.redis.url: cannot use \"rediss://a:1\": TLS (rediss://) is not "
                  "supported: hiredis 0.14's async API has no TLS; use a local TLS tunnel and "
                  "redis://");
    expect_errors("store:\n  redis:\n    prefix: \"a{b\"\n",
                  "t.yaml:3: store.redis.prefix: must not contain { or } (the key's hash tag "
                  "follows it)");
    /* The section's keys are checked. */
    expect_errors("store:\n"
                  "  redis:\n"
                  "    url: http://x\n"
                  "    timeout: 5\n"
                  "    on_failure: opne\n"
                  "    expected_instances: 0\n"
                  "    sync: fast\n"
                  "    cluster: [x]\n",
                  "t.yaml:2: store.redis: give either url (one Redis) or cluster (seed nodes), not "
                  "both",
                  "t.yaml:2: store.redis.cluster: give at least one seed node",
                  "t.yaml:3: store.redis.url: cannot use \"http://x\": expected "
                  "redis://host:port/db or unix://path",
                  "t.yaml:4: store.redis.timeout: cannot parse \"5\" (expected a number and a "
                  "unit: ns, us, ms, s, m, h or d, such as 10s or 500ms)",
                  "t.yaml:5: store.redis.on_failure: unknown failure mode \"opne\" (did you mean "
                  "open?)",
                  "t.yaml:6: store.redis.expected_instances: 0 is out of range (1 to 1024)",
                  "t.yaml:7: store.redis.sync: unknown sync mode \"fast\" (expected exact or "
                  "batched)",
                  "t.yaml:8: store.redis.cluster[0]: expected host:port");
    /* An empty section is an absent one. */
    sl__config_free(parse_ok("store:\n  redis:\n"));
    /* Limits the script cannot decide exactly are refused with the Redis store only. */
    const char *odd = "policies:\n  - {name: a, algorithm: gcra, rate: 3/1500ns, burst: 2}\n";
    sl__config_free(parse_ok(odd));
    char text[256];
    snprintf(text, sizeof text, "store:\n  type: redis\n%s", odd);
    expect_errors(text, "t.yaml:4: policy a: the Redis store decides in whole microseconds: the "
                        "period must be a whole number of microseconds");
    /* So are tier variants, by the same check that startup and a reload run
       (issue 12: check-config said ok, startup refused). */
    const char *tier =
        "store:\n  type: redis\npolicies:\n  - {name: a, algorithm: gcra, rate: 3/s, "
        "burst: 2}\ntiers:\n  pro:\n    a: {rate: 3/1500ns}\n";
    expect_errors(tier, "t.yaml:7: tiers.pro.a (policy a:pro): the Redis store decides in whole "
                        "microseconds: the period must be a whole number of microseconds");
    /* A reload onto a running Redis store checks a memory config again. */
    sl__config *m = parse_ok(strstr(tier, "policies:"));
    static sl__config_errors e;
    e.n = 0;
    assert_int_equal(sl__config_check_store(m, &e), 0);
    m->store_type = SL__STORE_REDIS;
    assert_int_equal(sl__config_check_store(m, &e), -1);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.msg[0], "t.yaml:5: tiers.pro.a (policy a:pro): the Redis store decides "
                                  "in whole microseconds: the period must be a whole number of "
                                  "microseconds");
    sl__policy_config v;
    assert_int_equal(sl__config_tier_variant(m, &m->tiers[0], &m->tiers[0].overrides[0], &v), 0);
    assert_string_equal(v.name, "a:pro");
    assert_int_equal(v.params.rate.period, 1500);
    assert_int_equal(v.params.burst, 2);
    sl__config_free(m);
}

/* ---- the document ---------------------------------------------------------------- */

static void test_document_shape(void **state) {
    (void)state;
    const char *empty = "the config is empty (expected a mapping of listen, store, policies, ...)";
    char want[160];
    snprintf(want, sizeof want, "t.yaml:1: %s", empty);
    expect_errors("", want);
    expect_errors("# nothing but a comment\n", want);
    expect_errors("---\n", want);
    expect_errors("- a\n- b\n",
                  "t.yaml:1: expected a mapping of listen, store, policies, ... at the top, got a "
                  "list");
    expect_errors("just words\n", "t.yaml:1: expected a mapping of listen, store, policies, ... at "
                                  "the top, got \"just words\"");
    expect_errors("workers: 2\n---\nworkers: 3\n",
                  "t.yaml:2: only one YAML document is allowed (remove the second ---)");
    expect_errors("workers: *a\n", "t.yaml:1: workers: expected auto or a number from 1 to 256, "
                                   "got an alias (aliases are not supported)");
    expect_errors("workers: &a 2\nlog_level: *a\n",
                  "t.yaml:2: log_level: expected error, warn, info or debug, got an alias "
                  "(aliases are not supported)");
    /* A byte-order mark is fine. */
    sl__config_free(parse_ok("\xef\xbb\xbfworkers: 2\n"));
}

static void test_syntax_errors(void **state) {
    (void)state;
    expect_errors("workers: 2\nlisten:\n   http: 127.0.0.1:8080\n  grpc: off\n",
                  "t.yaml:4: yaml: did not find expected key at column 3 (while parsing a block "
                  "mapping at line 1)");
    expect_errors("workers: 2\nstore: {type: memory\n",
                  "t.yaml:3: yaml: did not find expected ',' or '}' at column 1 (while parsing a "
                  "flow mapping at line 2)");
    expect_errors("workers: 2\n\tlisten: {}\n",
                  "t.yaml:2: yaml: found a tab character that violates indentation at column 1 "
                  "(while scanning a plain scalar at line 1)");
    expect_errors("workers: 2\nlog_level: \"info\x01\"\n",
                  "t.yaml:2: yaml: control characters are not allowed (character 0x1 at byte 27)");
    expect_errors("workers: 2\nlog_level: \xff\n",
                  "t.yaml:2: yaml: invalid leading UTF-8 octet (character 0xff at byte 22)");
    /* Errors before the syntax error are kept, in line order. */
    expect_errors("workers: 0\nlisten:\n  http: nowhere\nlog_level: [\n",
                  "t.yaml:1: workers: 0 is out of range (1 to 256)",
                  "t.yaml:3: listen.http: cannot use \"nowhere\": expected host:port (such as "
                  "127.0.0.1:8080) or off",
                  "t.yaml:4: log_level: expected error, warn, info or debug, got a list",
                  "t.yaml:5: yaml: did not find expected node content at column 1 (while "
                  "parsing a flow node at line 5)");
}

static void test_errors_sorted_and_all_collected(void **state) {
    (void)state;
    /* The missing rate (found at the end of the policy) comes before line 4. */
    expect_errors("policies:\n  - name: a\n    algorithm: fixed_window\n    shadow: maybe\n",
                  "t.yaml:2: policies[0].rate: missing (every policy needs a rate such as 5/s)",
                  "t.yaml:4: policies[0].shadow: expected true or false, got \"maybe\"");

    /* More errors than are stored: all counted, the first ones kept. */
    size_t n = 200;
    char *text = malloc(n * 32);
    assert_non_null(text);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) o += (size_t)sprintf(text + o, "bad%zu: 1\n", i);
    sl__config *c = NULL;
    static sl__config_errors e;
    assert_int_equal(sl__config_parse(text, o, "t.yaml", &c, &e), SL_EPARSE);
    assert_null(c);
    assert_int_equal(e.n, n);
    assert_string_equal(
        e.msg[0],
        "t.yaml:1: bad0: unknown key (expected listen, workers, store, "
        "domains, policies, limits, log_level, identity, tiers, quotas, "
        "costs, exempt, rules, shadow, admin, quota_mode, charge_refused_hits or shedding)");
    assert_non_null(strstr(e.msg[SL__CONFIG_MAX_ERRORS - 1], "t.yaml:64: bad63: unknown key"));
    free(text);
}

static void test_bounds(void **state) {
    (void)state;
    sl__config *c = NULL;
    static sl__config_errors e;

    /* File size: the length is checked before anything is parsed. */
    size_t big = SL__CONFIG_MAX_BYTES + 1;
    char *text = malloc(big);
    assert_non_null(text);
    memset(text, '#', big);
    assert_int_equal(sl__config_parse(text, big, "t.yaml", &c, &e), -1);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.msg[0], "t.yaml: larger than 4194304 bytes: refused");
    /* Exactly the bound is fine (a comment: an empty config). */
    assert_int_equal(sl__config_parse(text, big - 1, "t.yaml", &c, &e), SL_EPARSE);
    assert_non_null(strstr(e.msg[0], "the config is empty"));
    free(text);

    /* Nesting. */
    char deep[256];
    int k = snprintf(deep, sizeof deep, "x: ");
    for (int i = 0; i < 40; i++) deep[k++] = '[';
    deep[k] = '\0';
    expect_errors(
        deep,
        "t.yaml:1: x: unknown key (expected "
        "listen, workers, store, domains, policies, limits, log_level, identity, tiers, "
        "quotas, costs, exempt, rules, shadow, admin, quota_mode, charge_refused_hits or shedding)",
        "t.yaml:1: mappings and lists nested more than 32 deep");

    /* Policy count. */
    size_t n = SL__CONFIG_MAX_POLICIES + 2;
    text = malloc(16 + n * 64);
    assert_non_null(text);
    size_t o = (size_t)sprintf(text, "policies:\n");
    for (size_t i = 0; i < n; i++)
        o += (size_t)sprintf(text + o, "  - {name: p%zu, algorithm: gcra, rate: 1/s, burst: 1}\n",
                             i);
    assert_int_equal(sl__config_parse(text, o, "t.yaml", &c, &e), SL_EPARSE);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.msg[0], "t.yaml:1026: policies[1024]: too many policies (at most 1024)");
    /* ... and exactly the bound loads. */
    o = (size_t)(strstr(text, "  - {name: p1024,") - text);
    assert_int_equal(sl__config_parse(text, o, "t.yaml", &c, &e), 0);
    assert_int_equal(c->npolicies, SL__CONFIG_MAX_POLICIES);
    assert_non_null(sl__config_policy(c, "p1023", 5));
    sl__config_free(c);
    free(text);

    /* Bad arguments. */
    assert_int_equal(sl__config_parse(NULL, 0, "t.yaml", &c, &e), -1);
    assert_null(c);
    assert_int_equal(e.n, 1);
    assert_int_equal(sl__config_parse("workers: 2\n", 11, "t.yaml", NULL, &e), -1);
    assert_int_equal(sl__config_parse("workers: 0\n", 11, NULL, &c, NULL), SL_EPARSE);
    assert_int_equal(sl__config_parse("workers: 2\n", 11, NULL, &c, NULL), 0);
    assert_string_equal(c->source, "<config>");
    sl__config_free(c);
    /* The length is honoured: no NUL needed, nothing read beyond. */
    assert_int_equal(sl__config_parse("workers: 2\nworkers: oops", 11, "t.yaml", &c, &e), 0);
    assert_int_equal(c->workers, 2);
    sl__config_free(c);
}

/* ---- files ------------------------------------------------------------------------- */

static void test_load_files(void **state) {
    (void)state;
    sl__config *c = NULL;
    static sl__config_errors e;
    char path[] = "/tmp/sluice-test-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "workers: 3\npolicies:\n  - name: a\n    algorithm: gcra\n    rate: 5/x\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);

    assert_int_equal(sl__config_load(path, &c, &e), SL_EPARSE);
    assert_null(c);
    char want[256];
    snprintf(want, sizeof want,
             "%s:5: policies[0].rate: cannot parse \"5/x\" (expected N/s, N/m, N/h, N/d or "
             "N/<duration> such as 100/10s)",
             path);
    assert_int_equal(e.n, 2);
    assert_string_equal(e.msg[1], want);

    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("workers: 3\n", f);
    fclose(f);
    assert_int_equal(sl__config_load(path, &c, &e), 0);
    assert_int_equal(c->workers, 3);
    assert_string_equal(c->source, path);
    sl__config_free(c);

    /* Too large, found by reading (not by trusting a size). */
    f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i <= SL__CONFIG_MAX_BYTES / 64; i++)
        fputs("# ..............................................................\n", f);
    fclose(f);
    assert_int_equal(sl__config_load(path, &c, &e), -1);
    snprintf(want, sizeof want, "%s: larger than 4194304 bytes: refused", path);
    assert_string_equal(e.msg[0], want);
    unlink(path);

    assert_int_equal(sl__config_load("/nonexistent/sluice.yaml", &c, &e), -1);
    assert_null(c);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.msg[0], "/nonexistent/sluice.yaml: cannot open: No such file or "
                                  "directory");
    assert_int_equal(sl__config_load("/tmp", &c, &e), -1);
    assert_string_equal(e.msg[0], "/tmp: cannot read: Is a directory");
    assert_int_equal(sl__config_load(NULL, &c, &e), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_loads),
        cmocka_unit_test(test_default_is_the_example),
        cmocka_unit_test(test_examples_load),
        cmocka_unit_test(test_all_algorithms_example),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_policy_lookup),
        cmocka_unit_test(test_listen),
        cmocka_unit_test(test_workers),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_log_level_and_store),
        cmocka_unit_test(test_booleans_and_enums),
        cmocka_unit_test(test_policy_algorithms_and_rates),
        cmocka_unit_test(test_policy_required_and_validated),
        cmocka_unit_test(test_policy_hold),
        cmocka_unit_test(test_policy_names),
        cmocka_unit_test(test_policy_shapes),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_not_supported_yet),
        cmocka_unit_test(test_redis_store),
        cmocka_unit_test(test_document_shape),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_errors_sorted_and_all_collected),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_load_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
