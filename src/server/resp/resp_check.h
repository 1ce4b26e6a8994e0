/* resp_check.h: SL.CHECK (resp_check.c), the handler resp_commands.c's
 * table registers. */
#ifndef SLUICE_SERVER_RESP_CHECK_H
#define SLUICE_SERVER_RESP_CHECK_H

#include "server/resp/resp.h"

/* SL.CHECK policy key [cost] [DELAY] [PRIORITY p] [RETRY n]: replies into out, now or once the
 * store has decided; returns 0 (the connection stays open). */
int sl__resp_cmd_check(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out);

#endif
