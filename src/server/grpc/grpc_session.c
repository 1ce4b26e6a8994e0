/* grpc_session.c: placeholder until the gRPC service is written: every
 * connection is closed at once. */
#include <stdlib.h>

#include "server/grpc/grpc.h"

struct sl_grpc_session {
    int unused;
};

sl_grpc_session *sl__grpc_session_new(struct sl_worker *w, sl_buf *out) {
    (void)w;
    (void)out;
    return calloc(1, sizeof(sl_grpc_session));
}

int sl__grpc_session_feed(sl_grpc_session *s, const char *data, size_t len) {
    (void)s;
    (void)data;
    (void)len;
    return -1;
}

bool sl__grpc_session_done(const sl_grpc_session *s) {
    (void)s;
    return true;
}

void sl__grpc_session_shutdown(sl_grpc_session *s) {
    (void)s;
}

void sl__grpc_session_free(sl_grpc_session *s) {
    free(s);
}
