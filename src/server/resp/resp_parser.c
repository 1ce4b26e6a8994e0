/* resp_parser.c: the RESP2 request parser (see resp.h). Zero-copy: every
 * argument points into the caller's buffer. Stateless: each call scans the
 * command from the start of the buffer; a multibulk command is walked by its
 * length lines (bulk payloads are skipped, never scanned), so a re-scan costs
 * a few bytes per argument however the command arrives. Bounded: at most
 * SL__RESP_MAX_ARGS arguments and max_frame bytes per command, and every
 * length is checked against both before the parser waits for more bytes.
 *
 * Two forms, as Redis accepts them:
 * - multibulk: "*<n>\r\n" then n times "$<len>\r\n<len bytes>\r\n". Lengths
 *   follow Redis's string2ll: digits, no sign (except "*-1"), no leading
 *   zero. Stricter than Redis: the CR of a length line and the CRLF after a
 *   bulk payload are checked (Redis skips two bytes blindly), so a client
 *   that desynchronises gets an error instead of a garbled command.
 * - inline: a line of words ending in "\n" or "\r\n" (telnet, redis-cli
 *   --pipe with plain text, redis-benchmark's PING_INLINE). Words are split
 *   on blanks; "double" and 'single' quotes group words as Redis's
 *   sdssplitargs does, but escapes inside quotes (\n, \x41, \") would need a
 *   copy and are refused: use the multibulk form for such arguments.
 *
 * "*0\r\n" and "*-1\r\n" are consumed silently (argc 0, no reply), as Redis
 * does, so a client's count of replies stays in step; so is an empty inline
 * line. Every other negative count is an error. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "server/resp/resp.h"
#include "sluice/error.h"

/* Digits in a length line: 18 keep the value below 10^18 (no overflow);
 * more is an error at once (no frame is that large). */
#define MAX_LEN_DIGITS 18

/* The result of scanning a length line ("*12\r\n", "$5\r\n"). */
enum { LINE_OK, LINE_MORE, LINE_BAD, LINE_BIG };

/* Scans the decimal length at buf[pos] (just after the '*' or '$') up to
 * its CRLF. allow_minus_one admits "-1". On LINE_OK *value is the length and
 * *next the first byte after the CRLF. A length above `cap` is LINE_BIG and
 * an invalid prefix LINE_BAD, both as soon as the digits say so, before the
 * line completes. */
static int scan_length(const char *buf, size_t len, size_t pos, bool allow_minus_one, uint64_t cap,
                       int64_t *value, size_t *next) {
    size_t i = pos;
    bool neg = false;
    if (i < len && buf[i] == '-') {
        if (!allow_minus_one) return LINE_BAD;
        neg = true;
        i++;
    }
    size_t digits_at = i;
    uint64_t v = 0;
    for (; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c < '0' || c > '9') break;
        if (i - digits_at >= MAX_LEN_DIGITS) return LINE_BAD;
        /* string2ll: no leading zero except "0" itself */
        if (i > digits_at && buf[digits_at] == '0') return LINE_BAD;
        v = v * 10 + (c - '0');
        if (!neg && v > cap) return LINE_BIG;
    }
    if (i == len) return LINE_MORE; /* more digits or the CR may follow */
    if (buf[i] != '\r' || i == digits_at) return LINE_BAD;
    if (neg && v != 1) return LINE_BAD;
    if (i + 1 == len) return LINE_MORE;
    if (buf[i + 1] != '\n') return LINE_BAD;
    *value = neg ? -(int64_t)v : (int64_t)v;
    *next = i + 2;
    return LINE_OK;
}

/* Where an error goes: the caller's buffer (NULL or errlen 0: nowhere). */
typedef struct perr {
    char *buf;
    size_t len;
} perr;

/* Writes msg to e and returns SL_EPARSE. */
static long fail(const perr *e, const char *msg) {
    if (e->buf && e->len) snprintf(e->buf, e->len, "%s", msg);
    return SL_EPARSE;
}

/* The "expected '$', got 'x'" error names the byte it got. */
static long expected_dollar(const perr *e, unsigned char c) {
    char msg[40];
    if (c >= 0x21 && c < 0x7f)
        snprintf(msg, sizeof msg, "expected '$', got '%c'", c);
    else
        snprintf(msg, sizeof msg, "expected '$', got '\\x%02x'", c);
    return fail(e, msg);
}

static long parse_multibulk(const char *buf, size_t len, size_t max_frame, sl__resp_command *cmd,
                            const perr *e) {
    int64_t n;
    size_t pos;
    switch (scan_length(buf, len, 1, true, SL__RESP_MAX_ARGS, &n, &pos)) {
    case LINE_MORE:
        if (len > max_frame) goto too_large;
        return 0;
    case LINE_BAD:
        return fail(e, "invalid multibulk length");
    case LINE_BIG:
        return fail(e, "too many arguments");
    }
    if (pos > max_frame) goto too_large;
    if (n <= 0) { /* "*0" and "*-1": nothing to run, no reply */
        cmd->argc = 0;
        return (long)pos;
    }
    for (int64_t i = 0; i < n; i++) {
        if (pos >= len) return 0;
        if (buf[pos] != '$') {
            return expected_dollar(e, (unsigned char)buf[pos]);
        }
        int64_t blen;
        size_t data;
        switch (scan_length(buf, len, pos + 1, false, max_frame, &blen, &data)) {
        case LINE_MORE:
            if (len > max_frame) goto too_large;
            return 0;
        case LINE_BAD:
            return fail(e, "invalid bulk length");
        case LINE_BIG:
            goto too_large;
        }
        /* data <= len and blen < 10^18: no overflow in the sums below */
        if (data > max_frame || (uint64_t)blen > max_frame - data ||
            max_frame - data - (size_t)blen < 2)
            goto too_large;
        size_t end = data + (size_t)blen;
        /* checked byte by byte, so a bad terminator is an error as soon as it arrives */
        if ((end < len && buf[end] != '\r') || (end + 1 < len && buf[end + 1] != '\n')) {
            return fail(e, "expected CRLF after bulk data");
        }
        if (end + 2 > len) return 0;
        cmd->argv[i] = buf + data;
        cmd->argl[i] = (size_t)blen;
        pos = end + 2;
    }
    cmd->argc = (size_t)n;
    return (long)pos;
too_large:
    return fail(e, "command too large");
}

static bool is_blank(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Splits line[0..n) into words as sdssplitargs does, without unescaping. */
static long split_inline(const char *line, size_t n, sl__resp_command *cmd, const perr *e) {
    size_t argc = 0, i = 0;
    for (;;) {
        while (i < n && is_blank((unsigned char)line[i])) i++;
        if (i == n) break;
        if (argc == SL__RESP_MAX_ARGS) {
            return fail(e, "too many arguments");
        }
        char q = line[i];
        size_t start, end;
        if (q == '"' || q == '\'') {
            start = ++i;
            while (i < n && line[i] != q) {
                if (line[i] == '\\') {
                    return fail(e, "escapes in inline commands are not supported");
                }
                i++;
            }
            /* the closing quote must be followed by a blank or the end */
            if (i == n || (i + 1 < n && !is_blank((unsigned char)line[i + 1]))) {
                return fail(e, "unbalanced quotes in request");
            }
            end = i++;
        } else {
            start = i;
            while (i < n && !is_blank((unsigned char)line[i])) {
                if (line[i] == '"' || line[i] == '\'') {
                    /* sdssplitargs joins foo"bar" into one word: that needs a copy */
                    return fail(e, "quotes inside a word are not supported");
                }
                i++;
            }
            end = i;
        }
        cmd->argv[argc] = line + start;
        cmd->argl[argc] = end - start;
        argc++;
    }
    cmd->argc = argc;
    return 0;
}

static long parse_inline(const char *buf, size_t len, size_t max_frame, sl__resp_command *cmd,
                         const perr *e) {
    size_t scan = len < max_frame ? len : max_frame;
    const char *nl = memchr(buf, '\n', scan);
    if (!nl) {
        if (len >= max_frame) {
            return fail(e, "command too large");
        }
        return 0;
    }
    size_t n = (size_t)(nl - buf);
    size_t words = n;
    if (words && buf[words - 1] == '\r') words--;
    long rc = split_inline(buf, words, cmd, e);
    if (rc < 0) return rc;
    return (long)(n + 1);
}

long sl__resp_parse(const char *buf, size_t len, size_t max_frame, sl__resp_command *cmd, char *err,
                    size_t errlen) {
    perr e = {err, errlen};
    cmd->argc = 0;
    if (len == 0) return 0;
    if (buf[0] == '*') return parse_multibulk(buf, len, max_frame, cmd, &e);
    return parse_inline(buf, len, max_frame, cmd, &e);
}
