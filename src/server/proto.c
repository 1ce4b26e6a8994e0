/* proto.c: the protocols sluiced speaks, one ops table each (proto.h), by
 * the listener a connection came in on. A new protocol is one table in its
 * own file and one line here. */
#include "server/proto.h"

static const sl_proto_ops *const protos[SL_PROTO_COUNT] = {
    [SL_PROTO_HTTP] = &sl__http_proto,
    [SL_PROTO_RESP] = &sl__resp_proto,
    [SL_PROTO_GRPC] = &sl__grpc_proto,
};

const sl_proto_ops *sl__proto_ops(sl_proto p) {
    return (unsigned)p < SL_PROTO_COUNT ? protos[p] : NULL;
}
