/* resp_lease.h: SL.ACQUIRE, SL.RELEASE, SL.RENEW (resp_lease.c), the
 * handlers resp_commands.c's table registers. */
#ifndef SLUICE_SERVER_RESP_LEASE_H
#define SLUICE_SERVER_RESP_LEASE_H

#include "server/resp/resp.h"

/* Each replies into out, now or once the store has decided; returns 0
 * (the connection stays open). */
int sl__resp_cmd_acquire(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out);
int sl__resp_cmd_release(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out);
int sl__resp_cmd_renew(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out);

#endif
