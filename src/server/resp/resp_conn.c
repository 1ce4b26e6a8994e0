/* resp_conn.c: RESP2 as a protocol of the connection layer (proto.h): one
 * command per feed, parsed in place (resp_parser.c) and run
 * (resp_commands.c); the errors the connection layer asks for without a
 * command: protocol errors, the command and idle timeouts, the connection
 * limit. A partial command is kept by the connection (its held input):
 * RESP keeps no state of its own. */
#include <stdio.h>

#include "server/admin/admin.h"
#include "server/proto.h"
#include "server/request.h"
#include "server/resp/resp.h"

static unsigned resp_feed(void *st, const sl__request_ctx *rq, const char *data, size_t len,
                          sl__buf *out, size_t *used) {
    (void)st;
    *used = 0;
    sl__resp_command cmd;
    char err[SL__RESP_ERR_MAX];
    long n = sl__resp_parse(data, len, rq->limits->max_resp_frame, &cmd, err, sizeof err);
    if (n == 0) return SL__FEED_STOP; /* the rest of a command is on its way */
    if (n < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "ERR Protocol error: %s", err);
        sl__resp_error(out, msg);
        return SL__FEED_ERROR;
    }
    sl__resp_context ctx = {.policies = rq->policies,
                            .cell = rq->cell,
                            .now = rq->now,
                            .info = sl__resp_info, /* its sections need the admin handle */
                            .info_ctx = rq->admin,
                            .decider = rq->decider,
                            .slot = rq->slot};
    int quit = sl__resp_execute(&ctx, &cmd, out);
    *used = (size_t)n;
    return quit ? SL__FEED_ANSWERED | SL__FEED_CLOSE : SL__FEED_ANSWERED;
}

static bool resp_pending(const void *st, size_t held) {
    (void)st;
    return held > 0; /* a partial command */
}

static int64_t resp_request_timeout(const sl__limits_config *l) {
    return l->command_timeout;
}

static void resp_timeout(void *st, bool request_late, bool started, sl__buf *out) {
    (void)st;
    (void)started;
    if (request_late)
        sl__resp_error(out, "ERR command timeout: the command did not arrive within "
                            "limits.command_timeout, closing the connection");
    else
        sl__resp_error(out, "ERR idle timeout, closing the connection");
}

static void resp_refuse(sl__buf *out) {
    sl__resp_error(out, "ERR max number of clients reached");
}

const sl__proto_ops_table sl__resp_proto = {
    .id = SL__PROTO_RESP,
    .feed = resp_feed,
    .pending = resp_pending,
    .request_timeout = resp_request_timeout,
    .timeout = resp_timeout,
    .refuse = resp_refuse,
    .refuse_raw = "-ERR max number of clients reached\r\n",
};
