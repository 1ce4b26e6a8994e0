/* resp_del.h: DEL over RESP (resp_del.c), for CL.THROTTLE state. */
#ifndef SLUICE_SERVER_RESP_RESP_DEL_H
#define SLUICE_SERVER_RESP_RESP_DEL_H

#include "server/resp/resp.h"

/* DEL key [key ...]: resets each key's CL.THROTTLE state (redis-cell keeps
 * it in a Redis key, so DEL resets it) on the worker's store, through the
 * decision engine; answers Redis's integer, the number of keys that had
 * state. At most SL__CELL_DEL_MAX (16) keys: more is an error, nothing
 * deleted. Returns 0 (the connection stays). */
int sl__resp_cmd_del(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out);

#endif
