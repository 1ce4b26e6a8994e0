/* resp.h: the Redis protocol (RESP2) side of sluiced: a zero-copy,
 * bounded, incremental request parser, reply writers, and the commands
 * (CL.THROTTLE, SL.CHECK, PING, ECHO, QUIT, INFO, COMMAND). Pure: bytes and
 * a context in, reply bytes out; no sockets. */
#ifndef SLUICE_SERVER_RESP_H
#define SLUICE_SERVER_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define SL__RESP_MAX_ARGS 64

typedef struct sl__resp_command {
    size_t argc;
    const char *argv[SL__RESP_MAX_ARGS]; /* point into the parsed buffer; not NUL-terminated */
    size_t argl[SL__RESP_MAX_ARGS];
} sl__resp_command;

/* Parses one command at buf: a RESP2 array of bulk strings ("*2\r\n$4\r\nPING\r\n...")
 * or an inline command ("PING\r\n", as telnet and redis-cli --pipe may send).
 * Returns the bytes it spans (> 0) with *cmd filled, 0 if more bytes are
 * needed, or SL_EPARSE on a protocol error with the reason in err[0..errlen)
 * (NUL-terminated, truncated to fit; err may be NULL with errlen 0; the
 * caller replies "-ERR Protocol error: <err>" and closes). SL__RESP_ERR_MAX
 * bytes hold every reason. A command spanning more than max_frame bytes,
 * more than SL__RESP_MAX_ARGS arguments, or with malformed lengths is an
 * error as soon as that is known. Keeps no state between calls: any thread
 * may call it. "*0", "*-1" and blank inline lines parse as argc 0: execute
 * them to get nothing (no reply), as Redis does. Details: resp_parser.c,
 * docs/resp.md. */
#define SL__RESP_ERR_MAX 64
long sl__resp_parse(const char *buf, size_t len, size_t max_frame, sl__resp_command *cmd, char *err,
                    size_t errlen);

/* Reply writers (RESP2). */
void sl__resp_simple(sl__buf *out, const char *s);  /* +s */
void sl__resp_error(sl__buf *out, const char *msg); /* -msg (CR, LF in msg become spaces) */
void sl__resp_int(sl__buf *out, int64_t v);         /* :v */
void sl__resp_bulk(sl__buf *out, const void *p, size_t n);
void sl__resp_null(sl__buf *out);            /* $-1 */
void sl__resp_array(sl__buf *out, size_t n); /* *n */
/* An array of n integers (CL.THROTTLE, SL.CHECK) in one reservation. */
void sl__resp_ints(sl__buf *out, const int64_t *v, size_t n);

struct sl__policy_set;
struct sl__cell;
struct sl__policy;
struct sl__answer_slot;

typedef struct sl__resp_context {
    struct sl__policy_set *policies; /* for SL.CHECK */
    struct sl__cell *cell;           /* for CL.THROTTLE */
    int64_t now;                     /* this loop tick's clock (Unix ns) */
    /* Appends sluiced's own INFO sections (without RESP framing), each
     * "# Name\r\n" then "field:value\r\n" lines, sections separated by an
     * empty "\r\n" line. "# Server" (redis_version, ...) and "# Cell" are
     * written by sl__resp_execute itself before calling this; may be NULL. */
    void (*info)(void *ctx, sl__buf *out);
    void *info_ctx;
    /* SL.CHECK and CL.THROTTLE decide with it (policy/decide.h; NULL: the
       memory store's), and answer when it has decided (server/reply.h): at
       once when it decided inline, else in a place reserved in the
       command's answer slot (NULL: no connection, tests). */
    struct sl__decider *decider;
    struct sl__answer_slot *slot;
} sl__resp_context;

struct sl__policy;
struct sl_decision;
/* Writes SL.CHECK's reply for a decision (rc from the policy check): five
 * integers, six with `delay` (delay_ms last, docs/resp.md). */
void sl__resp_check_reply(sl__buf *out, const struct sl__policy *p, int rc,
                          const struct sl_decision *d, int64_t cost, bool delay);

/* Runs one command and appends its reply to out. Returns 1 if the
 * connection must close after the reply is written (QUIT), else 0. Unknown
 * commands and bad arguments get an error reply, never a crash. */
int sl__resp_execute(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out);

#endif
