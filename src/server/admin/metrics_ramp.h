/* metrics_ramp.h: /metrics for ramp-up after recovery (metrics_ramp.c). */
#ifndef SLUICE_SERVER_ADMIN_METRICS_RAMP_H
#define SLUICE_SERVER_ADMIN_METRICS_RAMP_H

#include <stdint.h>

#include "util/buf.h"

struct sl__policy_set;
/* Appends sluice_ramp_factor{policy} (each ramped policy of set, at `now`)
 * and sluice_ramp_restarts_total{reason}; nothing when no policy ramps. */
void sl__metrics_ramp(const struct sl__policy_set *set, int64_t now, sl__buf *out);

#endif
