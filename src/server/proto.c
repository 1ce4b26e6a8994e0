/* proto.c: the protocols sluiced speaks, one ops table each (proto.h), by
 * the listener a connection came in on. A new protocol is one table in its
 * own file and one line here. */
#include "server/proto.h"

static const sl__proto_ops_table *const protos[SL__PROTO_COUNT] = {
    [SL__PROTO_HTTP] = &sl__http_proto,
    [SL__PROTO_RESP] = &sl__resp_proto,
    [SL__PROTO_GRPC] = &sl__grpc_proto,
};

const sl__proto_ops_table *sl__proto_ops(sl__proto p) {
    return (unsigned)p < SL__PROTO_COUNT ? protos[p] : NULL;
}
