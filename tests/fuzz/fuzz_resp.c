/* fuzz_resp.c: libFuzzer target for the RESP side of sluiced: the request
 * parser and every command, on arbitrary bytes, with a real CL.THROTTLE cell
 * and no policies (SL.CHECK answers an error). Properties:
 * - the parser never claims more bytes than it has, and its arguments lie
 *   inside the command it returns;
 * - it is incremental: a proper prefix of a command needs more bytes (or is
 *   already the error the whole is), and a prefix that is an error stays one;
 * - the replies are well-formed RESP2, one per command that has arguments.
 *
 * The fuzz build compiles every library with -fsanitize=fuzzer-no-link, so
 * the RESP code linked from sluice_server is coverage-guided. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cell.h"
#include "server/resp/resp.h"
#include "sluice/sluice.h"
#include "util/buf.h"

#define MAX_FRAME 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sl__cell *fuzz_cell;

/* Skips one RESP2 reply at p; returns the end, or NULL if it is malformed. */
static const char *skip_reply(const char *p, const char *end, int depth) {
    if (p >= end || depth > 8) return NULL;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl || nl == p + 1 || nl[-1] != '\r') return NULL;
    for (const char *q = p + 1; q < nl - 1; q++)
        if (*q == '\r') return NULL; /* no stray CR inside a line */
    char type = p[0];
    if (type == '+' || type == '-') return nl + 1;
    char *e;
    long long v = strtoll(p + 1, &e, 10);
    if (e != nl - 1) return NULL;
    if (type == ':') return nl + 1;
    if (type == '$') {
        if (v == -1) return nl + 1;
        if (v < 0 || v > end - (nl + 1) - 2) return NULL;
        const char *d = nl + 1 + v;
        if (d[0] != '\r' || d[1] != '\n') return NULL;
        return d + 2;
    }
    if (type == '*') {
        if (v < 0) return NULL;
        p = nl + 1;
        for (long long i = 0; i < v; i++)
            if (!(p = skip_reply(p, end, depth + 1))) return NULL;
        return p;
    }
    return NULL;
}

static long parse_copy(const uint8_t *data, size_t k, sl__resp_command *cmd, char *err) {
    char *copy = malloc(k ? k : 1);
    if (!copy) abort();
    memcpy(copy, data, k);
    long n = sl__resp_parse(copy, k, MAX_FRAME, cmd, err, SL__RESP_ERR_MAX);
    free(copy);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fuzz_cell && sl__cell_create(1 << 20, &fuzz_cell) != 0) abort();
    /* the clock: fixed, moved by the first byte so that time passes between runs */
    int64_t now =
        INT64_C(1700000000) * SL_NS_PER_SEC + (size ? (int64_t)data[0] * 50 * SL_NS_PER_MS : 0);
    sl__resp_context ctx = {.cell = fuzz_cell, .now = now};
    const char *buf = (const char *)data;
    sl__buf out;
    sl__buf_init(&out);
    size_t off = 0, replies = 0;
    while (off < size) {
        sl__resp_command cmd;
        char err[SL__RESP_ERR_MAX] = "";
        long n = sl__resp_parse(buf + off, size - off, MAX_FRAME, &cmd, err, sizeof err);
        if ((n < 0 && n != SL_EPARSE) || n > (long)(size - off)) abort();
        if (n < 0 && !err[0]) abort();

        /* incremental: a split of this command behaves as promised */
        size_t whole = n > 0 ? (size_t)n : size - off;
        size_t k = whole > 1 ? (size_t)data[off + whole / 2] % whole : 0;
        sl__resp_command pc;
        char perr[SL__RESP_ERR_MAX] = "";
        long pn = parse_copy(data + off, k, &pc, perr);
        if (n > 0 && pn != 0) abort();         /* a proper prefix of a good command is incomplete */
        if (pn < 0 && n != SL_EPARSE) abort(); /* an error never turns good with more bytes */
        if (pn > 0) abort();                   /* k < whole: cannot be a whole command */

        if (n <= 0) break;
        if ((size_t)n > MAX_FRAME) abort();
        for (size_t i = 0; i < cmd.argc; i++)
            if (cmd.argv[i] < buf + off || cmd.argv[i] + cmd.argl[i] > buf + off + (size_t)n)
                abort();
        sl__resp_execute(&ctx, &cmd, &out);
        if (cmd.argc) replies++;
        off += (size_t)n;
    }
    if (out.failed) abort();
    size_t seen = 0;
    if (out.len) {
        const char *p = out.data, *end = out.data + out.len;
        while (p < end) {
            if (!(p = skip_reply(p, end, 0))) abort();
            seen++;
        }
    }
    if (seen != replies) abort();
    sl__buf_free(&out);
    return 0;
}
